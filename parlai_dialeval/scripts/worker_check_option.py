"""The --worker-checks option shared by analyses of per-turn protocols (Smith et al. Appendix B), and the
one object every analysis receives: ``WorkerChecks`` (mode and per-worker table) or None when off."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from parlai_dialeval.analysis.worker_checks import apply_worker_checks
from parlai_dialeval.errors import DialevalError

WORKER_CHECK_MODES = ("off", "report", "apply")


def add_worker_checks_arg(group) -> None:
    group.add_argument("--worker-checks", default="report", choices=WORKER_CHECK_MODES,
                       help="Smith App. B worker checks on the conversations' typed messages: off; report "
                            "(print the per-worker summary and add it to the report; default); apply (also "
                            "drop every record of a flagged worker, as Smith et al. did)")


@dataclass
class WorkerChecks:
    mode: str             # report | apply
    table: pd.DataFrame   # worker_id, flagged, and one column per check

    def flagged(self) -> list[str]:
        return sorted(self.table.loc[self.table["flagged"], "worker_id"])

    def text(self) -> str:
        flagged = self.flagged()
        action = "their records were dropped" if self.mode == "apply" else "kept (--worker-checks apply drops them)"
        return (f"Worker checks (Smith App. B) on {len(self.table)} worker(s): {len(flagged)} flagged"
                + (f" ({', '.join(flagged)}); {action}." if flagged else "."))

    def summary(self) -> dict:
        return {"mode": self.mode, "workers": len(self.table), "flagged": len(self.flagged())}

    def add_to(self, report) -> None:
        report.heading("Worker checks (Smith App. B)")
        report.text(self.text() + " A worker is flagged when at least one of their conversations fails a check "
                    "(docs/crowdsourcing_protocols.md). Workers who typed no messages (ACUTE, A/B) are never checked, nor is "
                    "work not handed in (a conversation left unfinished, an assignment not submitted): it is not "
                    "analysed either.")
        report.table(self.table, empty="No worker typed a message, so there was nothing to check.")


def run_worker_checks(data, mode: str):
    """(data to analyse, WorkerChecks or None when ``off``); ``apply`` drops flagged workers' records."""
    if mode not in WORKER_CHECK_MODES:
        raise DialevalError(f"--worker-checks {mode!r}: expected one of {', '.join(WORKER_CHECK_MODES)}")
    if mode == "off":
        return data, None
    filtered, summary = apply_worker_checks(data)
    checks = WorkerChecks(mode, summary.rename(columns={"dropped": "flagged"}))
    return (filtered if mode == "apply" else data), checks
