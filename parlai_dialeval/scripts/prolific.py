"""dialeval prolific register NAME: store a Prolific API token for launches (docs/crowdsourcing.md)."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.scripts.command_line import add_mephisto_data_arg


@register_script("prolific")
class Prolific(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Prolific accounts: `dialeval prolific register NAME --token-env VAR` "
                              "checks the API token with Prolific and stores it (mode 0600) in the Mephisto data "
                              "directory; launch with mephisto/provider=prolific mephisto.provider.requester_name=NAME")
        parser.add_argument("action", choices=["register"], help="register: store a requester's API token")
        parser.add_argument("name", metavar="NAME", help="requester name to launch with (any name you choose)")
        parser.add_argument("--token-env", default=None, metavar="VAR",
                            help="environment variable holding the token (Prolific: Settings > API tokens)")
        parser.add_argument("--token-file", default=None, metavar="PATH",
                            help="file whose first line is the token (instead of --token-env)")
        parser.add_argument("--api-base-url", default=None, metavar="URL",
                            help="Prolific API address (default https://api.prolific.com/api/v1/; the fake's "
                                 "address to rehearse, see `python -m parlai_dialeval.providers.prolific.fake`)")
        add_mephisto_data_arg(parser)
        return parser

    def run(self):
        from parlai_dialeval.crowdsourcing.platform.env import database_path, prepare_mephisto

        data_dir = prepare_mephisto(self.opt["mephisto_data"])
        from mephisto.abstractions.databases.local_database import LocalMephistoDB

        from parlai_dialeval.errors import DialevalError
        from parlai_dialeval.providers.prolific.models import ProlificRequester, register_token

        name = self.opt["name"]
        db = LocalMephistoDB(database_path=str(database_path(data_dir)))
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
