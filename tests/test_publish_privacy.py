"""Issue 52 item 1: what `dialeval publish` scrubs, against the evasions a participant uses.

Each test seeds personal data in the forms that evaded the first scrubber (fullwidth, Arabic-Indic digits,
spelled-out and HTML-referenced e-mail addresses, typed Prolific and MTurk ids, names with odd spaces) into
every free-text field (turns and their metadata, topics, personas, feedback, study descriptions and
criteria, judges' replies, justifications, contexts, responses), then reads every file of the published
folder, Parquet included, as bytes and decoded: no original may be there, in any form, and the report's
counts are the ones counted by hand below.
"""
from __future__ import annotations

import csv
import json
from collections import Counter

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_publish import _opt

from parlai_dialeval.data import from_records, schema, write_jsonl
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.importers import load
from parlai_dialeval.publish.fields import CRITERION_FORMS, FORMS, TURN_FORMS, id_field
from parlai_dialeval.publish.privacy import Scrubber
from parlai_dialeval.publish.textview import canonical, view
from parlai_dialeval.scripts.publish import run

PID = "5f3a9b2c1d0e4f5a6b7c8d91"  # a Prolific participant id: 24 hex digits
MTURK = "A2XYZ3ABC45DEF"
CONVERSATION = f"evasions_{PID}_0"
SECRETS = [PID, "5F3A9B2C1D0E4F5A6B7C8D91", "５f3a9b2c1d0e4f5a6b7c8d91", MTURK, "HIT4242XYZ", "ASSIGN7Q2X9",
           "alice.walker@lab.example.org", "bob.stone@example.com", "202-555-0143", "ｍａｒｙ＠ｅｘａｍｐｌｅ．ｎｅｔ",
           "mary@example.net", "kim&#64;example.com", "kim@example.com", "lee&#x40;example&#46;com", "lee@example.com",
           "mary at example dot org", "mary(at)example(dot)org", "mary [at] example [dot] org", "pat @ example . net",
           "+٤٤ ٧٧٠٠ ٩٠٠١٢٢", "＋４４ ７７００ ９００１２３", "+44 7700 900124", "+٤٤ ٧٧٠٠ ٩٠٠١٢٥", "900111", "900122",
           "900123", "900124", "900125", "Alice", "Walker", "Stone", "Bob"]


def _evasions() -> list[dict]:
    names = {"type": "study", "name": "evasions",
             "description": "Pilot run by Dr Alice Walker (alice.walker@lab.example.org, +44 7700 900111)",
             "criteria": [{"name": "engaging", "positive": True, "scale": "likert", "min": 1, "max": 5,
                           "question": "Was Alice Walker engaging?"}]}
    turns = [
        {"speaker": "human", "text": "mail ｍａｒｙ＠ｅｘａｍｐｌｅ．ｎｅｔ", "time": 1.0},
        {"speaker": "bot", "text": "Sure!", "meta": {"note": "echo of kim&#64;example.com"}},
        {"speaker": "human", "text": "or mary at example dot org, mary(at)example(dot)org, mary [at] example [dot] org, "
                                     "pat @ example . net"},
        {"speaker": "human", "text": "call +٤٤ ٧٧٠٠ ٩٠٠١٢٢ or ＋４４ ７７００ ９００１２３ or +44 7700 900124"},
        {"speaker": "human", "text": "my id is 5F3A9B2C1D0E4F5A6B7C8D91 and ５f3a9b2c1d0e4f5a6b7c8d91, hit HIT4242XYZ"},
        {"speaker": "human", "text": "I am Alice  Walker / Alice\u00a0Walker / Ali\u200bce Walker / ＡＬＩＣＥ\u3000ＷＡＬＫＥＲ"},
    ]
    return [
        names,
        {"type": "conversation", "study": "evasions", "id": CONVERSATION, "models": ["bot"], "worker_id": PID,
         "assignment_id": "ASSIGN7Q2X9", "hit_id": "HIT4242XYZ", "task": "live_chat_da", "turns": turns,
         "topic": "ask me: bob.stone@example.com or +1 202-555-0143", "personas": {"bot": ["I know alice walker well"]},
         "feedback": f"thanks, Bob\u2009Stone (worker {PID})", "meta": {"PROLIFIC_PID": PID, "rounds": 2}},
        {"type": "rating", "study": "evasions", "conversation_id": CONVERSATION, "worker_id": PID, "model": "bot",
         "criterion": "engaging", "scale": "likert", "scale_min": 1, "scale_max": 5, "value": 4},
        {"type": "rating", "study": "evasions", "conversation_id": CONVERSATION, "worker_id": "judge:gpt-4o-mini",
         "model": "bot", "criterion": "engaging", "scale": "likert", "scale_min": 1, "scale_max": 5, "value": 2,
         "meta": {"reply": "Score 2: the user shared Bob Stone's number +1 202-555-0143"}},
        {"type": "comparison", "study": "evasions", "item_id": "item-1", "worker_id": MTURK, "model_a": "x",
         "model_b": "y", "choice": "a", "question": "Which reply is better?",
         "justification": "A, because B asked for +٤٤ ٧٧٠٠ ٩٠٠١٢٥", "context": "write to lee&#x40;example&#46;com",
         "response_a": "Hi Alice Walker", "response_b": "My worker id is a2xyz3abc45def"},
    ]


# Counted by hand from _evasions: (configuration, field, kind) -> replacements.
EXPECTED = Counter({
    ("studies", "description", "name"): 1, ("studies", "description", "email"): 1,
    ("studies", "description", "phone"): 1, ("studies", "criteria[0].question", "name"): 1,
    ("conversations", "topic", "email"): 1, ("conversations", "topic", "phone"): 1,
    ("conversations", "turns[0].text", "email"): 1, ("conversations", "turns[1].meta.note", "email"): 1,
    ("conversations", "turns[2].text", "email"): 4, ("conversations", "turns[3].text", "phone"): 3,
    ("conversations", "turns[4].text", "id"): 3, ("conversations", "turns[5].text", "name"): 4,
    ("conversations", "feedback", "name"): 1, ("conversations", "feedback", "id"): 1,
    ("conversations", "personas.bot[0]", "name"): 1,
    ("ratings", "meta.reply", "name"): 1, ("ratings", "meta.reply", "phone"): 1,
    ("comparisons", "justification", "phone"): 1, ("comparisons", "context", "email"): 1,
    ("comparisons", "response_a", "name"): 1, ("comparisons", "response_b", "id"): 1,
})


def _publish(tmp_path, records, **extra):
    path = tmp_path / "raw" / "study.jsonl"
    path.parent.mkdir(exist_ok=True)
    write_jsonl(from_records(records).records(), path)
    names = tmp_path / "names.txt"
    names.write_text("Alice Walker\nBob Stone\n")
    out = tmp_path / "out"
    return run(_opt([path], out, key_file=str(tmp_path / "keys" / "k.key"), names=str(names), **extra), log=None), out


def _every_text(folder) -> dict[str, tuple[bytes, str]]:
    """Every file of the folder: its bytes, and its decoded text (a Parquet file's rows as JSON)."""
    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        decoded = (json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False, default=str)
                   if path.suffix == ".parquet" else raw.decode("utf-8"))
        out[str(path.relative_to(folder))] = (raw, decoded)
    return out


def test_every_evasion_is_gone_from_every_byte_and_the_report_counts_are_exact(tmp_path):
    published, out = _publish(tmp_path, _evasions())
    files = _every_text(out)
    assert {"README.md", "dialeval.json", "scrub_report.csv"} <= set(files)
    assert any(name.endswith(".parquet") for name in files)
    for name, (raw, decoded) in files.items():
        folded = canonical(decoded).casefold()
        for secret in SECRETS:
            assert secret.encode() not in raw, (name, secret)
            assert canonical(secret).casefold() not in folded, (name, secret)
    report = list(csv.DictReader((out / "scrub_report.csv").open(encoding="utf-8")))
    assert Counter((r["config"], r["field"], r["kind"]) for r in report if r["action"] == "replaced") == EXPECTED
    assert dict(published.scrubbed) == {"email": 9, "phone": 7, "name": 10, "id": 5}
    assert published.scrub["left"] == {} and not [r for r in report if r["action"] == "left"]
    card = files["README.md"][1]
    for kind, n in published.scrubbed.items():
        assert f"| {kind} | " in card and f" | {n} |\n" in card
    # references still join, through the same pseudonym the worker_id column holds
    back = load([out], log=None)
    conversation = back.conversations.iloc[0]
    worker = conversation["worker_id"]
    assert worker.startswith("worker-") and conversation["id"] == f"evasions_{worker}_0"
    assert conversation["meta"] == {"PROLIFIC_PID": worker, "rounds": 2}
    assert conversation["hit_id"].startswith("hit-") and conversation["assignment_id"].startswith("assignment-")
    assert set(back.ratings["conversation_id"]) == {conversation["id"]}
    assert conversation["turns"][4]["text"] == "my id is {{ID}} and {{ID}}, hit {{ID}}"
    assert conversation["turns"][5]["text"] == "I am {{NAME}} / {{NAME}} / {{NAME}} / {{NAME}}"
    assert back.studies[0]["criteria"][0]["name"] == "engaging"  # a criterion's name is kept: ratings use it


def test_strict_refuses_a_high_risk_pattern_left_and_writes_nothing(tmp_path):
    records = [{"type": "conversation", "id": "c1", "models": ["bot"], "worker_id": "w1",
                "turns": [{"speaker": "human", "text": "j o h n @ e x a m p l e . c o m"},
                          {"speaker": "human", "text": "ring 4 4 7 7 0 0 9 0 0 1 2 3, I work at amazon.com"}]}]
    with pytest.raises(DialevalError, match=r"--strict: 3 high-risk pattern\(s\) left .* conversations row 0 "
                                            r"turns\[0\].text \(at sign\).*Nothing was written"):
        _publish(tmp_path, records, strict=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keys", "names.txt", "raw"]  # no folder, no staging
    published, out = _publish(tmp_path, records)
    assert published.scrub["left"] == {"at sign": 1, "digit run": 1, "spelled address": 1}
    report = list(csv.DictReader((out / "scrub_report.csv").open(encoding="utf-8")))
    assert sorted((r["field"], r["kind"], r["action"]) for r in report) == [
        ("turns[0].text", "at sign", "left"), ("turns[1].text", "digit run", "left"),
        ("turns[1].text", "spelled address", "left")]
    assert "1 at sign, 1 digit run, 1 spelled address" in published.summary()


def test_every_field_of_the_data_model_has_one_published_form():
    for record_type in schema.RECORD_TYPES:
        assert set(FORMS[record_type]) == {f.name for f in schema.fields_of(record_type)}, record_type
    assert set(TURN_FORMS) == {f.name for f in schema.TURN_FIELDS}
    assert set(CRITERION_FORMS) == {"name", "positive", "scale", "min", "max", "question", "label"}
    assert [id_field(k) for k in ("WorkerId", "PROLIFIC_PID", "mephisto_worker_id", "HITId", "session_id",
                                  "worker_checks", "assignment", "topic")] == [
        "worker_id", "worker_id", "worker_id", "hit_id", "assignment_id", None, "assignment_id", None]


def test_a_field_without_a_published_form_stops_the_publication(tmp_path, monkeypatch):
    monkeypatch.setitem(FORMS, "comparison", {k: v for k, v in FORMS["comparison"].items() if k != "justification"})
    with pytest.raises(DialevalError, match="comparison field.*justification have no published form"):
        _publish(tmp_path, _evasions())
    assert not (tmp_path / "out").exists()


def test_ids_that_are_words_are_not_searched_in_text():
    from parlai_dialeval.publish.detectors import KnownIds

    known = KnownIds({"automatic": "worker_id", "w1": "worker_id", "x7y8z9": "worker_id"})
    scrubber = Scrubber(ids=known)
    assert (len(known.owner), known.too_short) == (1, 2)
    assert scrubber.scrub("an automatic reply from w1 to X7Y8Z9").text == "an automatic reply from w1 to {{ID}}"


_OBFUSCATIONS = [lambda u, d: f"{u}@{d}.com", lambda u, d: f"{u} at {d} dot com", lambda u, d: f"{u}(at){d}(dot)com",
                 lambda u, d: f"{u} [at] {d} [dot] org", lambda u, d: f"{u} @ {d} . net", lambda u, d: f"{u}&#64;{d}.com",
                 lambda u, d: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in f"{u}@{d}.com"),
                 lambda u, d: f"{u}\u200b@\u200b{d}.com"]
_NOISE = st.lists(st.sampled_from(list("ab .,!?'-\u00a0\u200b\u3000é\u0301\nｘ٣") + ["&amp;"]), max_size=20).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.from_regex(r"[a-z]{3,8}", fullmatch=True), st.from_regex(r"[a-z]{3,8}", fullmatch=True),
       st.sampled_from(range(len(_OBFUSCATIONS))), _NOISE, _NOISE)
def test_an_obfuscated_address_in_any_surroundings_never_survives(user, domain, form, before, after):
    address = _OBFUSCATIONS[form](user, domain)
    scrubbed = Scrubber().scrub(f"{before} {address} {after}")
    assert "email" in scrubbed.kinds
    assert f"{user}@{domain}" not in canonical(scrubbed.text).replace(" ", "")
    seen = view(f"{before} {address} {after}")
    assert all(s < e for s, e in zip(seen.starts or (), seen.ends or ()))  # every view character maps to a span


@pytest.mark.slow
def test_real_dialogue_keeps_its_words_and_loses_what_identifies(shared_data):
    """Ji et al.'s released MTurk batches (82,630 turns, feedback and topics), ChatEval's A/B texts and FED's
    turns: the scrubber replaces only what was read and judged personal by hand (in Ji et al.'s data one
    worker's e-mail address in the feedback on each of their 6 conversations, one address with its @ left out,
    and one MTurk worker id typed as a message), and leaves three runs of digits (a count to nine, a row of
    fives, a legal citation) for the reviewer; nothing in ChatEval and FED is replaced."""
    from parlai_dialeval.publish.detectors import KnownIds
    from parlai_dialeval.publish.fields import study_ids

    ji = load([shared_data / "ji2022/raw_mturk_csv/FreeTopicRound1", shared_data / "ji2022/raw_mturk_csv/FreeTopicRound2"],
              log=None)
    scrubber = Scrubber(ids=KnownIds(study_ids(ji.studies, {"conversation": ji.conversations, "rating": ji.ratings})))
    conversations = ji.conversations
    found, left = Counter(), Counter()
    for turns, feedback, topic in zip(conversations["turns"], conversations["feedback"], conversations["topic"]):
        for text in [t["text"] for t in turns] + [x for x in (feedback, topic) if isinstance(x, str)]:
            scrubbed = scrubber.scrub(text)
            found.update(scrubbed.kinds)
            left.update(scrubbed.left)
            if scrubbed.kinds:
                assert scrubbed.text in ("{{ID}}", "{{EMAIL}}") or "My email is {{EMAIL}}." in scrubbed.text
    assert (found, left) == (Counter({"email": 7, "id": 1}), Counter({"digit run": 3}))
    fed = json.loads((shared_data / "fed/fed_data.json").read_text(encoding="utf-8"))
    texts = [line for r in fed for line in r["context"].splitlines() + [r.get("response") or ""] if line.strip()]
    chateval = load(sorted((shared_data / "chateval/amt_ab_2018").glob("AMT_*")), log=None).comparisons
    texts += [t for column in ("context", "response_a", "response_b") for t in chateval[column] if isinstance(t, str)]
    assert len(set(texts)) > 3000
    results = [Scrubber().scrub(t) for t in set(texts)]
    assert sum(len(r.kinds) for r in results) == 0
    assert Counter(k for r in results for k in r.left) == Counter({"digit run": 1})  # FED's "1 2 3 4 5 6 7 8 9 ten."


# Names: speakers, models, persona keys, meta keys and record ids are published as names (fields.py REFERENCE).
def _rows(out, config):
    return pq.read_table(next((out / "data" / config).glob("*.parquet"))).to_pylist()


def _nothing_of(out, secrets):
    for name, (raw, decoded) in _every_text(out).items():
        folded = canonical(decoded).casefold()
        for secret in secrets:
            assert secret.encode() not in raw and canonical(secret).casefold() not in folded, (name, secret)


def test_a_speaker_model_or_persona_that_is_a_worker_id_or_a_listed_name_becomes_one_pseudonym(tmp_path):
    records = [
        {"type": "study", "name": "s1"},
        {"type": "conversation", "study": "s1", "id": "c1", "models": ["m"], "worker_id": "WKR12345",
         "turns": [{"speaker": "WKR12345", "text": "hi"}, {"speaker": "m", "text": "hello"}]},
        {"type": "conversation", "study": "s1", "id": "c2", "models": ["m", "Alice Walker"], "worker_id": "W2XY9",
         "turns": [{"speaker": "Alice Walker", "text": "I'm Alice Walker"}, {"speaker": "m", "text": "hi"}],
         "personas": {"Alice Walker": ["I live in Paris"], "wkr12345": ["I am the worker, in lower case"]}},
        {"type": "rating", "study": "s1", "conversation_id": "c2", "worker_id": "W2XY9", "model": "Alice Walker",
         "criterion": "engaging", "scale": "likert", "scale_min": 1, "scale_max": 5, "value": 4},
        *({"type": "comparison", "study": "s1", "item_id": f"i{n}", "worker_id": "W2XY9", "model_a": "WKR12345",
           "model_b": "m", "choice": "a", "context": [{"speaker": "WKR12345", "text": "hi"}],
           "response_a": "yes", "response_b": "no"} for n in range(3)),
    ]
    _, out = _publish(tmp_path, records)
    _nothing_of(out, ["WKR12345", "Alice Walker", "AliceWalker"])  # README's model list and headline included
    c1, c2 = _rows(out, "conversations")
    worker, alice = c1["worker_id"], c2["models"][1]
    assert worker.startswith("worker-") and alice.startswith("name-")
    # the same value, the same replacement in every field: the speaker IS the worker's pseudonym
    assert [t["speaker"] for t in c1["turns"]] == [worker, "m"] and c1["models"] == ["m"]
    assert [t["speaker"] for t in c2["turns"]] == [alice, "m"] and c2["turns"][0]["text"] == "I'm {{NAME}}"
    assert json.loads(c2["personas"]) == {alice: ["I live in Paris"], worker: ["I am the worker, in lower case"]}
    assert _rows(out, "ratings")[0]["model"] == alice
    comparisons = _rows(out, "comparisons")
    assert {(r["model_a"], r["model_b"]) for r in comparisons} == {(worker, "m")}
    assert json.loads(comparisons[0]["context"]) == [{"speaker": worker, "text": "hi"}]
    card = (out / "README.md").read_text(encoding="utf-8")
    assert f"Models evaluated: 3 (m, {alice}, {worker})" in card and f"{worker} over m" in card
    report = list(csv.DictReader((out / "scrub_report.csv").open(encoding="utf-8")))
    assert {(r["config"], r["field"], r["kind"]) for r in report} >= {
        ("conversations", "models[1]", "name"), ("conversations", "turns[0].speaker", "name"),
        ("conversations", "personas (key)", "name"), ("ratings", "model", "name")}


def test_a_parlai_speaker_that_is_an_mturk_worker_id_is_not_published(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "pc.jsonl").write_text('{"dialog": [[{"id": "A3MTURKWORKER7", "text": "hello bot"}, '
                                  '{"id": "blender_90M", "text": "hi there"}]]}\n')
    run(_opt([raw / "pc.jsonl"], tmp_path / "out", key_file=str(tmp_path / "keys" / "k.key")), log=None)
    out = tmp_path / "out"
    _nothing_of(out, ["A3MTURKWORKER7"])
    (conversation,) = _rows(out, "conversations")
    pseudonym = conversation["turns"][0]["speaker"]
    assert pseudonym.startswith("id-") and conversation["models"] == [pseudonym, "blender_90M"]
    assert conversation["turns"][1]["speaker"] == "blender_90M"
    assert f"Models evaluated: 2 (blender_90M, {pseudonym})" in (out / "README.md").read_text(encoding="utf-8")


def test_meta_keys_and_record_ids_are_scrubbed_and_still_join(tmp_path):
    records = [
        {"type": "conversation", "id": "conv-carol@example.org", "models": ["bot"], "worker_id": "W55555",
         "turns": [{"speaker": "human", "text": "hi", "meta": {"+1 202-555-0143": "x"}}]},
        {"type": "rating", "conversation_id": "conv-carol@example.org", "worker_id": "W55555", "model": "bot",
         "criterion": "engaging", "scale": "likert", "scale_min": 1, "scale_max": 5, "value": 4,
         "meta": {"bob@example.com": "x", "note for W55555": "y"}},
        {"type": "comparison", "item_id": "item-bob@example.com", "worker_id": "W55555", "model_a": "x",
         "model_b": "y", "choice": "a", "meta": {"Alice Walker": 1}},
    ]
    _, out = _publish(tmp_path, records)
    _nothing_of(out, ["bob@example.com", "carol@example.org", "202-555-0143", "W55555", "Alice Walker"])
    (conversation,), (rating,), (comparison,) = (_rows(out, c) for c in ("conversations", "ratings", "comparisons"))
    assert conversation["id"] == rating["conversation_id"] and conversation["id"].startswith("email-")
    (key,) = json.loads(conversation["turns"][0]["meta"])
    assert key.startswith("phone-")
    meta = json.loads(rating["meta"])
    assert list(meta.values()) == ["x", "y"] and next(iter(meta)).startswith("email-")
    assert list(meta)[1] == f"note for {rating['worker_id']}"  # the worker's own pseudonym
    assert comparison["item_id"].startswith("email-") and next(iter(json.loads(comparison["meta"]))).startswith("name-")
    report = list(csv.DictReader((out / "scrub_report.csv").open(encoding="utf-8")))
    assert {(r["config"], r["field"], r["kind"]) for r in report} == {
        ("conversations", "id", "email"), ("conversations", "turns[0].meta (key)", "phone"),
        ("ratings", "conversation_id", "email"), ("ratings", "meta (key)", "email"),
        ("comparisons", "item_id", "email"), ("comparisons", "meta (key)", "name")}


MODEL_NAMES = ["blender_90M", "blender_2.7B", "gpt-4o", "gpt-4o-2024-08-06", "gpt-4o-mini-2024-07-18",
               "claude-3-5-sonnet-20241022", "claude-sonnet-4-20250514", "o1-preview-2024-09-12", "gpt-4-0613",
               "gpt-3.5-turbo-0125", "meta-llama/Llama-3.1-8B-Instruct", "Qwen2.5-72B-Instruct", "gemini-1.5-pro-002",
               "Mistral-7B-Instruct-v0.2", "seq2seq_2019", "kvmemnn", "DialoGPT-medium", "human", "bot",
               "hf.co/org/model-123", "ft:gpt-4o-mini-2024-07-18:org::9AbCdEfG", "llama3.1:405b"]


@pytest.mark.parametrize("region", ["US", "GB", "DE", "FR", "NL", "JP"])
def test_real_model_names_are_published_as_they_are(tmp_path, region):
    """The phone detector finds a model's date (claude-3-5-sonnet-20241022) in some regions, and a URL
    detector hf.co/org/model: in names a number joined to a word is no phone number, and no URL is searched."""
    pairs = list(zip(MODEL_NAMES, MODEL_NAMES[1:] + MODEL_NAMES[:1]))
    records = [{"type": "study", "name": "models", "qc_models": ["gpt-4-0613"]},
               {"type": "conversation", "study": "models", "id": "c1", "models": MODEL_NAMES, "worker_id": "W12345",
                "turns": [{"speaker": m, "text": "hi"} for m in MODEL_NAMES], "personas": {m: ["x"] for m in MODEL_NAMES}},
               *({"type": "comparison", "study": "models", "item_id": f"{a}-vs-{b}", "worker_id": "W12345",
                  "model_a": a, "model_b": b, "choice": "a"} for a, b in pairs)]
    published, out = _publish(tmp_path, records, phone_region=region)
    (conversation,) = _rows(out, "conversations")
    assert conversation["models"] == MODEL_NAMES and [t["speaker"] for t in conversation["turns"]] == MODEL_NAMES
    assert sorted(json.loads(conversation["personas"])) == sorted(MODEL_NAMES)
    assert [(r["model_a"], r["model_b"], r["item_id"]) for r in _rows(out, "comparisons")] == [
        (a, b, f"{a}-vs-{b}") for a, b in pairs]
    assert _rows(out, "studies")[0]["qc_models"] == ["gpt-4-0613"]
    card = (out / "README.md").read_text(encoding="utf-8")
    evaluated = sorted(set(MODEL_NAMES) - {"gpt-4-0613"})
    assert f"Models evaluated: {len(evaluated)} ({', '.join(evaluated)}); quality-control bots: gpt-4-0613." in card
    assert published.pseudonymised == {"worker_id": 1} and not published.scrubbed and not list(csv.DictReader((out / "scrub_report.csv").open(encoding="utf-8")))
