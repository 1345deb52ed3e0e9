"""dialeval launch TASK [hydra overrides]: run a crowdsourcing task (docs/crowdsourcing.md)."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.dashboard.server import add_server_args
from parlai_dialeval.scripts.command_line import add_mephisto_data_arg


def exit_at_once_on_interrupt() -> None:
    """The run is over, saved and said: a further Ctrl-C or SIGTERM while the process exits (the dashboard stopping,
    the interpreter's clean-up) ends it at once and successfully, instead of interrupting that clean-up, which
    printed a traceback (KeyboardInterrupt in torch's finalizers) under "Saved in ..."."""
    import os
    import signal
    import sys

    def now(signum, frame):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, now)


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
        from parlai_dialeval.gc_freeze import frozen_heap

        if self.opt["list"] or not self.opt["crowd_task"]:
            for name in registry.available_tasks():
                print(f"{name}: {registry.get_task(name).description}")
            if not self.opt["list"]:
                raise DialevalError("give a TASK to launch (one of the above)")
            return None
        owner_only()  # the run's database, raw chat and Prolific ledger: readable by the researcher only
        from parlai_dialeval.crowdsourcing.platform import launch_log
        from parlai_dialeval.crowdsourcing.platform.env import prepare_mephisto

        data_dir = prepare_mephisto(self.opt["mephisto_data"])
        log = launch_log.log_path(data_dir, self.opt["crowd_task"])
        print(f"Starting {self.opt['crowd_task']}; Mephisto's, the router's and the bots' messages go to {log}",
              flush=True)
        # SIGTERM while starting behaves as Ctrl-C does (start() then leaves no router behind)
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        with launch_log.output_to(log):
            try:
                launched = runner.start(self.opt["crowd_task"], self.opt["overrides"], data_dir=data_dir)
            except KeyboardInterrupt:
                launch_log.say("Stopped before the task started; nothing was collected.")
                return None
            dashboard = self.start_dashboard(launched) if self.opt["dashboard"] else None
            line = dashboard.announce(terminal=launch_log.terminal_is_tty()) if dashboard else None
            text = banner(launched, line, log)
            # the token reaches the terminal only, never the log file
            launch_log.say(text, text.replace(dashboard.token, "(token shown in the terminal only)")
                           if dashboard and dashboard.token and dashboard.token in text else None)
            try:
                # start-up's objects (ParlAI, torch, the bots) live as long as the launch: out of the collector's
                # full scans, one of which held every participant's reply for 0.26 s (benchmarks/README.md)
                with frozen_heap():
                    launched.serve(launch_log.say)
                exit_at_once_on_interrupt()
            finally:
                if dashboard is not None:
                    dashboard.stop()
        return None

    def start_dashboard(self, launched):
        from parlai_dialeval.dashboard.server import start
        from parlai_dialeval.dashboard.source import TaskSource
        from parlai_dialeval.errors import DialevalError

        try:
            source = TaskSource(launched.task_name, launched.data_dir, patience=self.opt["dashboard_slow_reply"])
            return start(source, self.opt["dashboard_host"], self.opt["dashboard_port"], self.opt["dashboard_refresh"],
                         token_dir=launched.data_dir / "dashboard")
        except DialevalError:
            launched.shutdown()  # never leave the task's router running behind a refused option
            raise


def banner(launched, dashboard: str | None, log) -> str:
    """The one block a researcher needs once the task runs: where participants go, the dashboard, how to
    stop, what next."""
    from parlai_dialeval.crowdsourcing.platform import runner

    cfg = launched.config
    lines = [launched.resume_note] if launched.resume_note else []
    lines.append(f"\nTask {launched.task_name!r} is running (data: {launched.data_dir}).")
    lines.append(f"  {launched.serving_note()}")
    provider = cfg.mephisto.provider._provider_type
    if provider == "mock":
        lines.append(f"  Participants: Open {launched.worker_url()} in your browser; each further participant "
                     f"needs a worker_id no one has used (e.g. {', '.join(runner.unused_worker_ids(launched.db, 3)[1:])}).")
    elif provider == "prolific":
        lines.append("  Participants: from your Prolific study (its line above).")
    else:
        lines.append(f"  Participants: from {provider} (Mephisto's log has the HIT details).")
    if dashboard:
        lines.append(f"  {dashboard}")
        lines.append(f"  (the dashboard stops with the run; `dialeval dashboard {launched.task_name}` serves it afterwards)")
    lines += ["  Stop: Ctrl-C (or SIGTERM) lets no new participant in and waits for those working; Ctrl-C again "
              "stops at once, keeping the work so far. The run also ends by itself once every unit is done.",
              f"  Then: dialeval export {launched.task_name} --out FILE.jsonl",
              f"  Log: {log}\n"]
    return "\n".join(lines)
