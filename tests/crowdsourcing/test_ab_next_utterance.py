"""A/B next-utterance world logic (Lee et al. 2020, 2.1 and Appendix A) and canonical export."""
from __future__ import annotations

import random

from parlai.agents.repeat_query.repeat_query import RepeatQueryAgent

from parlai_dialeval.crowdsourcing.ab_next_utterance import export, protocol
from parlai_dialeval.data import from_records

CONTEXTS = [[f"question {i}?"] for i in range(25)]


def items():
    x = [f"answer {i} from x" for i in range(25)]
    y = [f"answer {i} from y" for i in range(25)]
    y[3], y[7] = x[3], "  ANSWER 7 from   x "  # identical after whitespace/case normalisation
    return protocol.items_from_responses(CONTEXTS, {"x": x, "y": y}, ("x", "y"))


def test_identical_responses_are_automatic_ties_and_never_shown():
    hits, ties = protocol.make_hits(items(), random.Random(0))
    assert sorted(t.item_id for t in ties) == ["item_3", "item_7"]
    shown = [p["item_id"] for hit in hits for p in hit]
    assert len(shown) == 23 and "item_3" not in shown and "item_7" not in shown
    assert [len(h) for h in hits] == [10, 10, 3]
    assert "model_a" not in protocol.public_view(hits[0])[0]


def test_a_b_order_is_randomised():
    hits, _ = protocol.make_hits(items(), random.Random(0))
    x_first = sum(p["model_a"] == "x" for hit in hits for p in hit)
    assert 4 < x_first < 19  # binomial(23, 0.5): outside this range has p < 0.01
    for p in (p for hit in hits for p in hit):
        assert p["response_a"].endswith(f"from {p['model_a']}")


def test_generate_responses_with_a_parlai_agent():
    # repeat_query answers with the last line of what it observed: the context's last turn
    assert protocol.generate_responses([["a", "b"], ["c"]], RepeatQueryAgent({})) == ["b", "c"]


def test_export_worker_and_automatic_ties():
    hits, ties = protocol.make_hits(items(), random.Random(0))
    answers = {p["item_id"]: {"choice": ("a", "b", "tie")[i % 3], "duration": 3.5} for i, p in enumerate(hits[0])}
    records = ([export.study_record("s")] + export.automatic_tie_records(ties, study="s")
               + export.unit_records(hits[0], answers, study="s", worker_id="w1", assignment_id="as"))
    data = from_records(records)
    comps = data.comparisons
    auto = comps[comps["automatic"] == True]  # noqa: E712  (column holds True or null)
    assert len(auto) == 2 and set(auto["choice"]) == {"tie"} and set(auto["worker_id"]) == {"automatic"}
    worker = comps[comps["worker_id"] == "w1"]
    assert list(worker["choice"]) == [("a", "b", "tie")[i % 3] for i in range(10)]
    assert worker["automatic"].isna().all()


def test_contexts_from_a_parlai_teacher(tmp_path):
    # ParlAI's fromfile teacher over a 3-episode file: first contexts, multi-turn text split on newlines
    path = tmp_path / "prompts.txt"
    path.write_text("text:Hello\\nHow are you?\tlabels:Fine\tepisode_done:True\n"
                    "text:Is the sky blue?\tlabels:Yes\tepisode_done:True\n"
                    "text:Bye\tlabels:Bye\tepisode_done:True\n")
    contexts = protocol.contexts_from_teacher("fromfile:parlaiformat", fromfile_datapath=str(path))
    assert contexts == [["Hello", "How are you?"], ["Is the sky blue?"], ["Bye"]]
    assert protocol.contexts_from_teacher("fromfile:parlaiformat", 2, fromfile_datapath=str(path)) == contexts[:2]


def test_task_export_reads_pairs_server_side_and_from_runs_before_dialeval_static():
    from parlai_dialeval.crowdsourcing.ab_next_utterance.task import export as task_export
    from parlai_dialeval.crowdsourcing.ab_next_utterance.task import tie_dict
    from parlai_dialeval.crowdsourcing.platform.export import UnitData

    hits, ties = protocol.make_hits(items(), random.Random(0))
    answers = {p["item_id"]: {"choice": "a"} for p in hits[0]}
    server = {"pairs": hits[0], "automatic_ties": [tie_dict(t) for t in ties]}
    public = {"shown": protocol.public_view(hits[0]), "question": protocol.QUESTION}

    def unit(inputs, server_data, worker):
        return UnitData(worker_id=worker, mephisto_worker_id="1", unit_id="1", assignment_id="1", task_run_id="1",
                        agent_id=worker, agent_status="completed", state={"inputs": inputs, "outputs": {
                            "answers": answers}}, task_start=None, task_end=None, server=server_data)

    # now: the page's inputs hold no model; before dialeval_static the pairs travelled in the inputs
    report = task_export([unit(public, server, "now"), unit({**public, **server}, {}, "before")], "s")
    comps = from_records(report.records).comparisons
    for worker in ("now", "before"):
        mine = comps[comps["worker_id"] == worker].set_index("item_id")
        assert [mine.loc[p["item_id"], "model_a"] for p in hits[0]] == [p["model_a"] for p in hits[0]]
    assert comps["automatic"].eq(True).sum() == 2
