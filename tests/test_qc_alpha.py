"""`dialeval qc_workers --alpha` (issue 19 item 5): honoured by the live-chat test, refused (not ignored)
by the per-turn tasks, whose worker checks are rules without a significance level."""
from __future__ import annotations

import pytest
from test_live_chat_studies import synthetic
from test_worker_checks import GOOD, _conv

from parlai_dialeval.analysis import live_chat
from parlai_dialeval.analysis.live_chat import LiveChatConfig
from parlai_dialeval.data import from_records
from parlai_dialeval.errors import DialevalError


def _finished(records):
    """The records as `dialeval export` writes a submitted HIT's (issue 40: only those are checked)."""
    return [dict(r, submission="submitted") if r["type"] == "conversation" else r for r in records]


def test_live_chat_qc_uses_the_given_alpha_and_equals_the_analysis():
    from parlai_dialeval.crowdsourcing.live_chat_da.quality import worker_checks

    records = _finished(synthetic(workers=6, hits=1, bad_workers=(0,), seed=3))
    default = worker_checks(records).set_index("worker_id")
    # the same p-values the analysis computes for its quality control
    analysed = live_chat.analyze(from_records(records)).workers.set_index("worker_id")
    assert default["p_value"].to_dict() == pytest.approx(analysed["p_value"].to_dict())
    assert default["passed"].to_dict() == analysed["passed"].to_dict()
    # a level below every passing worker's p fails them all: alpha reaches the decision
    strict = min(default.loc[default["passed"], "p_value"]) / 2
    assert not worker_checks(records, strict)["passed"].any()
    assert live_chat.analyze(from_records(records), LiveChatConfig(qc_alpha=strict)).summary["n_workers_passed"] == 0


@pytest.mark.parametrize("task", ["pw_turn", "sm_eval"])
def test_per_turn_tasks_refuse_alpha_instead_of_ignoring_it(task):
    import importlib

    spec = importlib.import_module(f"parlai_dialeval.crowdsourcing.{task}.task").TASK
    records = [_conv("c1", "good", GOOD), _conv("c2", "bad", ["no", "yes", "ok"])]
    table = spec.worker_checks(records).set_index("worker_id")
    assert bool(table.loc["good", "passed"]) and not bool(table.loc["bad", "passed"])
    with pytest.raises(DialevalError, match="--alpha 0.01: .*Appendix B rules"):
        spec.worker_checks(records, 0.01)
