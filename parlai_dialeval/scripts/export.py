"""dialeval export TASK_NAME --out FILE.jsonl: a Mephisto task's data in the canonical data model."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.scripts.command_line import add_mephisto_data_arg, add_task_type_arg, output_file


@register_script("export")
class Export(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Export everything a crowdsourcing task collected (incomplete and "
                              "returned work and onboarding attempts included, marked) to canonical JSON Lines")
        parser.add_argument("task_name", help="the Mephisto task name (mephisto.task.task_name of the launch)")
        parser.add_argument("--out", required=True, metavar="FILE.jsonl", type=output_file,
                            help="canonical JSON Lines output (a missing folder is created, and said so); when the "
                                 "launch asked the optional questionnaire (TASK.questionnaire.enabled=true), its "
                                 "consented answers go apart from the votes to FILE.participants.csv (owner-only), for "
                                 "analyze_pairwise --participants")
        add_mephisto_data_arg(parser)
        add_task_type_arg(parser)
        return parser

    def run(self):
        from pathlib import Path

        from parlai_dialeval.atomic import owner_only
        from parlai_dialeval.crowdsourcing.platform.export import export_task

        owner_only()  # the export holds participants' ids and words
        folder = Path(self.opt["out"]).parent
        missing = not folder.exists()
        # The writer makes the folder once there is something to write: a task that was never launched
        # leaves nothing behind.
        report = export_task(self.opt["task_name"], self.opt["out"], data_dir=self.opt["mephisto_data"],
                             task_type=self.opt["task_type"])
        if missing:
            print(f"created folder {folder}")
        print(report.summary())
        print(f"wrote {self.opt['out']}")
        if report.questions:
            from parlai_dialeval.crowdsourcing.platform.questionnaire import participants_path

            print(f"wrote {participants_path(self.opt['out'])} (the questionnaire's answers; keep it private)")
        return report
