"""dialeval publish: a study as a Hugging Face dataset folder, its privacy steps and the round trip back.

TRL's conversational preference format is checked by its documented schema
(https://huggingface.co/docs/trl/dataset_formats: "prompt", "chosen", "rejected", each a list of
{"role", "content"} messages): trl 1.16.0 cannot be installed here without changing huggingface_hub and fsspec.
"""
from __future__ import annotations

import csv
import hashlib
import json
import re

import pyarrow.parquet as pq
import pytest

from parlai_dialeval.data import from_records, write_jsonl
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.importers import load
from parlai_dialeval.scripts.publish import run

STATEMENT = "Participants agreed on MTurk to the release of their anonymised judgments."
FOLDERS = ("AMT_NCM_Test_NCM_Cakechat", "AMT_NCM_Test_Human1_Human2")


def _opt(data, out, **extra):
    opt = {"data": [str(p) for p in data], "out": str(out), "statement": STATEMENT, "license": "cc-by-4.0",
           "language": "en", "phone_region": "US", "alpha": 0.05, "pairs_ties": "drop", "pairs_votes": "every",
           "pairs_workers": "passing", "pairs_style": "raw", "data_format": None, "include_unverified": False}
    return {**opt, **extra}


def _votes(folder):
    """Independent of the importer: each prompt's (source, a, b, votes or None for identical responses)."""
    blocks = folder.joinpath("results.txt").read_text(encoding="utf-8").strip().split("\n\n")
    out = []
    for block in blocks:
        lines = block.splitlines()
        winner = lines[3].split(":", 1)[1].strip()
        out.append((lines[0].removeprefix("Source: "), lines[1].removeprefix("Candidate target: "),
                    lines[2].removeprefix("Candidate target: "), None if winner.startswith("It's a tie") else json.loads(winner)))
    return out


@pytest.fixture(scope="module")
def chateval(shared_data, tmp_path_factory):
    root = shared_data / "chateval" / "amt_ab_2018"
    out = tmp_path_factory.mktemp("publish") / "chateval"
    published = run(_opt([root / f for f in FOLDERS], out, key_file=str(out.parent / "keys" / "study.key")), log=None)
    return root, out, published


def test_chateval_folder_reads_with_datasets_and_card_states_the_numbers(chateval, tmp_path):
    import datasets
    import yaml

    root, out, _ = chateval
    items = [item for f in FOLDERS for item in _votes(root / f)]
    worker_votes = sum(len(v) for *_, v in items if v is not None)
    automatic = sum(v is None for *_, v in items)
    decided = sum(x in (0, 1) for *_, v in items if v is not None for x in v)
    loaded = datasets.load_dataset("parquet", data_files={"train": str(out / "data/comparisons/*.parquet")},
                                   cache_dir=str(tmp_path / "cache"))
    assert loaded["train"].num_rows == worker_votes + automatic
    pairs = datasets.load_dataset("parquet", data_files={"train": str(out / "data/preference_pairs/*.parquet")},
                                  cache_dir=str(tmp_path / "cache"))["train"]
    assert pairs.num_rows == decided  # ties dropped, automatic ties never pairs
    card = (out / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["license"] == "cc-by-4.0" and "text-generation" in header["task_categories"]
    assert {c["config_name"] for c in header["configs"]} == {"studies", "comparisons", "preference_pairs"}
    for config in header["configs"]:
        assert (out / config["data_files"][0]["path"]).is_file()
    workers = {a["WorkerId"] for f in FOLDERS for a in json.loads(
        (root / f / "amt_hit_responses.converted.json").read_text())["assignments"]}
    assert f"{worker_votes} pairwise comparisons made by workers" in card
    assert f"{automatic} automatic ties" in card
    assert f"Workers: {len(workers)}." in card  # every vote of these two folders has its worker in the JSON
    assert "Models evaluated: 4 (Cakechat, Human1, Human2, NCM)" in card
    assert STATEMENT in card and "Quality-control rule" in card and "0 of 0 checked workers" in card
    assert "Questions asked:\n- (the data record no question wording)" in card  # ChatEval stored none
    assert re.search(r"pair\(s\) settled at 0.05|no model is significantly better", card)
    assert not any(w in card for w in workers)


def test_chateval_preference_pairs_follow_trl_schema_and_the_votes(chateval):
    root, out, _ = chateval
    rows = pq.read_table(out / "data/preference_pairs/train-00000-of-00001.parquet").to_pylist()
    for row in rows:
        for key in ("prompt", "chosen", "rejected"):
            assert isinstance(row[key], list) and all(set(m) == {"role", "content"} for m in row[key])
        assert [m["role"] for m in row["chosen"]] == [m["role"] for m in row["rejected"]] == ["assistant"]
        assert row["prompt"][-1]["role"] == "user"
    items = {f"{f}/ex-{i:03d}": item for f in FOLDERS for i, item in enumerate(_votes(root / f))}
    first = next(r for r in rows if r["item_id"] == f"{FOLDERS[0]}/ex-000")
    source, a, b, votes = items[first["item_id"]]
    assert first["prompt"] == [{"role": "user", "content": source}]
    assert first["chosen"][0]["content"] in (a, b) and {first["chosen"][0]["content"], first["rejected"][0]["content"]} == {a, b}
    chosen_a = sum(r["chosen"][0]["content"] == items[r["item_id"]][1] for r in rows)
    assert chosen_a == sum(v.count(0) for *_, v in items.values() if v is not None)


def test_round_trip_gives_back_the_records_with_ids_pseudonymised(chateval, shared_data):
    root, out, _ = chateval
    original = load([root / f for f in FOLDERS], log=None)
    back = load([out], log=None)
    assert back.counts() == original.counts()
    mapping = {}
    keys = ["item_id", "choice", "model_a", "model_b", "context", "response_a", "response_b", "study"]
    for before, after in zip(original.comparisons.to_dict("records"), back.comparisons.to_dict("records")):
        assert {k: before[k] for k in keys} == {k: after[k] for k in keys}
        assert after["worker_id"].startswith("worker-") and after["worker_id"] != before["worker_id"]
        assert mapping.setdefault(before["worker_id"], after["worker_id"]) == after["worker_id"]
        if isinstance(before["meta"], dict):
            assert {k: v for k, v in before["meta"].items() if k != "hit_id"} == \
                {k: v for k, v in after["meta"].items() if k != "hit_id"}
    assert len(set(mapping.values())) == len(mapping)  # distinct workers stay distinct
    assert [{k: v for k, v in s.items()} for s in back.studies] == original.studies


def _seeded(tmp_path):
    records = [
        {"type": "conversation", "id": "c1", "models": ["bot"], "worker_id": "A1B2C3", "task": "live_chat_da",
         "meta": {"note": "ask Bob Stone", "WorkerId": "A1B2C3", "rounds": [1, 2]}, "duration": 61.5,
         "turns": [{"speaker": "human", "text": "Hi, I am Alice Walker, mail alice.w@example.org", "time": 3,
                    "meta": {"typed_ms": 812}},
                   {"speaker": "bot", "text": "Nice to meet you!"},
                   {"speaker": "human", "text": "call me on +44 20 7946 0958 or see https://alice.example.com/me"}],
         "feedback": "Bob Stone here, phone (212) 555-0199"},
        {"type": "rating", "conversation_id": "c1", "worker_id": "A1B2C3", "model": "bot", "criterion": "engaging",
         "scale": "likert", "scale_min": 1, "scale_max": 5, "value": 4},
    ]
    path = tmp_path / "raw" / "study.jsonl"
    path.parent.mkdir()
    write_jsonl(from_records(records).records(), path)
    names = tmp_path / "names.txt"
    names.write_text("Alice Walker\nBob Stone\n")
    return path, names


def test_scrub_report_counts_kinds_and_never_holds_the_values(tmp_path):
    path, names = _seeded(tmp_path)
    raw = hashlib.sha256(path.read_bytes()).hexdigest()
    key = tmp_path / "keys" / "k.key"
    published = run(_opt([path], tmp_path / "out", key_file=str(key), names=str(names)), log=None)
    assert dict(published.scrubbed) == {"name": 3, "email": 1, "phone": 2, "url": 1}
    report = list(csv.DictReader((tmp_path / "out" / "scrub_report.csv").open()))
    assert sorted((r["field"], r["kind"]) for r in report) == [
        ("feedback", "name"), ("feedback", "phone"), ("meta.note", "name"), ("turns[0].text", "email"),
        ("turns[0].text", "name"), ("turns[2].text", "phone"), ("turns[2].text", "url")]
    everything = b"".join(p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file())
    for secret in (b"Alice", b"alice.w@example.org", b"7946", b"555-0199", b"alice.example.com", b"Bob", b"A1B2C3",
                   b"Walker", b"Stone"):
        assert secret not in everything
    assert hashlib.sha256(path.read_bytes()).hexdigest() == raw  # the raw data never change
    back = load([tmp_path / "out"], log=None)
    # the round trip: every field as it was, but for the pseudonymised ids and the scrubbed texts
    before, after = load([path], log=None).conversations.iloc[0].to_dict(), back.conversations.iloc[0].to_dict()
    worker = after["worker_id"]
    assert worker.startswith("worker-") and after["meta"] == {"note": "ask {{NAME}}", "WorkerId": worker, "rounds": [1, 2]}
    assert [t["text"] for t in after["turns"]] == ["Hi, I am {{NAME}}, mail {{EMAIL}}", "Nice to meet you!",
                                                   "call me on {{PHONE}} or see {{URL}}"]
    assert after["feedback"] == "{{NAME}} here, phone {{PHONE}}"
    assert [{k: v for k, v in t.items() if k != "text"} for t in after["turns"]] == \
        [{k: v for k, v in t.items() if k != "text"} for t in before["turns"]]
    changed = {"worker_id", "meta", "turns", "feedback", "_file", "_line"}
    assert {k: v for k, v in after.items() if k not in changed} == {k: v for k, v in before.items() if k not in changed}
    rated = load([tmp_path / "out"], log=None).ratings
    assert rated.iloc[0]["worker_id"] == back.conversations.iloc[0]["worker_id"]
    # the same key maps the same worker the same way; another key does not
    again = run(_opt([path], tmp_path / "again", key_file=str(key), names=str(names), pairs_workers="all"), log=None)
    other = run(_opt([path], tmp_path / "other", key_file=str(tmp_path / "keys" / "other.key")), log=None)
    ids = [load([p], log=None).conversations.iloc[0]["worker_id"] for p in (published.folder, again.folder, other.folder)]
    assert ids[0] == ids[1] != ids[2]
    # two short messages fail Smith et al.'s checks: the default leaves the worker out of the training views
    assert published.left_out == {"rated_dialogues": {"ratings of workers failing quality control": 1}}
    assert "1 of 1 checked worker failed it; their\n2 records stay" in (published.folder / "README.md").read_text()
    rows = pq.read_table(again.folder / "data/rated_dialogues/train-00000-of-00001.parquet").to_pylist()
    assert [(r["score"], r["criterion"], r["scale_max"]) for r in rows] == [(4, "engaging", 5)]
    assert [m["role"] for m in rows[0]["messages"]] == ["user", "assistant", "user"]
    assert rows[0]["messages"][2]["content"] == "call me on {{PHONE}} or see {{URL}}"


def test_refuses_input_folder_existing_output_and_missing_statement(tmp_path):
    path, _ = _seeded(tmp_path)
    key = str(tmp_path / "keys" / "k.key")
    with pytest.raises(DialevalError, match="inside or around the input's folder"):
        run(_opt([path], path.parent / "published", key_file=key), log=None)
    # a refused run leaves nothing behind: no folder, and no pseudonym key made for a publication that never was
    assert not (path.parent / "published").exists() and not (tmp_path / "keys").exists()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("x")
    with pytest.raises(DialevalError, match="already exists and is not empty"):
        run(_opt([path], tmp_path / "taken", key_file=key), log=None)
    with pytest.raises(DialevalError, match="--statement is required"):
        run(_opt([path], tmp_path / "out", key_file=key, statement="  "), log=None)
    with pytest.raises(DialevalError, match="@nowhere.txt: no such file"):
        run(_opt([path], tmp_path / "out", key_file=key, statement="@nowhere.txt"), log=None)
    with pytest.raises(DialevalError, match="--names nowhere.txt: no such file"):
        run(_opt([path], tmp_path / "out", key_file=key, names="nowhere.txt"), log=None)
    statement = tmp_path / "consent.txt"
    statement.write_text("Consented via the information sheet v2.\nIds pseudonymised.")
    one_name = tmp_path / "one_name.txt"
    one_name.write_text("Bob Stone\n")
    card = (run(_opt([path], tmp_path / "out", key_file=key, statement=f"@{statement}", names=str(one_name)),
                log=None).folder / "README.md").read_text()
    assert "> Consented via the information sheet v2.\n> Ids pseudonymised." in card
    assert "Names: 1 listed name." in card and "1 worker_id)" in card  # counted in words, never "1 name(s)"


class _HubStandIn(__import__("http.server").server.BaseHTTPRequestHandler):
    """The four Hub endpoints huggingface_hub 1.13's create_repo and upload_folder call (hf_api.py: repos/create,
    validate-yaml, preupload, commit), answering as the Hub does: every file a regular (non-LFS) upload, so the
    commit carries them base64-encoded. Written here rather than mocking HfApi so the real client code runs."""

    seen: dict = {}

    def log_message(self, *args):
        pass

    def do_POST(self):
        import base64

        body = self.rfile.read(int(self.headers["Content-Length"]))
        seen, path = self.seen, self.path.split("?")[0]
        seen.setdefault("auth", set()).add(self.headers.get("authorization"))
        if path == "/api/repos/create":
            seen["create"] = json.loads(body)
            answer = {"url": f"http://{self.headers['Host']}/datasets/{seen['create']['organization']}/"
                             f"{seen['create']['name']}"}
        elif path == "/api/validate-yaml":
            seen["yaml"] = json.loads(body)
            answer = {}
        elif path.endswith("/preupload/main"):
            files = json.loads(body)["files"]
            answer = {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]}
        elif path.endswith("/commit/main"):
            lines = [json.loads(line) for line in body.splitlines() if line.strip()]
            seen["commit"] = {x["value"]["path"]: base64.b64decode(x["value"]["content"]) for x in lines
                              if x["key"] == "file"}
            seen["commit_path"] = path
            answer = {"commitUrl": f"http://{self.headers['Host']}/datasets/lab/study/commit/abc", "commitOid": "abc",
                      "pullRequestUrl": None}
        else:
            self.send_error(404)
            return
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_push_uploads_the_folder_through_huggingface_hub_to_a_local_stand_in(tmp_path, monkeypatch):
    import threading
    from http.server import ThreadingHTTPServer

    from parlai_dialeval.publish.hub import push

    path, _ = _seeded(tmp_path)
    folder = run(_opt([path], tmp_path / "out", key_file=str(tmp_path / "keys" / "k.key")), log=None).folder
    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)
    with pytest.raises(DialevalError, match="no Hugging Face token"):
        push(folder, "lab/study", endpoint="http://127.0.0.1:9")
    monkeypatch.setattr("huggingface_hub.get_token", lambda: "hf_test_token")
    _HubStandIn.seen = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HubStandIn)  # a free port, chosen at run time
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = push(folder, "lab/study", endpoint=f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()
    seen = _HubStandIn.seen
    assert url.endswith("/commit/abc") and seen["auth"] == {"Bearer hf_test_token"}
    assert seen["create"]["name"] == "study" and seen["create"]["organization"] == "lab"
    assert seen["create"]["type"] == "dataset" and seen["create"]["visibility"] == "private"
    assert seen["commit_path"] == "/api/datasets/lab/study/commit/main"
    local = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert seen["commit"] == local
    assert seen["yaml"]["content"] == local["README.md"].decode() and seen["yaml"]["repoType"] == "dataset"


def _votes_data():
    """Three workers on one A/B item (a, a, tie), one on a PW-Turn item (b) with a history, and an ACUTE vote
    between two whole conversations; expected pairs below are worked out by hand."""
    turns = lambda opener, reply: [{"speaker": "human", "text": "Hello"}, {"speaker": "bot", "text": opener},  # noqa: E731
                                   {"speaker": "human", "text": "Tell me more"}, {"speaker": "bot", "text": reply}]
    records = [
        {"type": "conversation", "id": "c-x", "models": ["x"], "worker_id": "w9", "turns": turns("Hi!", "Cats are great")},
        {"type": "conversation", "id": "c-y", "models": ["y"], "worker_id": "w8", "turns": turns("Hi!", "No.")},
        *({"type": "comparison", "item_id": "ab-1", "worker_id": w, "model_a": "x", "model_b": "y", "choice": c,
           "context": "How are you?", "response_a": "Fine, you?", "response_b": "Go away."}
          for w, c in (("w1", "a"), ("w2", "a"), ("w3", "tie"))),
        {"type": "comparison", "item_id": "pw-1", "worker_id": "w1", "model_a": "x", "model_b": "y", "choice": "b",
         "turn_index": 1, "context": [{"speaker": "human", "text": "Hi"}], "response_a": "Bye", "response_b": "Hello!"},
        {"type": "comparison", "item_id": "acute-1", "worker_id": "w2", "model_a": "x", "model_b": "y", "choice": "a",
         "conversation_a": "c-x", "conversation_b": "c-y", "question": "Who would you prefer to talk to?"},
        {"type": "comparison", "item_id": "ab-1", "worker_id": "w4", "model_a": "x", "model_b": "y", "choice": "b",
         "onboarding": True, "context": "How are you?", "response_a": "Fine, you?", "response_b": "Go away."},
    ]
    return from_records(records)


def test_preference_pairs_options_ties_majority_and_whole_conversations():
    from parlai_dialeval.publish.preferences import PairOptions, preference_pairs

    data = _votes_data()
    rows, left = preference_pairs(data.comparisons, data.conversations, PairOptions())
    assert [(r["item_id"], r["model_chosen"]) for r in rows] == [("ab-1", "x"), ("ab-1", "x"), ("pw-1", "y"),
                                                                 ("acute-1", "x")]
    assert left == {"onboarding items": 1, "ties (--pairs-ties keep keeps them)": 1}
    assert rows[0]["prompt"] == [{"role": "user", "content": "How are you?"}]
    assert rows[0]["chosen"] == [{"role": "assistant", "content": "Fine, you?"}]
    assert rows[2]["prompt"] == [{"role": "user", "content": "Hi"}] and rows[2]["rejected"][0]["content"] == "Bye"
    # ACUTE: the shared opening (Hello / Hi! / Tell me more) is the prompt, the differing rest chosen / rejected
    assert [m["content"] for m in rows[3]["prompt"]] == ["Hello", "Hi!", "Tell me more"]
    assert rows[3]["chosen"] == [{"role": "assistant", "content": "Cats are great"}]
    assert rows[3]["rejected"] == [{"role": "assistant", "content": "No."}]
    kept, _ = preference_pairs(data.comparisons, data.conversations, PairOptions(ties="keep"))
    assert [r["tie"] for r in kept] == [False, False, True, False, False]
    majority, _ = preference_pairs(data.comparisons, data.conversations, PairOptions(votes="majority"))
    assert [(r["item_id"], r["model_chosen"], r["votes"]) for r in majority] == [("ab-1", "x", 3), ("pw-1", "y", 1),
                                                                                ("acute-1", "x", 1)]
    flagged, left = preference_pairs(data.comparisons, data.conversations, PairOptions(), flagged_workers={"w1"})
    assert len(flagged) == 2 and left["votes of workers failing quality control"] == 2


def test_style_matched_pairs_keep_only_replies_of_the_same_style():
    """--pairs-style matched: a pair is kept when every style count of its two replies is within 0.1 as
    (a - b) / (a + b + 1); the figures below are worked out by hand."""
    from parlai_dialeval.publish.preferences import PairOptions, preference_pairs, style_matched

    data = _votes_data()
    rows, left = preference_pairs(data.comparisons, data.conversations, PairOptions(style="matched"))
    # ab-1: "Fine, you?" asks a question, "Go away." does not (1 against 0: 0.5), twice; acute-1: "Cats are
    # great" against "No." (3 words against 1: 2 / 5 = 0.4); pw-1: "Hello!" against "Bye" (1 word each) stays
    assert [r["item_id"] for r in rows] == ["pw-1"]
    assert left["pairs whose replies differ in style (--pairs-style matched)"] == 3

    def reply(text):
        return [{"role": "assistant", "content": text}]

    ten, eleven, thirteen = ("word " * 10).strip(), ("word " * 11).strip(), ("word " * 13).strip()
    listed = "- one\n- two\n- three four five six seven eight"  # 10 words, 3 list items
    got = style_matched([reply(ten), reply(ten), reply(listed), reply("Sure 😀 " + ten)],
                        [reply(eleven), reply(thirteen), reply(ten), reply("Sure " + ten)])
    # 1 / 22 = 0.045 kept; 3 / 24 = 0.125 left out; 3 list items against none; an emoji against none
    assert got.tolist() == [True, False, False, False]
