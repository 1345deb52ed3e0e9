"""Reports from Jinja2 templates (one layout, autoescaped) and the one pattern of the analysis commands."""
from __future__ import annotations

import dataclasses
import importlib
import warnings

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from parlai_dialeval.report import TEMPLATES, Report
from parlai_dialeval.scripts.analysis_command import AnalysisCommand

HOSTILE = '<script>alert("x")</script>'


def test_everything_from_the_data_is_escaped(tmp_path):
    report = Report(f"Study {HOSTILE}", tmp_path)
    report.warn(f"model {HOSTILE} has one vote")
    report.heading(HOSTILE)
    report.text(HOSTILE, note=True)
    report.table(pd.DataFrame({"model": [HOSTILE], "score": [1.0]}), caption=HOSTILE)
    fig, _ = plt.subplots()
    report.figure(fig, "plot", caption=HOSTILE)
    html = report.write().read_text()
    assert "<script>" not in html and html.count("&lt;script&gt;") == 9  # title twice, figure alt and caption
    assert (tmp_path / "plot.png").is_file()


def test_layout_warnings_files_and_empty_tables(tmp_path):
    report = Report("Title", tmp_path)
    report.warn("n is small")
    report.warn("n is small")  # said once
    report.table(pd.DataFrame(columns=["a"]), caption="Nothing here", empty="No pair was tested.")
    report.file("results.csv")
    html = report.render()
    assert html.count("n is small") == 1 and "Read these first" in html
    assert "Nothing here: No pair was tested." in html and "<table" not in html
    assert "<li>results.csv</li>" in html


def test_a_wide_table_is_split_with_its_labels_repeated_and_its_columns_named_in_words(tmp_path):
    """Issue 40: the pairwise report's tables had 20+ raw column names and made the page 2,241 px wide."""
    import re

    frame = pd.DataFrame({"question": ["Who is better?"], "model_a": ["x"], "model_b": ["y"],
                          **{f"score_{k}": [float(k)] for k in range(14)}, "ci_low": [0.1]})
    report = Report("Title", tmp_path)
    report.table(frame, caption="Win rates")
    html = report.render()
    captions = re.findall(r"<b>(Win rates[^<]*)</b>", html)
    assert captions == [f"Win rates (part {k} of 3)" for k in (1, 2, 3)]  # 15 numbers, 6 a part beside 3 labels
    assert html.count("<th>question</th>") == 3 and html.count("<th>model A</th>") == 3
    assert "<th>CI low</th>" in html and "model_a" not in html and "ci_low" not in html
    assert all(header.count("<th>") <= 9 for header in re.findall(r"<thead>.*?</thead>", html, re.S))


def test_a_long_table_shows_its_first_rows_and_says_how_many_there_are(tmp_path):
    """4,950 model pairs (100 models) made a report of 5,000-row tables, 17 s of pandas' to_html, that nobody
    reads in a page: the first 200 rows, the count, and where every row is."""
    import re

    report = Report("Title", tmp_path)
    report.table(pd.DataFrame({"pair": [f"m{k}" for k in range(4950)], "n": range(4950)}), caption="Pairs")
    report.table(pd.DataFrame({"pair": ["a", "b"], "n": [1, 2]}), caption="Two pairs")
    without_files = report.render()
    report.file("pairs.csv")
    html = report.render()
    assert re.findall(r"<td>(m\d+)</td>", html) == [f"m{k}" for k in range(200)]
    assert html.count('<p class="note">') == 1
    assert "The first 200 of 4,950 rows; every row is in the CSV files listed under Files." in html
    assert "The first 200 of 4,950 rows." in without_files  # where no file is listed, none is promised


def test_a_long_table_split_into_column_parts_says_how_many_rows_once_after_its_last_part(tmp_path):
    """A 4,950-row table wider than MAX_COLUMNS is shown in parts: the note ended each part, three times for one
    table (seen in the 100-model study's report)."""
    from parlai_dialeval.report import MAX_COLUMNS

    wide = pd.DataFrame({"pair": [f"m{k}" for k in range(4950)],
                         **{f"n{c}": range(4950) for c in range(2 * MAX_COLUMNS)}})
    report = Report("Title", tmp_path)
    report.table(wide, caption="Pairs")
    html = report.render()
    parts = html.count("<table")
    assert parts >= 3 and html.count("The first 200 of 4,950 rows.") == 1
    assert html.index("The first 200 of 4,950 rows.") > html.rindex("</table>")


def test_a_figure_with_characters_no_font_has_says_so_in_the_report_not_on_stderr(tmp_path):
    """A model named "＝cmd" (test_csv_injection) made matplotlib print "Glyph 65309 missing from font(s) DejaVu
    Sans" on stderr, and the figure showed a box the reader could not explain. The machine has DejaVu and
    Liberation only (fc-list), neither with CJK: 評 is drawn as a box too."""
    import warnings

    import matplotlib.pyplot as plt

    report = Report("Title", tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, labels in (("bars", ["＝cmd", "評価", "plain"]), ("more", ["評価", "x"])):
            fig, ax = plt.subplots()
            ax.bar(labels, range(len(labels)))
            report.figure(fig, name)
    assert (tmp_path / "bars.png").is_file() and (tmp_path / "more.png").is_file()
    html = report.render()
    assert html.count("Figures draw these characters as empty boxes") == 1  # one line for every figure
    said = html[html.index("Figures draw"):html.index("as written.")]
    assert "＝ (FULLWIDTH EQUALS SIGN)" in said and "評 (CJK UNIFIED IDEOGRAPH-8A55)" in said
    assert "p (" not in said and "x (" not in said  # characters the font has are not named


def test_library_warnings_become_report_lines_and_deprecations_are_dropped(tmp_path, recwarn):
    report = Report("Title", tmp_path)
    with report.library_warnings():
        warnings.warn("p-value may be inaccurate", RuntimeWarning)
        warnings.warn("old API", DeprecationWarning)
    assert report.warnings == ["A statistics library warned: RuntimeWarning: p-value may be inaccurate"]
    assert len(recwarn) == 0  # nothing reached stderr


def test_every_report_template_extends_the_one_layout():
    # The dashboard's pages (dashboard*.html) are a live web app with a layout of their own, not reports.
    templates = [p for p in TEMPLATES.glob("*.html") if p.name != "base.html" and not p.name.startswith("dashboard")]
    assert {"report.html", "pairwise.html", "single_model.html", "live_chat.html", "annotations.html",
            "scales.html"} <= {p.name for p in templates}
    for path in templates:
        assert '{% extends "base.html" %}' in path.read_text(), path.name
    for path in TEMPLATES.glob("dashboard?*.html"):
        if path.name != "dashboard_base.html":
            assert '{% extends "dashboard_base.html" %}' in path.read_text(), path.name


@pytest.mark.parametrize("module, command", [
    ("analyze_pairwise", "AnalyzePairwise"), ("analyze_single_model", "AnalyzeSingleModel"),
    ("analyze_live_chat", "AnalyzeLiveChat"), ("analyze_scales", "AnalyzeScales"),
    ("analyze_annotations", "AnalyzeAnnotations")])
def test_analysis_commands_share_one_base_and_derive_their_options(module, command):
    cls = getattr(importlib.import_module(f"parlai_dialeval.scripts.{module}"), command)
    assert issubclass(cls, AnalysisCommand)
    parser = cls.setup_args()
    actions = {a.dest: a for a in parser._actions}
    for field in dataclasses.fields(cls.config_class):
        action = actions[field.name]
        assert action.help == field.metadata["help"] and f"--{field.name.replace('_', '-')}" in action.option_strings


def test_a_question_is_named_once_per_table_not_in_every_row(tmp_path):
    # Issue 50 item 5: the whole question was repeated in every row of every table.
    frame = pd.DataFrame({"question": ["Which is more engaging?"] * 2 + ["Which is more human?"] * 2,
                          "unit": "turn", "model": ["x", "y", "x", "y"], "score": [0.4, -0.4, -0.1, 0.1]})
    report = Report("T", tmp_path)
    report.table(frame, caption="scores")
    html = report.render()
    assert "<th>question</th>" not in html and "<th>unit</th>" not in html
    assert html.count("Which is more engaging?") == 1 and "Which is more human? (turn): scores" in html
    one_row_each = Report("T", tmp_path)
    one_row_each.table(frame.drop_duplicates("question"))  # nothing repeated: one table, as it is
    assert "<th>question</th>" in one_row_each.render()


def test_pairwise_figures_label_their_axes_in_words():
    # Issue 50 item 5: a plot axis read "model_a".
    from parlai_dialeval.analysis import pairwise_plots

    per_turn = pd.DataFrame({"model_a": ["x"] * 3, "model_b": ["y"] * 3, "turn_number": [1, 2, 3],
                             "win_rate_a": [0.5, 0.6, 0.7]})
    wmt = pd.DataFrame({"model": ["x", "y"], "opponent": ["y", "x"], "major_win": [0.6, 0.4],
                        "distinct_win": [0.5, 0.3]})
    for fig in (pairwise_plots.turn_plot(per_turn), pairwise_plots.heatmap(wmt, ["x", "y"]),
                pairwise_plots.histogram(pd.Series([0.1, 0.2]), "Spearman rho", "annotators")):
        labels = [text for ax in fig.axes for text in (ax.get_xlabel(), ax.get_ylabel())]
        assert all(label and "_" not in label and label != "count" for label in labels if label), labels
        plt.close(fig)
