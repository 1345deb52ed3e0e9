"""dialeval judge and judge_agreement. Reply parsing, a tiny local LM judge with its cache, and, on the
real human data (ChatEval A/B votes, FED annotations), scripted judges whose answers the test decides,
with every reported figure recomputed here by hand from the imported human records."""
from __future__ import annotations

import json
from itertools import combinations

import pandas as pd
import pytest
from scipy import stats

from parlai_dialeval.cli import main
from parlai_dialeval.data.dataset import read_jsonl, write_jsonl
from parlai_dialeval.judge.items import parse_reply
from tiny_lm import build_gpt2

PAIR = {"pairwise": True, "allow_tie": True}
LIKERT = {"pairwise": False, "kind": "likert", "scale": [1, 5]}


@pytest.mark.parametrize("item,text,expected", [
    (PAIR, "A", ("A", None)), (PAIR, " b.", ("B", None)), (PAIR, "Response B is better", ("B", None)),
    (PAIR, "Tie", ("tie", None)), (PAIR, "I like A and B", (None, "both options named")),
    (PAIR, "Hard to say.", (None, "no option named")),
    ({"pairwise": True, "allow_tie": False}, "tie", (None, "tie where the protocol has none")),
    (LIKERT, "4", (4.0, None)), (LIKERT, "I'd say 7", (None, "outside the scale")),
    (LIKERT, "three", (None, "no number")), (LIKERT, "2.5", (None, "not a scale point")),
])
def test_replies_are_read_or_refused_with_a_reason(item, text, expected):
    assert parse_reply(item, text) == expected


def _sm_dialog_data(path, distinct=False):
    def turns(i):
        return [{"speaker": "human", "text": "Hi!"},
                {"speaker": f"bot{i % 2}", "text": f"Hello, I am number {i}." if distinct else "Hello, how are you?"}]
    records = [{"type": "conversation", "id": f"c{i}", "models": [f"bot{i % 2}"], "turns": turns(i)}
               for i in range(4)]
    records += [{"type": "rating", "conversation_id": f"c{i}", "worker_id": f"w{w}", "model": f"bot{i % 2}",
                 "criterion": "engaging", "scale": "likert", "scale_min": 1, "scale_max": 5, "value": 1 + (i + w) % 5}
                for i in range(5) for w in range(2)]  # c4 has ratings but no conversation
    write_jsonl(records, path)


@pytest.mark.slow
def test_a_tiny_lm_judge_answers_from_the_cache_on_a_rerun(tmp_path, capsys):
    lm = build_gpt2(tmp_path / "lm")
    _sm_dialog_data(tmp_path / "human.jsonl")
    args = ["judge", "--data", str(tmp_path / "human.jsonl"), "--protocol", "sm_dialog", "--judge", f"lm:{lm}",
            "--out", str(tmp_path / "judge.jsonl")]
    assert main(args) == 0
    summary = json.loads((tmp_path / "judge.summary.json").read_text())
    # the four conversations are the same text: one prompt asked, three repeats of it, none from a cache
    assert (summary["items"], summary["answered"], summary["prompts_asked"], summary["prompts_cached"],
            summary["prompts_repeated"]) == (4, 4, 1, 0, 3)
    assert summary["items_without_context"] == {"conversation not in the data": 1}
    judged = read_jsonl([tmp_path / "judge.jsonl"]).ratings
    assert set(judged["worker_id"]) == {"judge:lm:lm"} and judged["value"].between(1, 5).all()
    assert main(args) == 0
    again = json.loads((tmp_path / "judge.summary.json").read_text())
    assert (again["prompts_asked"], again["prompts_cached"], again["prompts_repeated"]) == (0, 4, 0)


@pytest.mark.slow
def test_an_endpoint_judge_counts_tokens_cost_and_bad_replies(tmp_path):
    from parlai_dialeval.testing.fake_openai import FakeOpenAI

    _sm_dialog_data(tmp_path / "human.jsonl", distinct=True)
    with FakeOpenAI({"judge-m": {"replies": ["4", "nine", "I give it a 7"], "latency": 0.05}}) as fake:
        args = ["judge", "--data", str(tmp_path / "human.jsonl"), "--protocol", "sm_dialog", "--judge", "openai:judge-m",
                "--base-url", fake.base_url, "--concurrency", "3", "--price-prompt", "2", "--price-completion", "10",
                "--out", str(tmp_path / "judge.jsonl")]
        assert main(args) == 0
        asked = len(fake.requests)
        first_run = json.loads((tmp_path / "judge.summary.json").read_text())
        assert main(args) == 0  # everything from the cache
        assert len(fake.requests) == asked == 4
    summary = json.loads((tmp_path / "judge.summary.json").read_text())
    first = fake.requests[0]["messages"][-1]["content"]
    assert "How much would you like to talk to your partner for a long conversation?" in first  # the human wording
    # replies cycle 4, nine, 7 over the four prompts (in whatever order the threads sent them)
    assert summary["bad_replies"] == {"no number": 1, "outside the scale": 1}
    assert (summary["answered"], summary["unanswered"]) == (2, 2)
    words = sum(len(m["content"].split()) for r in fake.requests for m in r["messages"])
    assert summary["prompt_tokens"] == words
    replies = ["4", "nine", "I give it a 7", "4"]
    assert summary["completion_tokens"] == sum(len(r.split()) for r in replies)
    assert summary["cost_usd"] == pytest.approx((words * 2 + summary["completion_tokens"] * 10) / 1e6)
    # the first run paid for every reply; the rerun, every reply from the cache, for none
    assert (first_run["asked_prompt_tokens"], first_run["cost_usd_this_run"]) == (words, summary["cost_usd"])
    assert (summary["asked_prompt_tokens"], summary["asked_completion_tokens"], summary["cost_usd_this_run"]) == (0, 0, 0)
    assert set(read_jsonl([tmp_path / "judge.jsonl"]).ratings["value"]) == {4.0}


@pytest.mark.slow
def test_a_local_chat_model_judge_leaves_unreadable_replies_unanswered(tmp_path):
    lm = build_gpt2(tmp_path / "chat")
    _sm_dialog_data(tmp_path / "human.jsonl", distinct=True)
    template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    assert main(["judge", "--data", str(tmp_path / "human.jsonl"), "--protocol", "sm_dialog", "--judge", f"hf:{lm}",
                 "--chat-template", template, "--max-reply-tokens", "4", "--out", str(tmp_path / "j.jsonl")]) == 0
    summary = json.loads((tmp_path / "j.summary.json").read_text())
    assert summary["items"] == 4 and summary["worker_id"] == "judge:hf:chat"
    assert summary["answered"] + sum(summary["bad_replies"].values()) == 4  # each item answered or counted


def test_a_local_judge_on_a_device_torch_cannot_use_is_refused_in_one_line(tmp_path, capsys):
    """--device for an lm: judge that this machine has not (a GPU index no machine has, a misspelt name): a
    one-line error naming the device, as the hf: judge gives, not a traceback from torch."""
    lm = build_gpt2(tmp_path / "lm")
    _sm_dialog_data(tmp_path / "human.jsonl", distinct=True)
    for device in ("cuda:99", "gpu"):
        assert main(["judge", "--data", str(tmp_path / "human.jsonl"), "--protocol", "sm_dialog", "--judge", f"lm:{lm}",
                     "--device", device, "--out", str(tmp_path / "j.jsonl")]) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert error[-1].startswith(f"dialeval: error: device '{device}' is not usable here: "), error
        assert not any("Traceback" in line for line in error)
    assert not (tmp_path / "j.jsonl").exists()


# ---- ChatEval A/B with a scripted judge -------------------------------------------------------------

FOLDER = "AMT_NCM_Test_NCM_Cakechat"


def scripted_reply(context: str, first: str, second: str) -> str:
    """The judge's answer to one prompt: the longer response; a position-follower on some prompts; an
    unreadable reply on others."""
    if len(context) % 10 == 0:
        return "A"
    if len(context) % 17 == 0:
        return "Hard to say."
    return "A" if len(first) > len(second) else "Response B" if len(first) < len(second) else "tie"


def _body(context, first, second):
    return f"Conversation:\n{context}\n\nResponse A:\n{first}\n\nResponse B:\n{second}\n\n"


def kappa(x, y, weights=None, categories=None):
    """Cohen's kappa by its definition (1 - observed / expected disagreement)."""
    categories = categories or sorted(set(x) | set(y))
    n = len(x)
    w = {(a, b): (0.0 if a == b else 1.0) if weights is None else (a - b) ** 2 for a in categories for b in categories}
    observed = sum(w[a, b] for a, b in zip(x, y)) / n
    px = {c: x.count(c) / n for c in categories}
    py = {c: y.count(c) / n for c in categories}
    expected = sum(w[a, b] * px[a] * py[b] for a in categories for b in categories)
    return 1 - observed / expected


@pytest.mark.slow
def test_chateval_ab_scripted_judge_agreement_equals_a_hand_computation(shared_data, tmp_path, capsys):
    from parlai_dialeval.importers import load

    folder = shared_data / "chateval" / "amt_ab_2018" / FOLDER
    human = load([folder], log=None).comparisons
    human = human[~human["automatic"].fillna(False).astype(bool)]
    rules, items = [], {}
    for row in human.itertuples():
        context, a, b = (str(v).strip() if isinstance(v, str) else "" for v in (row.context, row.response_a, row.response_b))
        if not a or not b:
            continue
        for first, second in ((a, b), (b, a)):
            rules.append({"match": _body(context, first, second), "reply": scripted_reply(context, first, second)})
        items.setdefault((row.item_id, frozenset((row.model_a, row.model_b))), []).append(row)
    (tmp_path / "judge.json").write_text(json.dumps({"rules": rules}))
    out = tmp_path / "ab.jsonl"
    assert main(["judge", "--data", str(folder), "--protocol", "ab", "--judge", f"script:{tmp_path / 'judge.json'}",
                 "--out", str(out), "--part-size", "50", "--shard-dir", str(tmp_path / "shards")]) == 0

    # By hand: the judge's winner per item (model name or tie), its answers, every human vote.
    judge_winner, answers, bad, flips = {}, [], 0, 0
    for key, rows in items.items():
        first_row = rows[0]
        context = first_row.context.strip()
        a, b = first_row.response_a.strip(), first_row.response_b.strip()
        replies = [scripted_reply(context, a, b), scripted_reply(context, b, a)]
        if "Hard to say." in replies:
            bad += 2
            continue
        letters = [{"A": "A", "Response B": "B", "tie": "tie"}[r] for r in replies]
        answers += letters
        as_model = [{"A": first_row.model_a, "B": first_row.model_b}.get(letters[0], "tie"),
                    {"A": first_row.model_b, "B": first_row.model_a}.get(letters[1], "tie")]
        flips += as_model[0] != as_model[1] and "tie" not in as_model
        judge_winner[key] = (as_model[0] if as_model[0] == as_model[1] else "tie", first_row.model_a)
    winner = lambda row: {"a": row.model_a, "b": row.model_b}.get(row.choice, "tie")  # noqa: E731
    jh, hh, jh_ab, hh_ab = [], [], [], []
    for key, (judged, oriented_a) in judge_winner.items():
        votes = [winner(row) for row in items[key]]
        jh += [(judged, v) for v in votes]
        hh += list(combinations(votes, 2))
        to_ab = lambda m: "tie" if m == "tie" else "a" if m == oriented_a else "b"  # noqa: E731
        jh_ab += [(to_ab(judged), to_ab(v)) for v in votes]
        hh_ab += [(to_ab(x), to_ab(y)) for x, y in combinations(votes, 2)]
    no_ties = lambda pairs: [(x, y) for x, y in pairs if "tie" not in (x, y)]  # noqa: E731
    share = lambda pairs: sum(x == y for x, y in pairs) / len(pairs)  # noqa: E731

    summary = json.loads((tmp_path / "ab.summary.json").read_text())
    assert summary["bad_replies"] == {"no option named": bad} and bad > 0
    assert summary["answered"] == len(judge_winner) and summary["order"]["flip"] == flips > 0

    report = tmp_path / "agreement"
    assert main(["judge_agreement", "--judge", str(out), "--human", str(folder), "--out", str(report)]) == 0
    got = pd.read_csv(report / "pairwise_agreement.csv").iloc[0]
    assert got["items"] == len(judge_winner) and got["human_votes"] == len(jh)
    assert got["judge_human"] == pytest.approx(share(jh))
    assert got["human_human"] == pytest.approx(share(hh))
    assert got["judge_human_no_ties"] == pytest.approx(share(no_ties(jh)))
    assert got["human_human_no_ties"] == pytest.approx(share(no_ties(hh)))
    assert got["judge_human_kappa"] == pytest.approx(kappa([x for x, _ in jh_ab], [y for _, y in jh_ab]))
    both = hh_ab + [(y, x) for x, y in hh_ab]
    assert got["human_human_kappa"] == pytest.approx(kappa([x for x, _ in both], [y for _, y in both]))
    bias = pd.read_csv(report / "position_bias.csv").iloc[0]
    assert (bias["answered_first"], bias["answered_second"], bias["answered_tie"]) == (
        answers.count("A"), answers.count("B"), answers.count("tie"))
    assert bias["binomial_p"] == pytest.approx(stats.binomtest(answers.count("A"), answers.count("A") + answers.count("B")).pvalue)
    ranks = pd.read_csv(report / "pairwise_rankings.csv").set_index("model")
    score = lambda won, model: 1.0 if won == model else 0.5 if won == "tie" else 0.0  # noqa: E731
    for model in ranks.index:
        mine = [score(judge_winner[k][0], model) for k in judge_winner if model in k[1] for _ in items[k]]
        theirs = [score(winner(row), model) for k in judge_winner if model in k[1] for row in items[k]]
        assert ranks.loc[model, "judge_win_rate"] == pytest.approx(sum(mine) / len(mine))
        assert ranks.loc[model, "human_win_rate"] == pytest.approx(sum(theirs) / len(theirs))
    assert (report / "report.html").read_text().count("<img") >= 1
    # canonical comparisons: the existing pairwise analysis reads the judge's file like human votes
    assert main(["analyze_pairwise", "--data", str(out), "--out", str(tmp_path / "pairwise")]) == 0
    win_rates = pd.read_csv(tmp_path / "pairwise" / "win_rates.csv")
    assert (win_rates["wins_a"] + win_rates["wins_b"] + win_rates["ties"]).sum() == len(judge_winner)


# ---- FED annotations with a scripted judge's ratings ------------------------------------------------

@pytest.mark.slow
def test_fed_ratings_agreement_equals_a_hand_computation(shared_data, tmp_path):
    from parlai_dialeval.importers import load

    fed = shared_data / "fed" / "fed_data.json"
    human = load([fed], log=None).ratings
    human = human[human["criterion"] == "interesting"]
    by_item = {cid: list(g["value"].astype(float)) for cid, g in human.groupby("conversation_id", sort=False)}
    models = dict(zip(human["conversation_id"], human["model"]))
    # The judge: the rounded mean of the humans on every third item, 0 on the others (numbers chosen here).
    judge = {cid: float(round(sum(v) / len(v))) if int(cid.split("-")[-1]) % 3 == 0 else 0.0
             for cid, v in by_item.items()}
    write_jsonl([{"type": "rating", "conversation_id": cid, "worker_id": "judge:script", "model": models[cid],
                  "criterion": "interesting", "scale": "likert", "scale_min": 0, "scale_max": 2, "value": value,
                  "meta": {"protocol": "fed"}} for cid, value in judge.items()], tmp_path / "judge.jsonl")
    assert main(["judge_agreement", "--judge", str(tmp_path / "judge.jsonl"), "--human", str(fed),
                 "--out", str(tmp_path / "out")]) == 0
    got = pd.read_csv(tmp_path / "out" / "rating_agreement.csv").iloc[0]

    ids = list(by_item)
    mean = [sum(by_item[c]) / len(by_item[c]) for c in ids]
    first = [by_item[c][0] for c in ids]
    others = [sum(by_item[c][1:]) / (len(by_item[c]) - 1) for c in ids]
    assert got["items"] == len(ids) == 375
    assert got["judge_human_spearman_item"] == pytest.approx(stats.spearmanr([judge[c] for c in ids], mean).statistic)
    assert got["human_human_spearman_item"] == pytest.approx(stats.spearmanr(first, others).statistic)
    assert got["judge_others_spearman_item"] == pytest.approx(stats.spearmanr([judge[c] for c in ids], others).statistic)
    systems = sorted(set(models.values()))
    judge_sys = [sum(judge[c] for c in ids if models[c] == m) / sum(models[c] == m for c in ids) for m in systems]
    human_sys = [sum(mean[i] for i, c in enumerate(ids) if models[c] == m) / sum(models[c] == m for c in ids)
                 for m in systems]
    assert got["systems"] == len(systems) == 3
    assert got["judge_human_spearman_system"] == pytest.approx(stats.spearmanr(judge_sys, human_sys).statistic)
    pairs = [(int(judge[c]), int(v)) for c in ids for v in by_item[c]]
    assert got["judge_human_kappa_quadratic"] == pytest.approx(
        kappa([x for x, _ in pairs], [y for _, y in pairs], weights="quadratic"))
    hh = [p for c in ids for p in combinations([int(v) for v in by_item[c]], 2)]
    hh += [(b, a) for a, b in hh]
    assert got["human_human_kappa_quadratic"] == pytest.approx(
        kappa([x for x, _ in hh], [y for _, y in hh], weights="quadratic"))
    ranks = pd.read_csv(tmp_path / "out" / "rating_rankings.csv").set_index("model")
    assert ranks["judge_mean"].to_dict() == pytest.approx(dict(zip(systems, judge_sys)))


# ---- Ji et al. live-chat ratings through dialeval judge ----------------------------------------------

@pytest.mark.slow
def test_ji2022_live_chat_judge_and_agreement_equal_a_hand_computation(shared_data, tmp_path):
    from parlai_dialeval.importers import load

    source = shared_data / "ji2022" / "dialogue_data" / "pass_free(run1).json"
    data = load([source], log=None)
    statement = "Statement: The conversation with the chatbot was interesting."

    def last_line(turns):
        turn = turns[-1]
        return f"{'User' if turn['speaker'] == 'human' else 'Bot'}: {turn['text'].strip()}"

    # The judge rates "interesting" by the length of the conversation's last line; other statements get
    # a reply without a number (to be counted, not guessed).
    value = {row.id: len(last_line(row.turns)) % 101 for row in data.conversations.itertuples()}
    rules = [{"match": f"{last_line(row.turns)}\n\n{statement}", "reply": f"I'd say {value[row.id]}."}
             for row in data.conversations.itertuples()]
    (tmp_path / "ji.json").write_text(json.dumps({"rules": rules, "default": "Not sure."}))
    out = tmp_path / "ji.jsonl"
    assert main(["judge", "--data", str(source), "--protocol", "live_chat_da", "--judge",
                 f"script:{tmp_path / 'ji.json'}", "--out", str(out)]) == 0
    summary = json.loads((tmp_path / "ji.summary.json").read_text())
    n = len(data.conversations)
    assert (summary["items"], summary["answered"]) == (7 * n, n)
    assert summary["bad_replies"] == {"no number": 6 * n}

    assert main(["judge_agreement", "--judge", str(out), "--human", str(source), "--out", str(tmp_path / "agree")]) == 0
    got = pd.read_csv(tmp_path / "agree" / "rating_agreement.csv").iloc[0]
    human = data.ratings[data.ratings["criterion"] == "interesting"]
    judge = [value[c] for c in human["conversation_id"]]
    assert got["criterion"] == "interesting" and got["items"] == len(human) == n
    assert got["judge_human_spearman_item"] == pytest.approx(stats.spearmanr(judge, human["value"]).statistic)
    systems = human.assign(judge=judge).groupby("model")[["judge", "value"]].mean()
    assert got["judge_human_spearman_system"] == pytest.approx(
        stats.spearmanr(systems["judge"], systems["value"]).statistic)
    # one worker per conversation in this study: no human-human figure can be computed, and none is made up
    assert got["items_2plus_ratings"] == 0 and pd.isna(got["human_human_spearman_item"])
    ranks = pd.read_csv(tmp_path / "agree" / "rating_rankings.csv").set_index("model")
    assert ranks["human_rank"].to_dict() == systems["value"].rank(ascending=False, method="min").astype(int).to_dict()


def test_turn_and_dialog_protocol_items_show_what_the_human_task_shows(tmp_path):
    from parlai_dialeval.judge.items import build_items, options, prompt

    turns = [{"speaker": "human", "text": "Hi!"}, {"speaker": "m1", "text": "Hello there."},
             {"speaker": "human", "text": "Any plans?"}, {"speaker": "m1", "text": "Hiking tomorrow."}]
    records = [{"type": "conversation", "id": "c1", "models": ["m1"], "turns": turns},
               {"type": "rating", "conversation_id": "c1", "worker_id": "w", "model": "m1", "criterion": "engaging",
                "scale": "binary", "scale_min": 0, "scale_max": 1, "value": 1, "turn_index": 1},
               {"type": "comparison", "item_id": "i1", "worker_id": "w", "model_a": "m1", "model_b": "m2",
                "choice": "a", "turn_index": 3, "question": "Which next response from your partner sounds more human?",
                "context": ["Hi!", "Hello there."], "response_a": "Hiking tomorrow.", "response_b": "I am a bot."},
               {"type": "comparison", "item_id": "d1", "worker_id": "w", "model_a": "m1", "model_b": "m2",
                "choice": "b", "conversation_a": "c1", "conversation_b": "missing",
                "question": "Which speaker sounds more human?"}]
    write_jsonl(records, tmp_path / "h.jsonl")
    data = read_jsonl([tmp_path / "h.jsonl"])

    (item,), bad, _ = build_items(data, "sm_turn")
    text = prompt(item)
    assert "Conversation:\nUser: Hi!\n\nResponse to judge:\nBot: Hello there." in text
    assert "Does this describe the response: Engaging?" in text and options(item) == ["0", "1"]

    (item,), bad, _ = build_items(data, "pw_turn")
    assert item["criterion"] == "humanlike" and not item["allow_tie"]
    assert prompt(item, first=1).startswith("Conversation:\nHi!\nHello there.\n\nResponse A:\nI am a bot.\n\n"
                                             "Response B:\nHiking tomorrow.\n\nQuestion: Which next response")

    items, bad, examples = build_items(data, "acute")
    # the PW-Turn comparison is reported too: its question is not one PW-Dialog asks
    assert items == [] and bad == {"conversation not in the data": 1, "question pw_dialog does not ask": 1}
    assert "d1: c1, missing" in [e["item"] for e in examples]


def test_local_judges_take_the_cpu_threads_other_processes_leave_free(monkeypatch):
    import torch

    from parlai_dialeval.metrics import lm_loading

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(lm_loading.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    for load, threads in ((0.3, 4), (1.7, 3), (2.2, 2), (3.9, 1), (14.0, 1)):
        monkeypatch.setattr(lm_loading.os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert lm_loading.free_cpu_threads("cpu") == threads, load
    assert lm_loading.free_cpu_threads("cuda") is None  # a GPU's work is not torch's CPU threads
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert lm_loading.free_cpu_threads("cpu") is None  # the person running it chose


def test_torch_threads_are_restored_after_the_block():
    import torch

    from parlai_dialeval.metrics.lm_loading import torch_threads

    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before


def test_a_local_chat_judge_batched_answers_as_one_at_a_time_whatever_its_generation_config(tmp_path):
    """Tiny random GPT-2 (replies of different lengths, often repeating tokens): batched equals one at a
    time, also when the model's generation config forbids repeats (then batching falls back to it)."""
    from parlai_dialeval.judge.judges import make_judge

    lm = build_gpt2(tmp_path / "chat")
    template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    judge = make_judge(f"hf:{lm}", max_tokens=10, chat_template=template)
    asked = [(text, ["A", "B"]) for text in ("Hi! How are you doing today?", "That makes sense!", "I like you!",
                                              "Let's change the topic.", "Stop repeating yourself!", "Wow")]
    plain = [r.text for r in (judge.ask(*q) for q in asked)]
    assert [r.text for r in judge.ask_batch(asked, batch_size=4)] == plain
    judge.agent.lm["model"].generation_config.no_repeat_ngram_size = 1
    no_repeats = [r.text for r in (judge.ask(*q) for q in asked)]
    assert no_repeats != plain  # the setting changes greedy replies here
    assert [r.text for r in judge.ask_batch(asked, batch_size=4)] == no_repeats


def test_a_likelihood_judge_sharing_prompt_starts_answers_as_the_original_one_prompt_loop(tmp_path):
    """Tiny random GPT-2: prompts on three conversations, each in both orders and for two model pairs (as
    ``dialeval judge`` asks them), some with three options. Batched ``lm:`` (prompts sharing their
    start in one trie) picks what the original loop picked: one prompt per pass, every position's logits
    (PrefixLM's defaults, the judge's code before batching); its tails agree to float rounding."""
    from parlai_dialeval.judge.judges import make_judge, share_prefixes
    from parlai_dialeval.metrics.fed_lm import PrefixLM

    judge = make_judge(f"lm:{build_gpt2(tmp_path / 'lm')}", batch_size=3)
    asked = []
    for context in ("User: hi there\nBot: hello", "User: do you like music?", "User: what is your name?"):
        for a, b in (("i am fine", "no thanks"), ("yes i do", "maybe later, friend")):
            for first, second in ((a, b), (b, a)):
                text = f"Conversation:\n{context}\n\nResponse A:\n{first}\n\nResponse B:\n{second}\nAnswer:"
                asked.append((text, ["A", "B", "tie"] if "music" in context else ["A", "B"]))
    groups = share_prefixes([judge.tokenizer(text, add_special_tokens=False)["input_ids"] for text, _ in asked])
    assert sorted(len(group) for group in groups) == [4, 4, 4]  # one per conversation
    original = PrefixLM(judge.model, batch_size=1)
    expected = []
    for text, opts in asked:
        texts, start = judge._texts(text, opts)
        losses = original.score([texts], [[start] * len(texts)])[0]
        expected.append(opts[min(range(len(opts)), key=lambda i: losses[i].tail)])
    assert [r.text for r in judge.ask_batch(asked)] == expected
    assert len(set(expected)) > 1  # the answers differ, so a mix-up of prompts would show
