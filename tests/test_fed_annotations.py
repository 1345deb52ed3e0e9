"""FED annotation analysis against Mehri & Eskenazi 2020 (Tables 3 and 4) and hand-worked examples."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from parlai_dialeval.analysis import fed_annotations as fed
from parlai_dialeval.importers import load
from parlai_dialeval.scripts.analyze_annotations import analyze


def test_outlier_rule_hand_examples():
    # [2, 2, 2, 2, 0]: mean 1.6, population SD 0.8; the 0 is 1.6 away > 0.4, so it is dropped.
    assert fed.outlier_mask([2, 2, 2, 2, 0]).tolist() == [True, True, True, True, False]
    # [0, 1, 2, 1, 1]: mean 1, SD sqrt(0.4) = 0.632; 0 and 2 are 1 away > 0.316: only the first is dropped.
    assert fed.outlier_mask([0, 1, 2, 1, 1]).tolist() == [False, True, True, True, True]
    # All equal: SD 0, nothing is further than 0 from the mean, nothing dropped.
    assert fed.outlier_mask([1, 1, 1, 1, 1]).all()


def test_leave_one_out_agreement_on_a_tiny_frame():
    # Two items, three annotators; independent computation of both correlations with scipy-free ranks.
    frame = pd.DataFrame({"conversation_id": ["x"] * 3 + ["y"] * 3, "criterion": "q", "level": "turn",
                          "value": [2, 2, 1, 0, 0, 1], "model": "m", "scale_max": 2})
    result = fed.quality_agreement(frame, remove_outliers=False).iloc[0]
    others = [1.5, 1.5, 2.0, 0.5, 0.5, 0.0]
    assert result["spearman_others"] == pytest.approx(pd.Series(frame["value"]).corr(pd.Series(others),
                                                                                     method="spearman"))
    assert result["annotations"] == 6 and result["items"] == 2


@pytest.fixture(scope="module")
def fed_data(shared_data):
    return load([shared_data / "fed" / "fed_data.json"], log=None)


@pytest.fixture(scope="module")
def ratings(fed_data):
    return fed.with_level(fed_data.ratings, fed_data.conversations)


def test_dialog_overall_means_match_table4(ratings):
    # Mehri & Eskenazi 2020 Table 4, dialog-level Overall (1-5 scale): Mitsuku 3.10, Meena 4.11, Human 4.60.
    means = fed.system_means(ratings)
    overall = means[(means["level"] == "dialog") & (means["criterion"] == "overall")].set_index("model")["mean"]
    assert overall.round(2).to_dict() == {"Mitsuku": 3.10, "Meena": 4.11, "Human": 4.60}


def test_dialog_level_means_close_to_table4(ratings):
    # Table 4 dialog-level rows (Mitsuku, Meena, Human); the paper prints two decimals.
    paper = {"coherent": (2.20, 2.88, 2.94), "error recovery": (2.22, 2.69, 2.86),
             "depth": (1.80, 2.28, 2.78), "understanding": (2.23, 2.86, 2.98), "inquisitive": (2.35, 2.76, 2.88)}
    means = fed.system_means(ratings).set_index(["level", "criterion", "model"])["mean"]
    for criterion, values in paper.items():
        for system, value in zip(("Mitsuku", "Meena", "Human"), values):
            assert means[("dialog", criterion, system)] == pytest.approx(value, abs=0.035), (criterion, system)


def test_agreement_reproduces_table3(ratings):
    # Table 3 (Spearman); Understandable and Consistent (the binary qualities) do not reproduce and are
    # checked only to be the two lowest, as the paper says ("in the 0.5 - 0.6 range", lowest).
    paper = {("turn", "interesting"): 0.819, ("turn", "engaging"): 0.798, ("turn", "specific"): 0.790,
             ("turn", "relevant"): 0.753, ("turn", "correct"): 0.780, ("turn", "semantically appropriate"): 0.682,
             ("turn", "fluent"): 0.714, ("turn", "overall"): 0.820, ("dialog", "coherent"): 0.809,
             ("dialog", "error recovery"): 0.840, ("dialog", "diverse"): 0.789, ("dialog", "depth"): 0.833,
             ("dialog", "likeable"): 0.838, ("dialog", "understanding"): 0.809, ("dialog", "flexible"): 0.816,
             ("dialog", "informative"): 0.806, ("dialog", "inquisitive"): 0.769, ("dialog", "overall"): 0.830}
    result = fed.quality_agreement(ratings).set_index(["level", "criterion"])
    for key, value in paper.items():
        assert result.loc[key, "spearman"] == pytest.approx(value, abs=0.02), key
    for level, binary in (("turn", "understandable"), ("dialog", "consistent")):
        assert result.loc[level, "spearman"].idxmin() == binary
    # Leave-one-out (Table 3's caption) is always lower than with the item mean including itself.
    assert (result["spearman_others"] < result["spearman"]).all()


def test_cli_writes_tables_and_report(fed_data, tmp_path):
    result = analyze(fed_data, tmp_path)
    for name in ("agreement.csv", "system_means.csv", "system_means_vs_paper.csv", "report.html"):
        assert (tmp_path / name).is_file()
    html = (tmp_path / "report.html").read_text()
    assert "Table 3" in html and "difference" in html
    table = pd.read_csv(tmp_path / "agreement.csv")
    assert np.isfinite(table["paper"]).sum() == 20 and len(table) == 20
    assert set(result["table4"].columns) >= {"Mitsuku", "Mitsuku (paper)"}
