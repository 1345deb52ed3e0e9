"""dialeval launch TASK [hydra overrides]: run a crowdsourcing task (docs/crowdsourcing.md)."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.dashboard.server import add_server_args
from parlai_dialeval.scripts.command_line import add_mephisto_data_arg


@register_script("launch")
class Launch(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Launch a crowdsourcing task (default: locally, LocalArchitect + "
                              "MockProvider + SQLite; Prolific with mephisto/provider=prolific, MTurk through "
                              "overrides, see docs/crowdsourcing.md). Ctrl-C "
                              "or SIGTERM lets no new worker in and waits for those working; a second stops at "
                              "once. Launching a task name whose run was killed resumes that run.")
        parser.add_argument("crowd_task", metavar="TASK", nargs="?", default=None,
                            help="task folder in crowdsourcing/ (e.g. live_chat_da); --list shows them")
        parser.add_argument("overrides", nargs="*", default=[],
                            help="Hydra overrides, e.g. conf=example mephisto.architect.port=3100 live_chat.num_slots=4")
        add_mephisto_data_arg(parser)
        parser.add_argument("--list", action="store_true", help="list the available tasks and exit")
        parser.add_argument("--dashboard", action="store_true",
                            help="also serve the study's dashboard (as `dialeval dashboard`) on its own port while "
                                 "the task runs; it prints the address and its access token (the token only on a "
                                 "terminal; with the output in a file, the name of the token's file, readable by "
                                 "you only)")
        add_server_args(parser, "dashboard-")
        return parser

    def run(self):
        import signal

        from parlai_dialeval.atomic import owner_only
        from parlai_dialeval.crowdsourcing.platform import registry, runner
        from parlai_dialeval.errors import DialevalError

        if self.opt["list"] or not self.opt["crowd_task"]:
            for name in registry.available_tasks():
                print(f"{name}: {registry.get_task(name).description}")
            if not self.opt["list"]:
                raise DialevalError("give a TASK to launch (one of the above)")
            return None
        owner_only()  # the run's database, raw chat and Prolific ledger: readable by the researcher only
        # SIGTERM while starting behaves as Ctrl-C does (start() then leaves no router behind)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        try:
            launched = runner.start(self.opt["crowd_task"], self.opt["overrides"], data_dir=self.opt["mephisto_data"])
        except KeyboardInterrupt:
            print("Stopped before the task started; nothing was collected.")
            return None
        cfg = launched.config
        if launched.resume_note:
            print(launched.resume_note)
        print(f"\nTask {launched.task_name!r} is running (data: {launched.data_dir}).")
        print(launched.serving_note())
        if cfg.mephisto.provider._provider_type == "mock":
            print(f"Open {launched.worker_url()} in your browser. Each further worker needs a worker_id no one "
                  f"has used: change worker_id= in the URL (e.g. {', '.join(runner.unused_worker_ids(launched.db, 3)[1:])}).")
        print("The run ends by itself once every unit is done. To stop it earlier press Ctrl-C (or send SIGTERM): "
              "no new workers are let in and the run waits for those working; press Ctrl-C again to stop at once "
              "(work saved so far is kept).")
        print(f"Then: dialeval export {launched.task_name} --out FILE.jsonl\n", flush=True)
        dashboard = self.start_dashboard(launched) if self.opt["dashboard"] else None
        try:
            launched.serve()
        finally:
            if dashboard is not None:
                dashboard.stop()
        return None

    def start_dashboard(self, launched):
        from parlai_dialeval.dashboard.server import start
        from parlai_dialeval.dashboard.source import TaskSource
        from parlai_dialeval.errors import DialevalError

        try:
            dashboard = start(TaskSource(launched.task_name, launched.data_dir), self.opt["dashboard_host"],
                              self.opt["dashboard_port"], self.opt["dashboard_refresh"],
                              token_dir=launched.data_dir / "dashboard")
        except DialevalError:
            launched.shutdown()  # never leave the task's router running behind a refused option
            raise
        print(dashboard.announce(), flush=True)
        print(f"(it stops with the run; `dialeval dashboard {launched.task_name}` serves it afterwards)\n", flush=True)
        return dashboard
