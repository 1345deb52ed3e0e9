"""dialeval prolific register|panel|demographics: a Prolific account's token, its panels of trusted raters, and
who took part in a study (docs/crowdsourcing.md, "Run your study on Prolific")."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.scripts.command_line import add_mephisto_data_arg

USAGE = """Prolific accounts, panels and participants:
  dialeval prolific register NAME --token-env VAR   check the API token with Prolific, store it (mode 0600)
  dialeval prolific panel create PANEL              a participant group of the workspace (your trusted raters)
  dialeval prolific panel add PANEL PID [PID ...]   add participants to it
  dialeval prolific panel list                      the workspace's panels and their sizes
  dialeval prolific demographics TASK               Prolific's demographic export of the task's studies, stored
                                                    beside the study, readable by you only (never in the votes)
Launch with mephisto/provider=prolific mephisto.provider.requester_name=NAME (mephisto.provider.panel=PANEL
admits only its members; mephisto.provider.add_to_panel=PANEL adds everyone whose work is completed)."""


@register_script("prolific")
class Prolific(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, USAGE)
        parser.add_argument("action", choices=["register", "panel", "demographics"],
                            help="register: store a requester's API token; panel: create, add, list; demographics: "
                                 "fetch a study's demographic export")
        parser.add_argument("args", nargs="*", metavar="ARG", help="what the action takes (see above)")
        parser.add_argument("--token-env", default=None, metavar="VAR",
                            help="register: environment variable holding the token (Prolific: Settings > API tokens)")
        parser.add_argument("--token-file", default=None, metavar="PATH",
                            help="register: file whose first line is the token (instead of --token-env)")
        parser.add_argument("--api-base-url", default=None, metavar="URL",
                            help="register: Prolific API address (default https://api.prolific.com/api/v1/; the "
                                 "fake's address to rehearse, see `python -m parlai_dialeval.providers.prolific.fake`)")
        parser.add_argument("--requester", default=None, metavar="NAME",
                            help="panel: the registered requester whose workspace holds the panels (default: the only "
                                 "one registered)")
        parser.add_argument("--workspace", default=None, metavar="TITLE",
                            help="panel: the workspace (default: your first, as launches use)")
        parser.add_argument("--out", default=None, metavar="FILE.csv",
                            help="demographics: where to write the export (default <mephisto data>/prolific/"
                                 "demographics/TASK.csv); written readable by you only")
        add_mephisto_data_arg(parser)
        return parser

    def run(self):
        from parlai_dialeval.crowdsourcing.platform.env import database_path, prepare_mephisto

        data_dir = prepare_mephisto(self.opt["mephisto_data"])
        from mephisto.abstractions.databases.local_database import LocalMephistoDB

        db = LocalMephistoDB(database_path=str(database_path(data_dir)))
        action, args = self.opt["action"], list(self.opt["args"] or [])
        if action == "register":
            return self.register(db, args)
        if action == "panel":
            return self.panel(db, args)
        return self.demographics(db, data_dir, args)

    def register(self, db, args: list[str]) -> str:
        from parlai_dialeval.errors import DialevalError
        from parlai_dialeval.providers.prolific.models import ProlificRequester, register_token

        if len(args) != 1:
            raise DialevalError("prolific register NAME: name the requester (any name you choose)")
        name = args[0]
        found = db.find_requesters(requester_name=name)
        if found and found[0].provider_type != "prolific":
            raise DialevalError(f"requester {name!r} already exists for provider {found[0].provider_type}; "
                                "choose another NAME")
        # the token is checked before the requester is created: a bad token leaves nothing behind
        base = register_token(name, self.opt["token_env"], self.opt["token_file"], self.opt["api_base_url"])
        if not found:
            ProlificRequester.new(db, name)
        print(f"registered Prolific requester {name!r} (token checked with {base}); launch with "
              f"mephisto/provider=prolific mephisto.provider.requester_name={name}")
        return name

    def panel(self, db, args: list[str]):
        from parlai_dialeval.errors import DialevalError
        from parlai_dialeval.providers.prolific import common, panels
        from parlai_dialeval.providers.prolific.review import masked
        from parlai_dialeval.providers.prolific.settings import find_workspace

        verb = args[0] if args else None
        if verb not in ("create", "add", "list") or (verb != "list" and len(args) < 2):
            raise DialevalError("prolific panel create PANEL | add PANEL PID [PID ...] | list")
        client = common.client_for(self.requester(db))
        try:
            workspace = find_workspace(client, self.opt["workspace"])
            if verb == "create":
                group = panels.create(client, workspace["id"], args[1])
                print(f"panel {args[1]!r} created ({group}) in workspace {workspace['title']!r}")
                return group
            if verb == "add":
                members = panels.add(client, workspace["id"], args[1], args[2:])
                print(f"added {', '.join(masked(p) for p in args[2:])} to panel {args[1]!r}: {members} member(s)")
                return members
            found = panels.listing(client, workspace["id"])
            for row in found:
                print(f"{row['name']}\t{row['members']} member(s)\t{row['id']}")
            if not found:
                print(f"no panels in workspace {workspace['title']!r}: `dialeval prolific panel create PANEL`")
            return found
        finally:
            client.close()

    def requester(self, db) -> str:
        from parlai_dialeval.errors import DialevalError

        known = [r.requester_name for r in db.find_requesters(provider_type="prolific")]
        name = self.opt["requester"] or (known[0] if len(known) == 1 else None)
        if name is None:
            raise DialevalError("--requester NAME: which registered Prolific requester "
                                f"({', '.join(known) or 'none yet: `dialeval prolific register NAME`'})")
        return name

    def demographics(self, db, data_dir, args: list[str]):
        from parlai_dialeval.errors import DialevalError
        from parlai_dialeval.providers.prolific import demographics

        if len(args) != 1:
            raise DialevalError("prolific demographics TASK: the task name of the launch (or a Prolific study id)")
        path, rows = demographics.fetch(db, args[0], data_dir, self.opt["out"])
        print(f"wrote {rows} participant row(s) of {args[0]!r} to {path} (readable by you only; personal data: "
              "never published, never in the votes file; read it with parlai_dialeval.data.participants)")
        return path
