"""Issue 38 item 11, the HTML reports: a bidi control (U+202E) in a model or worker name, in a table or in a
sentence, is shown as ‹U+202E› and turns no text after it around."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.report import Report

RLO = "\u202e"


def test_reports_show_bidi_controls_instead_of_obeying_them(tmp_path):
    report = Report("study", tmp_path)
    report.text(f"model m{RLO}X scored highest")
    report.warn(f"worker w{RLO}2 rated everything alike")
    report.table(pd.DataFrame({"model": [f"m{RLO}X"], "score": [0.5]}))
    html = report.render()
    assert RLO not in html
    assert "m\u2039U+202E\u203aX scored highest" in html and html.count("\u2039U+202E\u203a") == 3
