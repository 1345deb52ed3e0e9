"""dialeval convert: import another format into the canonical data model (one JSON Lines file)."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.scripts.command_line import add_data_args, load_data

IRREGULAR_PLURALS = {"study": "studies"}  # the other record types take an s


@register_script("convert")
class Convert(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Convert evaluation data into the canonical data model")
        add_data_args(parser, out="FILE.jsonl", formats_help=True)
        return parser

    def run(self):
        data = load_data(self.opt, set_aside_checks=False)
        written = data.save(self.opt["out"])
        counts = ", ".join(f"{n} {t if n == 1 else IRREGULAR_PLURALS.get(t, t + 's')}"
                           for t, n in data.counts().items() if n)
        print(f"wrote {written} records ({counts}) to {self.opt['out']}")
        return data
