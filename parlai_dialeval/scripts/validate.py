"""dialeval validate: check files against the canonical data model."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.data.validate import check_turns_usable
from parlai_dialeval.scripts.command_line import add_data_args, load_data


@register_script("validate")
class Validate(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Check evaluation data against the canonical data model")
        add_data_args(parser, out=None)
        return parser

    def run(self):
        data = load_data(self.opt, set_aside_checks=False)
        check_turns_usable(data)  # what an analysis would leave out is a defect of the file
        for record_type, count in data.counts().items():
            print(f"{record_type}: {count}")
        print("valid")
        return data.counts()
