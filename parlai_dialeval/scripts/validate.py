"""dialeval validate: check files against the canonical data model."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.importers import load


@register_script("validate")
class Validate(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Check evaluation data against the canonical data model")
        parser.add_argument("--data", nargs="+", required=True, metavar="PATH",
                            help="canonical JSON Lines files (or importable sources, checked after import)")
        parser.add_argument("--from", dest="data_format", default=None, metavar="FORMAT",
                            help="force the input format (see `dialeval convert --help`)")
        return parser

    def run(self):
        data = load(self.opt["data"], fmt=self.opt.get("data_format"))
        for record_type, count in data.counts().items():
            print(f"{record_type}: {count}")
        print("valid")
        return data.counts()
