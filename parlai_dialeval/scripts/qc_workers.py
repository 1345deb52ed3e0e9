"""dialeval qc_workers TASK_NAME: the degraded-bot check on finished workers, optionally soft-blocking."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.options import checked
from parlai_dialeval.scripts.command_line import add_mephisto_data_arg, add_task_type_arg, write_csv


@register_script("qc_workers")
class QcWorkers(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Check every worker who finished a HIT of TASK_NAME against the "
                              "quality-control bot (Ji et al. 2022) and optionally soft-block those who fail")
        parser.add_argument("task_name", help="the Mephisto task name (mephisto.task.task_name of the launch)")
        add_mephisto_data_arg(parser)
        add_task_type_arg(parser)
        parser.add_argument("--alpha", type=checked("--alpha", "probability"), default=None,
                            help="live_chat_da: a worker passes when p < alpha (one-sided Mann-Whitney U, QC bot "
                                 "rated lower; default 0.05). Refused for pw_turn and sm_eval, whose checks are "
                                 "rules (Smith et al. App. B), not a test")
        parser.add_argument("--soft-block", type="bool", default=False,
                            help="grant failing workers the blocking qualification (no work is rejected)")
        parser.add_argument("--qualification", default="dialeval_qc_failed",
                            help="qualification granted by --soft-block; tasks name it in "
                                 "mephisto.blueprint.block_qualification")
        parser.add_argument("--out", default=None, metavar="FILE.csv", help="also write the table as CSV")
        return parser

    def run(self):
        from parlai_dialeval.crowdsourcing.platform.quality import check_workers, soft_block

        table, db = check_workers(self.opt["task_name"], self.opt["mephisto_data"], self.opt["task_type"],
                                  self.opt["alpha"])
        print(table.to_string(index=False) if len(table) else "no finished workers yet")
        failing = table.loc[~table["passed"].astype(bool), "worker_id"].tolist()
        print(f"{len(table) - len(failing)} of {len(table)} worker(s) passed")
        if self.opt["out"]:
            write_csv(table, self.opt["out"])
        if self.opt["soft_block"] and failing:
            granted = soft_block(db, failing, self.opt["qualification"])
            print(f"soft-blocked {len(granted)} worker(s) with qualification {self.opt['qualification']!r}: "
                  + ", ".join(granted))
        return table
