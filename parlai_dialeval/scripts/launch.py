"""dialeval launch TASK [hydra overrides]: run a crowdsourcing task (docs/crowdsourcing.md)."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script


@register_script("launch")
class Launch(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Launch a crowdsourcing task (default: locally, LocalArchitect + "
                              "MockProvider + SQLite; MTurk through overrides, see docs/crowdsourcing.md)")
        parser.add_argument("crowd_task", metavar="TASK", nargs="?", default=None,
                            help="task folder in crowdsourcing/ (e.g. live_chat_da); --list shows them")
        parser.add_argument("overrides", nargs="*", default=[],
                            help="Hydra overrides, e.g. conf=example mephisto.architect.port=3100 live_chat.num_slots=4")
        parser.add_argument("--mephisto-data", default=None, metavar="DIR",
                            help="Mephisto data directory (database, agent data); default data/mephisto "
                                 "or $DIALEVAL_MEPHISTO_DATA")
        parser.add_argument("--list", action="store_true", help="list the available tasks and exit")
        return parser

    def run(self):
        from parlai_dialeval.crowdsourcing.platform import registry, runner
        from parlai_dialeval.errors import DialevalError

        if self.opt["list"] or not self.opt["crowd_task"]:
            for name in registry.available_tasks():
                print(f"{name}: {registry.get_task(name).description}")
            if not self.opt["list"]:
                raise DialevalError("give a TASK to launch (one of the above)")
            return None
        launched = runner.start(self.opt["crowd_task"], self.opt["overrides"], data_dir=self.opt["mephisto_data"])
        cfg = launched.config
        print(f"\nTask {cfg.mephisto.task.task_name!r} is running (data: {launched.data_dir}).")
        if cfg.mephisto.provider._provider_type == "mock":
            print(f"Open {launched.worker_url('worker_1')} in your browser; use a new worker_id for each "
                  "further worker.")
        print("The run ends by itself once every unit is done. To stop it earlier press Ctrl-C, then Ctrl-C "
              "once more when Mephisto says it is waiting on task runs (work saved so far is kept).")
        print(f"Then: dialeval export {cfg.mephisto.task.task_name} --out FILE.jsonl\n", flush=True)
        launched.wait()  # Mephisto handles Ctrl-C itself (expire units, then force quit)
        return None
