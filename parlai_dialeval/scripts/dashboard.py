"""dialeval dashboard TASK_NAME: a page in the browser that watches a study (progress, quality, money,
bots) and reviews it (docs/crowdsourcing.md, "Watch a study: the dashboard")."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.scripts.command_line import add_mephisto_data_arg, add_task_type_arg


@register_script("dashboard")
class Dashboard(ParlaiScript):
    @classmethod
    def setup_args(cls):
        from parlai_dialeval.dashboard.server import add_server_args

        parser = ParlaiParser(False, False, "Serve a dashboard of TASK_NAME's progress, quality and standings. "
                              "It shows the units done, in flight and left, per model or pair; each participant's quality check and conversations; on Prolific the "
                              "money spent and committed and the review actions of `dialeval review`; each bot's mean "
                              "rating per criterion or each pair's win rate so far, with charts; bot latency "
                              "(warned when too slow for people) and failures; the certified ranking of adaptive runs. It reads what `dialeval export` "
                              "reads, while the task runs or after. Access needs the token it prints on a terminal "
                              "(or keeps in a file readable by you only, named in the output, when the output "
                              "goes to a file) or the password in $DIALEVAL_DASHBOARD_PASSWORD. Ctrl-C stops it.")
        parser.add_argument("task_name", help="the Mephisto task name (mephisto.task.task_name of the launch)")
        add_mephisto_data_arg(parser)
        add_task_type_arg(parser)
        add_server_args(parser)
        return parser

    def run(self):
        import threading

        from parlai_dialeval.dashboard.server import start
        from parlai_dialeval.dashboard.source import TaskSource

        source = TaskSource(self.opt["task_name"], self.opt["mephisto_data"], self.opt["task_type"],
                            patience=self.opt["slow_reply"])
        source.snapshot()  # a task name never launched stops here, with the export's message
        dashboard = start(source, self.opt["host"], self.opt["port"], self.opt["refresh"],
                          token_dir=source.data_dir / "dashboard")
        print(dashboard.announce(), flush=True)
        print("Press Ctrl-C to stop it.", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        finally:
            dashboard.stop()
        print("Dashboard stopped.")
        return None
