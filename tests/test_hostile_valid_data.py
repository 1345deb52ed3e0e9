"""Every analysis command on valid data that is hostile (issue 18, "Must show"): names holding HTML, all ties, one
model, a disconnected comparison graph, mixed protocols, data without workers. Each gives the correct result or one
line saying why there is none, never a Python traceback.
"""
from __future__ import annotations

import csv
import json
import re

import pytest

from hostile_corpora import (DATA_COMMANDS, HTML_NAME, assert_one_line_error, dialeval, live_chat, pairwise,
                             report_text, scales, single_model, write)


# ----------------------------------------------------------------------------- valid but hostile data

def test_html_in_names_is_shown_as_text(tmp_path, capsys):
    records = [dict(r, model_a=HTML_NAME) if r.get("model_a") == "x" else r for r in pairwise()]
    path = write(tmp_path / "html.jsonl", records)
    code, _, err = dialeval(capsys, "analyze_pairwise", "--data", path, "--out", tmp_path / "out",
                            "--bootstrap-rounds", "20")
    assert code == 0, err
    html = report_text(tmp_path / "out")
    assert HTML_NAME not in html and "&lt;script&gt;" in html


@pytest.mark.parametrize("command, records, extra", [
    ("analyze_live_chat", lambda: live_chat(models=(HTML_NAME, "m2")), ["--qc-test", "none"]),
    ("analyze_single_model", lambda: single_model(models=(HTML_NAME, "m2")), ["--n-boot", "20"]),
    ("analyze_scales", lambda: scales(models=(HTML_NAME, "m2")), []),
])
def test_html_in_model_names_is_escaped_in_every_report(tmp_path, capsys, command, records, extra):
    path = write(tmp_path / "html.jsonl", records())
    code, _, err = dialeval(capsys, command, "--data", path, "--out", tmp_path / "out", *extra)
    assert code == 0, err
    html = report_text(tmp_path / "out")
    assert HTML_NAME not in html and "&lt;script&gt;" in html


def test_significance_time_on_all_ties(tmp_path, capsys):
    path = write(tmp_path / "ties.jsonl", [dict(r, choice="tie", turn_index=2) if r["type"] == "comparison" else r
                                           for r in pairwise()])
    code, _, err = dialeval(capsys, "significance_time", "--data", path, "--out", tmp_path / "out", "--trials", "5")
    if code:
        assert_one_line_error(code, err)
    else:
        assert "Traceback" not in err and (tmp_path / "out" / "report.html").is_file()


def test_all_ties_give_even_win_rates(tmp_path, capsys):
    path = write(tmp_path / "ties.jsonl", [dict(r, choice="tie") if r["type"] == "comparison" else r
                                           for r in pairwise()])
    code, _, err = dialeval(capsys, "analyze_pairwise", "--data", path, "--out", tmp_path / "out",
                            "--bootstrap-rounds", "20")
    assert code == 0, err
    import pandas as pd

    rates = pd.read_csv(tmp_path / "out" / "win_rates.csv")
    assert (rates["wins_a"] == 0).all() and (rates["wins_b"] == 0).all() and (rates["ties"] == 24).all()
    assert rates["p_value"].isna().all() or (rates["p_value"] == 1).all()  # nothing to test, nothing significant


def test_one_model_in_live_chat(tmp_path, capsys):
    path = write(tmp_path / "one.jsonl", live_chat(models=("m1",)))
    # Two ratings a worker cannot pass Ji et al.'s QC test; without it every worker counts.
    code, _, err = dialeval(capsys, "analyze_live_chat", "--data", path, "--out", tmp_path / "out", "--qc-test", "none")
    assert code == 0, err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["models"] == ["m1"] and summary["n_workers_passed"] == 6
    assert "m1" in report_text(tmp_path / "out")


def test_one_model_in_single_model_and_scales(tmp_path, capsys):
    import pandas as pd

    path = write(tmp_path / "sm.jsonl", single_model(models=("m1",)))
    code, _, err = dialeval(capsys, "analyze_single_model", "--data", path, "--out", tmp_path / "sm", "--n-boot", "20")
    assert code == 0, err
    # By hand from single_model(): 14 of the 42 ticks per criterion are 0; Likert values 1 2 3 4 5 1.
    rates = pd.read_csv(tmp_path / "sm" / "success_rates.csv").query("turns == 'all'")
    assert list(rates["model"].unique()) == ["m1"] and rates["lin"].tolist() == pytest.approx([28 / 42] * 3)
    assert pd.read_csv(tmp_path / "sm" / "likert.csv")["mean"].tolist() == pytest.approx([16 / 6] * 3)
    assert pd.read_csv(tmp_path / "sm" / "ttests.csv").empty  # no pair to test
    path = write(tmp_path / "sc.jsonl", scales(models=("m1",)))
    code, _, err = dialeval(capsys, "analyze_scales", "--data", path, "--out", tmp_path / "sc")
    assert code == 0, err
    scores = pd.read_csv(tmp_path / "sc" / "model_scores.csv")
    assert scores[["model", "score"]].values.tolist() == [["m1", pytest.approx(54 / 15)]]


def test_disconnected_comparison_graph_is_ranked_within_components(tmp_path, capsys):
    path = write(tmp_path / "split.jsonl", pairwise(pairs=(("a", "b"), ("c", "d"))))
    code, _, err = dialeval(capsys, "analyze_pairwise", "--data", path, "--out", tmp_path / "out",
                            "--bootstrap-rounds", "20")
    assert code == 0, err
    import pandas as pd

    ranks = pd.read_csv(tmp_path / "out" / "rankings.csv")
    assert ranks.groupby("model")["component"].first().to_dict() in ({"a": 1, "b": 1, "c": 2, "d": 2},
                                                                     {"a": 2, "b": 2, "c": 1, "d": 1})
    assert "component" in report_text(tmp_path / "out").lower()


def test_pairwise_questions_are_kept_apart(tmp_path, capsys):
    """x wins every engagingness vote and loses every humanness vote: pooled, that is a 50% tie."""
    records = (pairwise(pairs=(("x", "y"),), choices="a", question="Who would you prefer to talk to?")
               + pairwise(pairs=(("x", "y"),), choices="b", question="Which speaker sounds more human?")[1:])
    path = write(tmp_path / "q.jsonl", records)
    code, _, err = dialeval(capsys, "analyze_pairwise", "--data", path, "--out", tmp_path / "out",
                            "--bootstrap-rounds", "20")
    assert code == 0, err
    import pandas as pd

    rates = pd.read_csv(tmp_path / "out" / "win_rates.csv").set_index("question")["win_rate_a"].to_dict()
    assert rates == {"Who would you prefer to talk to?": 1.0, "Which speaker sounds more human?": 0.0}


def test_mixed_protocols_each_command_takes_its_part(tmp_path, capsys):
    path = write(tmp_path / "mixed.jsonl", live_chat() + pairwise()[1:] + single_model()[1:] + scales()[1:])
    for command in ("analyze_live_chat", "analyze_pairwise", "analyze_single_model", "analyze_scales",
                    "significance_time", "validate"):
        code, _, err = dialeval(capsys, command, "--data", path, *DATA_COMMANDS[command](tmp_path / command))
        assert code == 0 or len(err.strip().splitlines()) == 1, (command, err[-3000:])


SELF_CHATS = [{"type": "study", "name": "sc"}] + [
    {"type": "conversation", "study": "sc", "id": f"c{i}", "models": ["m1", "m2"],
     "turns": [{"speaker": "m1", "text": "hi"}, {"speaker": "m2", "text": "hello"}]} for i in range(3)]


@pytest.mark.parametrize("records", [pairwise()[:1], SELF_CHATS], ids=["study_only", "self_chats_no_workers"])
@pytest.mark.parametrize("command, message", [
    ("analyze_pairwise", "no comparison records in the data (analyze_pairwise needs pairwise votes)"),
    ("analyze_single_model", "no SM-Turn (binary, per-turn) or SM-Dialog (Likert) ratings of engaging / humanlike / "
                             "interesting in the data; see docs/single_model_analysis.md for the conventions"),
    ("analyze_scales", "no likert, magnitude or best_worst ratings in the data (see docs/single_model_analysis.md)"),
    ("certify", "no comparisons in the data: certify needs pairwise (A/B, PW-Turn, ACUTE) votes"),
])
def test_data_without_workers_is_the_nothing_to_analyse_line(tmp_path, capsys, records, command, message):
    """No worker id anywhere: the evidence table's .str on an empty float column raised AttributeError."""
    path = write(tmp_path / "d.jsonl", records)
    code, _, err = dialeval(capsys, command, "--data", path, "--out", tmp_path / "out")
    assert code == 2 and err == f"dialeval: error: {message}\n"
    assert not (tmp_path / "out").exists()


def test_evidence_table_of_no_workers_is_empty(tmp_path):
    import pandas as pd

    from parlai_dialeval.analysis.evidence import COLUMNS, evidence_table

    empty = pd.DataFrame()
    table = evidence_table(empty, empty, empty).table
    assert table.empty and list(table.columns[:len(COLUMNS)]) == COLUMNS


def test_annotations_whose_labels_never_vary_say_the_correlation_is_undefined(tmp_path, capsys):
    """Constant labels for every quality made each Spearman NaN, and idxmax over them raised ValueError."""
    fed = tmp_path / "fed_data.json"
    fed.write_text(json.dumps([{"context": "User: hi", "response": f"System: r{i}",
                                "system": ["Meena", "Human", "Mitsuku"][i % 3],
                                "annotations": {"Interesting": [1] * 5, "Overall": [2] * 5}} for i in range(12)]))
    out = tmp_path / "out"
    code, _, err = dialeval(capsys, "analyze_annotations", "--data", fed, "--out", out)
    assert code == 0, err[-3000:]
    report = report_text(out)
    for criterion, label in (("interesting", 1), ("overall", 2)):
        assert (f"{criterion} (turn): the Spearman correlation is undefined (every label is {label}, so the labels "
                "never vary); its cells are left empty and it is not compared with the paper.") in report
    assert "Largest absolute difference" not in report and not re.search(r"\bnan\b", report, re.IGNORECASE)
    with open(out / "agreement.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["criterion"], r["spearman"], r["difference"]) for r in rows] == [("interesting", "", ""),
                                                                                ("overall", "", "")]


def test_convert_counts_in_proper_plurals(tmp_path, capsys):
    one = write(tmp_path / "one.jsonl", pairwise())
    two = write(tmp_path / "two.jsonl", live_chat())
    code, printed, _ = dialeval(capsys, "convert", "--data", one, "--out", tmp_path / "a.jsonl")
    assert code == 0 and printed == f"wrote 73 records (1 study, 72 comparisons) to {tmp_path / 'a.jsonl'}\n"
    code, printed, _ = dialeval(capsys, "convert", "--data", one, two, "--out", tmp_path / "b.jsonl")
    assert code == 0 and printed == (f"wrote 128 records (2 studies, 18 conversations, 36 ratings, 72 comparisons) "
                                     f"to {tmp_path / 'b.jsonl'}\n")
