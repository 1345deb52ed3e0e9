"""Every analysis command's pure core on a drawn study (testing/edge_studies.py), and what its report must never
say: no exception but a one-line refusal, no nan or inf in words, no "a overall", and no verdict that
contradicts its tables (a rank shared where strengths tie; the best model the one with the best mean).

Shared by tests/test_edge_sweep.py (a few hundred studies) and benchmarks/bench_edge_sweep.py (10,000). The
reports are built as the commands build them, their figures drawn but not saved (the text is what is checked).
``PAIRWISE`` is the one adapter to analyze_pairwise's core: repointed where that command's core moves.
"""
from __future__ import annotations

import contextlib
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd

from parlai_dialeval.data import read_jsonl, write_jsonl
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.testing import edge_studies

# words a report must never hold: a number that does not exist, printed as if it did, and a broken article
FORBIDDEN = re.compile(r"\b(nan|inf|infinity)\b|\ba overall\b", re.IGNORECASE)
TIE = 1e-9  # Bradley-Terry scores this close are level: their models share a rank


@dataclass
class Outcome:
    command: str
    status: str = "ok"  # ok | refused (a one-line DialevalError) | raised
    message: str = ""
    problems: list[str] = field(default_factory=list)  # forbidden words, a refusal of two lines
    contradictions: list[str] = field(default_factory=list)  # verdicts and ranks that contradict their tables
    level_ranks: list[str] = field(default_factory=list)  # level models ranked apart (issue 50 item 5, bt56's)

    @property
    def clean(self) -> bool:
        return self.status != "raised" and not self.problems and not self.contradictions


def _quiet(*_, **__) -> None:
    return None


@contextlib.contextmanager
def figures_drawn_not_saved():
    """Report.figure closes the figure instead of writing a PNG (the checks read the text; a figure that
    cannot be drawn still raises where it is made)."""
    import matplotlib.pyplot as plt

    from parlai_dialeval.report import Report

    def figure(self, fig, name, caption=""):
        plt.close(fig)
        self.sections.append({"kind": "figure", "src": f"{name}.png", "caption": caption or name})

    with mock.patch.object(Report, "figure", figure):
        yield


def report_text(out: Path) -> str:
    html = (out / "report.html").read_text(encoding="utf-8")
    html = re.sub(r"<style.*?</style>", " ", html, flags=re.DOTALL)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def loaded(records: list[dict], folder: Path, old_version: bool):
    """The records as a command reads them: written to a canonical file (stamped format 1.0 where the shape
    says so, as the earlier releases wrote it) and loaded."""
    path = folder / "study.jsonl"
    write_jsonl([dict(r, format_version="1.0") if old_version else r for r in records], path)
    return read_jsonl([path])


def pairwise_core(comparisons: pd.DataFrame, out: Path) -> dict:
    """analyze_pairwise's result (parlai_dialeval.results.pairwise) and its report written into ``out``; the
    result's tables."""
    from parlai_dialeval import results
    from parlai_dialeval.scripts import pairwise_report
    from parlai_dialeval.scripts.analysis_command import Outputs

    result = results.pairwise(comparisons, bootstrap_rounds=20)
    Outputs(report=pairwise_report.build(result, out)).write(out)
    return result.tables


PAIRWISE = pairwise_core


def run(command: str, shape: dict) -> Outcome:
    """One study of ``shape`` through ``command``'s core, checked."""
    outcome = Outcome(command)
    with tempfile.TemporaryDirectory() as folder, figures_drawn_not_saved(), np.errstate(all="ignore"):
        out = Path(folder) / "out"
        try:
            tables = RUNNERS[command](shape, Path(folder), out)
        except DialevalError as error:
            outcome.status, outcome.message = "refused", str(error)
            if "\n" in outcome.message:
                outcome.problems.append("a refusal of more than one line")
            return outcome
        except Exception as error:  # noqa: BLE001 (every other exception is what the sweep counts)
            outcome.status, outcome.message = "raised", f"{type(error).__name__}: {error}"
            return outcome
        text = report_text(out)
        outcome.problems += [f"report says {m.group(0)!r}: ...{text[max(0, m.start() - 80):m.end() + 40]}..."
                             for m in FORBIDDEN.finditer(text)][:3]
        for kind, problem in CHECKS.get(command, lambda *_: [])(tables, text):
            (outcome.level_ranks if kind == "level" else outcome.contradictions).append(problem)
    return outcome


def _pairwise(shape, folder, out):
    data = loaded(edge_studies.pairwise_study(shape).assign(type="comparison").to_dict("records"), folder,
                  shape["old_version"])
    return PAIRWISE(_dropped(data.comparisons), out)


def _dropped(frame: pd.DataFrame) -> pd.DataFrame:
    """The loaded frame without the columns no record filled (as a command's own reading leaves them)."""
    return frame.drop(columns=[c for c in frame.columns if frame[c].isna().all() or c in ("_file", "_line")])


def _certify(shape, folder, out):
    from parlai_dialeval.scripts import certify

    data = loaded(edge_studies.pairwise_study(shape).assign(type="comparison").to_dict("records"), folder,
                  shape["old_version"])
    return certify.analyze(_dropped(data.comparisons), out, certify.CertifyConfig())


def _live_chat_run(shape, folder: Path, out: Path):
    from parlai_dialeval.analysis import live_chat
    from parlai_dialeval.scripts.analyze_live_chat import write_outputs

    data = loaded(edge_studies.live_chat_study(shape), folder, shape["old_version"])
    result = live_chat.analyze(data, live_chat.LiveChatConfig(qc_test=shape["qc_test"]))
    write_outputs(result, out, data=data, opt={})
    return {"intervals": result.intervals}


def _replicate(shape, folder, out):
    from parlai_dialeval.scripts.replicate import replicate

    (folder / "a").mkdir()
    (folder / "b").mkdir()
    shape = dict(shape, models=3)  # a correlation between runs needs three models
    _live_chat_run(shape, folder / "a", folder / "run_a")
    _live_chat_run(dict(shape, seed=shape["seed"] + 1), folder / "b", folder / "run_b")
    return replicate(folder / "run_a", folder / "run_b", out, log=_quiet)


def _single_model(shape, folder, out):
    from parlai_dialeval.scripts import analyze_single_model

    data = loaded(edge_studies.single_model_study(shape), folder, False)
    return analyze_single_model.analyze(data, out, analyze_single_model.SingleModelConfig(n_boot=20))


def _significance_time(shape, folder, out):
    from parlai_dialeval.scripts import significance_time

    return significance_time.analyze(loaded(edge_studies.single_model_study(shape), folder, False), out, trials=20)


def _compare_protocols(shape, folder, out):
    from parlai_dialeval.scripts import compare_protocols

    data = loaded(edge_studies.single_model_study(shape), folder, False)
    return compare_protocols.analyze(data, out, compare_protocols.CompareConfig(trials=20))


def _scales(shape, folder, out):
    from parlai_dialeval.scripts import analyze_scales

    return analyze_scales.analyze(loaded(edge_studies.scales_study(shape), folder, False), out)


def _ranks_agree(tables: dict, _text: str) -> list[tuple[str, str]]:
    """Within each question, unit and connected part: models level in strength share a rank ("level"), and a
    stronger model never ranks below a weaker one ("order")."""
    problems = []
    ranks = tables.get("rankings")
    if ranks is None or ranks.empty:
        return problems
    for key, part in ranks.groupby(["question", "unit", "component"], dropna=False):
        scores, rank = part["bt_score"].to_numpy(dtype=float), part["rank"].to_numpy(dtype=float)
        for i in range(len(part)):
            for j in range(len(part)):
                if abs(scores[i] - scores[j]) <= TIE and rank[i] != rank[j]:
                    problems.append(("level", f"{key}: {part['model'].iloc[i]} and {part['model'].iloc[j]} are "
                                             f"level ({scores[i]:.3f}) but ranked {rank[i]:g} and {rank[j]:g}"))
                elif scores[i] > scores[j] + TIE and rank[i] > rank[j]:
                    problems.append(("order", f"{key}: {part['model'].iloc[i]} is stronger than "
                                             f"{part['model'].iloc[j]} but ranked below it"))
    return problems[:3]


def _best_agrees(tables: dict, text: str) -> list[tuple[str, str]]:
    """The live-chat verdict's best model is the one with the highest mean (or first place is shared)."""
    intervals = tables["intervals"].dropna(subset=["mean"])
    found = re.search(r"Best overall \([^)]*\): (.+?) (share first place|\()", text)
    if intervals.empty or found is None:
        return [] if intervals.empty else [("best", "no verdict names the best model")]
    top = intervals.loc[intervals["mean"] == intervals["mean"].max(), "model"].astype(str).tolist()
    named = found.group(1).split(", ") if found.group(2) == "share first place" else [found.group(1)]
    return [] if sorted(named) == sorted(top) else [("best", f"verdict names {named} best, the table {top}")]


RUNNERS = {"analyze_pairwise": _pairwise, "certify": _certify, "analyze_live_chat": _live_chat_run,
           "replicate": _replicate, "analyze_single_model": _single_model, "significance_time": _significance_time,
           "compare_protocols": _compare_protocols, "analyze_scales": _scales}
CHECKS = {"analyze_pairwise": _ranks_agree, "analyze_live_chat": _best_agrees}
SHAPES = {"analyze_pairwise": edge_studies.pairwise_shapes, "certify": edge_studies.pairwise_shapes,
          "analyze_live_chat": edge_studies.live_chat_shapes, "replicate": edge_studies.live_chat_shapes,
          "analyze_single_model": edge_studies.single_model_shapes,
          "significance_time": edge_studies.single_model_shapes, "compare_protocols": edge_studies.single_model_shapes,
          "analyze_scales": edge_studies.scale_shapes}
