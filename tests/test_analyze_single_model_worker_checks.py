"""`dialeval analyze_single_model --worker-checks off|report|apply` (Smith et al. 2022, Appendix B): a
worker who types in capitals is flagged; `apply` drops their records, `report` only lists them. Expected
rates are counted by hand from the ticks below."""
from __future__ import annotations

import pandas as pd
import pytest

from parlai_dialeval.data import from_records
from parlai_dialeval.scripts.analyze_single_model import AnalyzeSingleModel, SingleModelConfig, analyze
from parlai_dialeval.scripts.worker_check_option import run_worker_checks

TYPED = {"careful": ["I spent the weekend hiking in the hills", "My favourite food is pasta with tomatoes",
                     "Do you read many books these days"],
         "shouter": ["I SPENT THE WEEKEND HIKING", "MY FAVOURITE FOOD IS PASTA", "DO YOU READ MANY BOOKS"]}
# engaging ticks of the three bot turns: careful rates alpha 2/3 and beta 1/3, shouter the reverse of that
TICKS = {("careful", "alpha"): [1, 0, 1], ("careful", "beta"): [0, 0, 1],
         ("shouter", "alpha"): [0, 0, 0], ("shouter", "beta"): [1, 1, 1]}


def records() -> list[dict]:
    rows = []
    for (worker, model), ticks in TICKS.items():
        conv = f"{worker}-{model}"
        turns = []
        for text in ["Hi!", *TYPED[worker]]:  # the fixed opening, then the worker's own messages
            turns += [{"speaker": "human", "text": text}, {"speaker": model, "text": "That sounds nice."}]
        rows.append({"type": "conversation", "id": conv, "models": [model], "worker_id": worker, "turns": turns,
                     "task": "sm_eval"})
        for k, tick in enumerate(ticks):
            rows.append({"type": "rating", "conversation_id": conv, "worker_id": worker, "model": model,
                         "criterion": "engaging", "scale": "binary", "scale_min": 0, "scale_max": 1,
                         "value": tick, "turn_index": 2 * k + 3})
        rows.append({"type": "rating", "conversation_id": conv, "worker_id": worker, "model": model,
                     "criterion": "engaging", "scale": "likert", "scale_min": 1, "scale_max": 5,
                     "value": 4 if worker == "careful" else 1})
    return rows


def linear_rates(results) -> dict:
    rates = results["success_rates"]
    return rates[rates["criterion"] == "engaging"].groupby("model")["lin"].first().to_dict()


def run(data, out, mode):
    data, checks = run_worker_checks(data, mode)
    return analyze(data, out, SingleModelConfig(sm_turns=None, n_boot=50), checks)


def test_off_report_and_apply(tmp_path):
    data = from_records(records())
    off = run(data, tmp_path / "off", "off")
    assert "worker_checks" not in off and not (tmp_path / "off" / "worker_checks.csv").exists()
    assert linear_rates(off) == pytest.approx({"alpha": 2 / 6, "beta": 4 / 6})

    report = run(data, tmp_path / "report", "report")
    assert linear_rates(report) == linear_rates(off)  # nothing dropped
    table = pd.read_csv(tmp_path / "report" / "worker_checks.csv").set_index("worker_id")
    assert table["flagged"].to_dict() == {"careful": False, "shouter": True}
    assert table.loc["shouter", "all_caps"] == 2 and table.loc["shouter", "conversations"] == 2
    assert "Worker checks (Smith App. B)" in (tmp_path / "report" / "report.html").read_text()

    applied = run(data, tmp_path / "apply", "apply")
    assert linear_rates(applied) == pytest.approx({"alpha": 2 / 3, "beta": 1 / 3})  # careful's ticks only
    likert = applied["likert"]
    assert set(likert[likert["criterion"] == "engaging"]["mean"]) == {4.0}


def test_command_line_option(tmp_path, capsys):
    from parlai_dialeval.data import write_jsonl

    path = tmp_path / "sm.jsonl"
    write_jsonl(records(), path)
    AnalyzeSingleModel.main("--data", str(path), "--out", str(tmp_path / "out"), "--sm-turns", "all",
                            "--n-boot", "50", "--worker-checks", "apply")
    printed = capsys.readouterr().out
    assert "1 flagged (shouter); their records were dropped" in printed
    with pytest.raises(SystemExit):
        AnalyzeSingleModel.main("--data", str(path), "--out", str(tmp_path / "x"), "--worker-checks", "maybe")
