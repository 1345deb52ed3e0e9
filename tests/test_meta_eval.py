"""dialeval meta_eval: item level on the FED dataset with the FED replication's score file, and
system level on a per-model table; every expected correlation is computed here independently."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from parlai_dialeval.analysis.meta_eval import correlate
from parlai_dialeval.cli import main


def _objects(path):
    decoder, text, position, out = json.JSONDecoder(), path.read_text(), 0, []
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return out
        obj, position = decoder.raw_decode(text, position)
        out.append(obj)


def test_item_level_fed_reproduces_independent_spearman(shared_data, tmp_path):
    fed = shared_data / "fed"
    items = json.loads((fed / "fed_data.json").read_text())
    turn_scores = _objects(fed / "replication_outputs" / "turn_level_FU_scores.jsonl")
    dialog_scores = _objects(fed / "replication_outputs" / "dialog_level_FU_scores.jsonl")
    # Mehri & Eskenazi 2020 Table 6: Spearman of the metric against the mean of the numeric labels.
    turn_items = [item for item in items if "response" in item]
    dialog_items = [item for item in items if "response" not in item]

    def mean_label(item, quality):
        return np.mean([v for v in item["annotations"][quality] if isinstance(v, int)])

    expected_interesting = stats.spearmanr([mean_label(i, "Interesting") for i in turn_items],
                                           [s["score"]["interesting"] for s in turn_scores]).statistic
    expected_understanding = stats.spearmanr([mean_label(i, "Understanding") for i in dialog_items],
                                             [s["score"]["understand"] for s in dialog_scores]).statistic
    dialog_quality_names = ["coherent", "error recovery", "consistent", "diverse", "depth", "likeable",
                            "understand", "flexible", "informative", "inquisitive"]
    expected_overall = stats.spearmanr([mean_label(i, "Overall") for i in dialog_items],
                                       [np.mean([s["score"][q] for q in dialog_quality_names])
                                        for s in dialog_scores]).statistic

    out = tmp_path / "corr.csv"
    assert main(["meta_eval", "--data", str(fed / "fed_data.json"), "--scores",
                 str(fed / "replication_outputs" / "turn_level_FU_scores.jsonl"),
                 str(fed / "replication_outputs" / "dialog_level_FU_scores.jsonl"),
                 "--out", str(out), "--bootstrap", "0"]) == 0
    table = pd.read_csv(out).set_index(["group", "human"])
    assert table.loc[("turn", "interesting"), "spearman"] == pytest.approx(expected_interesting, abs=1e-9)
    assert table.loc[("dialog", "understanding"), "metric"] == "understand"
    assert table.loc[("dialog", "understanding"), "spearman"] == pytest.approx(expected_understanding, abs=1e-9)
    assert table.loc[("dialog", "overall"), "spearman"] == pytest.approx(expected_overall, abs=1e-9)
    assert table.loc[("turn", "interesting"), "n"] == 375


def test_system_level_correlations(tmp_path, capsys):
    models = ["a", "b", "c", "d", "e", "f"]
    overall = [60.0, 55.0, 40.0, 35.0, 70.0, 20.0]
    human = tmp_path / "system_scores.csv"
    pd.DataFrame({"model": models, "n": [10] * 6, "overall": overall,
                  "fun": [50, 52, 31, 30, 66, 10]}).to_csv(human, index=False)
    metric = tmp_path / "metric.csv"
    bleu = [1.0, 2.0, 3.0, 4.5, 0.5, 6.0]
    pd.DataFrame({"model": models[::-1], "bleu4": bleu[::-1]}).to_csv(metric, index=False)
    out = tmp_path / "corr.csv"
    assert main(["meta_eval", "--human", str(human), "--scores", str(metric), "--against", "overall",
                 "--out", str(out), "--bootstrap", "200"]) == 0
    row = pd.read_csv(out).iloc[0]
    assert (row["human"], row["metric"], row["n"]) == ("overall", "bleu4", 6)
    assert row["pearson"] == pytest.approx(np.corrcoef(overall, bleu)[0, 1])
    ranks = lambda v: np.argsort(np.argsort(v))  # noqa: E731  (no ties here)
    assert row["spearman"] == pytest.approx(np.corrcoef(ranks(overall), ranks(bleu))[0, 1])
    assert row["pearson_lo"] <= row["pearson"] <= row["pearson_hi"]
    assert "not to be read as intervals" not in capsys.readouterr().out
    # two resamples give two draws, no interval: kept for a quick look, but said
    assert main(["meta_eval", "--human", str(human), "--scores", str(metric), "--against", "overall",
                 "--out", str(out), "--bootstrap", "2"]) == 0
    assert ("the intervals (*_lo, *_hi) are not to be read as intervals: only 2 bootstrap rounds: a percentile "
            "interval needs 100 or more") in capsys.readouterr().out


def test_correlate_edge_cases():
    result = correlate([1, 2, np.nan, 4], [2, 4, 5, 8], n_resamples=0)
    assert result["n"] == 3 and result["pearson"] == pytest.approx(1.0)
    assert np.isnan(correlate([1, 1, 1], [1, 2, 3])["spearman"])
    a = correlate([1, 2, 3, 4, 5, 7], [2, 1, 4, 3, 6, 5], n_resamples=100, seed=3)
    assert a == correlate([1, 2, 3, 4, 5, 7], [2, 1, 4, 3, 6, 5], n_resamples=100, seed=3)


def test_spearman_p_of_a_few_systems_is_the_exact_permutation_p():
    """Ji et al. compare a handful of systems: scipy's t approximation gave p = 0 for four ranked alike. The exact
    two-sided p counts the pairings of the ranks at least as extreme (itertools, not scipy)."""
    human, metric = [0.65, 0.72, 0.20, 0.40, 0.55], [0.5, 0.7, 0.1, 0.3, 0.2]
    for n in (4, 5):
        rho = lambda order: np.corrcoef(np.argsort(np.argsort(human[:n])), order)[0, 1]  # noqa: E731
        observed = rho(np.argsort(np.argsort(metric[:n])))
        extreme = [abs(rho(p)) >= abs(observed) - 1e-12 for p in itertools.permutations(range(n))]
        result = correlate(human[:n], metric[:n], n_resamples=0)
        assert result["spearman"] == pytest.approx(observed)
        assert result["spearman_p"] == pytest.approx(np.mean(extreme))
    assert correlate(human[:4], metric[:4], n_resamples=0)["spearman_p"] == pytest.approx(1 / 12)


FOUR_SYSTEMS = "model,n,overall\nbot0,36,0.65\nbot1,36,0.72\nbot2,36,0.20\nbot3,36,0.40\n"


def _system_level(tmp_path, metric_csv: str, *options: str) -> tuple[int, Path]:
    """meta_eval of four systems' scores against ``metric_csv``: (exit code, the output CSV)."""
    human, metric, out = tmp_path / "system_scores.csv", tmp_path / "metric.csv", tmp_path / "corr.csv"
    human.write_text(FOUR_SYSTEMS)
    metric.write_text(metric_csv)
    return main(["meta_eval", "--human", str(human), "--scores", str(metric), "--against", "overall",
                 "--out", str(out), *options]), out


def test_intervals_a_few_systems_cannot_have_are_empty_and_said_so(tmp_path, capsys):
    code, out = _system_level(tmp_path, "model,metric1\nbot0,0.5\nbot1,0.7\nbot2,0.1\nbot3,0.3\n")
    assert code == 0
    printed, warned = capsys.readouterr()
    assert "nan" not in printed.lower() and "Warning" not in warned
    assert "no bootstrap interval for 1 of 1 rows (left empty): too few keys (n as low as 4)" in printed
    row = pd.read_csv(out).iloc[0]
    assert row[["pearson_lo", "spearman_hi", "kendall_lo"]].isna().all() and row["spearman_p"] == pytest.approx(1 / 12)


def test_bad_inputs_are_reported(tmp_path, capsys):
    scores = tmp_path / "s.csv"
    pd.DataFrame({"x": [1]}).to_csv(scores, index=False)
    assert main(["meta_eval", "--human", str(scores), "--scores", str(scores), "--out", str(tmp_path / "o.csv")]) == 2
    assert "s.csv: field 'model': no model column" in capsys.readouterr().err
    assert main(["meta_eval", "--scores", str(scores), "--out", str(tmp_path / "o.csv")]) == 2
    assert "give --data (item level) or --human (system level)" in capsys.readouterr().err


def _numbered_items(tmp_path):
    """Human ratings of items whose ids look like numbers ("007"), and a metric CSV keyed by them."""
    from parlai_dialeval.data import write_jsonl

    human = {f"{i:03d}": [1 + (i * 7) % 5, 1 + (i * 3) % 5] for i in range(1, 9)}
    records = [{"type": "rating", "conversation_id": item, "worker_id": f"w{k}", "model": "m", "criterion": "fun",
                "scale": "likert", "scale_min": 1, "scale_max": 5, "value": value}
               for item, values in human.items() for k, value in enumerate(values)]
    data = tmp_path / "ratings.jsonl"
    write_jsonl(records, data)
    metric = {item: float(i * i % 11) for i, item in enumerate(human)}
    return data, human, metric


def test_item_ids_that_look_like_numbers_are_matched_as_written(tmp_path):
    # A CSV's "007" was read as the integer 7 and matched no conversation id: no correlation at all
    data, human, metric = _numbered_items(tmp_path)
    scores = tmp_path / "scores.csv"
    scores.write_text("id,fun\n" + "".join(f"{item},{value}\n" for item, value in metric.items()))
    out = tmp_path / "corr.csv"
    assert main(["meta_eval", "--data", str(data), "--scores", str(scores), "--out", str(out), "--bootstrap", "0"]) == 0
    row = pd.read_csv(out).iloc[0]
    expected = stats.spearmanr([np.mean(v) for v in human.values()], list(metric.values())).statistic
    assert row["n"] == len(human) and row["spearman"] == pytest.approx(expected)


@pytest.mark.parametrize("content, place, field", [
    (b"", "", None),
    (b"id,fun\n001,0.5\n002,caf\xe9\n", "", None),
    (b"id,fun\n001,0.5\n002,0.7\n003,high\n004,0.1\n", ", row 4", "fun"),
], ids=["empty", "not-utf8", "text-in-a-score-column"])
def test_bad_score_csv_is_one_line_naming_the_file(tmp_path, capsys, content, place, field):
    # before: a pandas traceback (empty, not UTF-8), or the column silently dropped as "not a metric"
    data, _, _ = _numbered_items(tmp_path)
    scores = tmp_path / "scores.csv"
    scores.write_bytes(content)
    capsys.readouterr()
    assert main(["meta_eval", "--data", str(data), "--scores", str(scores), "--out", str(tmp_path / "o.csv")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"dialeval: error: {scores}{place}:") and "\n" not in err, err
    if field:
        assert f"field '{field}'" in err and "'high'" in err


def test_models_left_out_averaged_or_written_with_a_decimal_comma_are_said(tmp_path, capsys):
    code, out = _system_level(tmp_path, "model,metric1\nM1,0.9\nbot0,0.5\nbot0,0.1\nbot1,0.7\nbot2,0.1\n",
                              "--bootstrap", "0")
    assert code == 0
    printed = capsys.readouterr().out
    assert "metric scores: the rows of a model averaged, 1 of 4 models with several ('bot0': 2)" in printed
    assert "models not in both, left out: 1 only in the human scores ('bot3'); 1 only in the metric scores ('M1')" \
        in printed
    assert pd.read_csv(out).iloc[0]["n"] == 3
    assert _system_level(tmp_path, 'model,metric1\nbot0,"0,9"\nbot1,"0,5"\n')[0] == 2
    assert capsys.readouterr().err.strip().endswith(
        "row 2: field 'metric1': a decimal comma (expected a number with a decimal point, got '0,9')")
