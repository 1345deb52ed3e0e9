"""The --worker-checks option shared by analyses of per-turn protocols (Smith et al. Appendix B)."""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.analysis.worker_checks import apply_worker_checks
from parlai_dialeval.errors import DialevalError

WORKER_CHECK_MODES = ("off", "report", "apply")


def add_worker_checks_arg(group) -> None:
    group.add_argument("--worker-checks", default="report", choices=WORKER_CHECK_MODES,
                       help="Smith App. B worker checks on the conversations' typed messages: off; report "
                            "(print the per-worker summary and add it to the report; default); apply (also "
                            "drop every record of a flagged worker, as Smith et al. did)")


def run_worker_checks(data, mode: str):
    """(data to analyse, per-worker summary or None); ``apply`` drops flagged workers' records."""
    if mode not in WORKER_CHECK_MODES:
        raise DialevalError(f"--worker-checks {mode!r}: expected one of {', '.join(WORKER_CHECK_MODES)}")
    if mode == "off":
        return data, None
    filtered, summary = apply_worker_checks(data)
    summary = summary.rename(columns={"dropped": "flagged"})
    return (filtered if mode == "apply" else data), summary


def worker_checks_text(checks: pd.DataFrame, mode: str) -> str:
    flagged = sorted(checks.loc[checks["flagged"], "worker_id"])
    action = "their records were dropped" if mode == "apply" else "kept (--worker-checks apply drops them)"
    return (f"Worker checks (Smith App. B) on {len(checks)} worker(s): {len(flagged)} flagged"
            + (f" ({', '.join(flagged)}); {action}." if flagged else "."))


def report_worker_checks(report, checks: pd.DataFrame, mode: str) -> None:
    report.heading("Worker checks (Smith App. B)")
    report.text(worker_checks_text(checks, mode) + " A worker is flagged when at least one of their "
                "conversations fails a check (docs/crowdsourcing_protocols.md). Workers who typed no messages "
                "(ACUTE, A/B) are never checked.")
    report.table(checks)
