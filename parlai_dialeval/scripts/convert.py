"""dialeval convert: import another format into the canonical data model (one JSON Lines file)."""
from __future__ import annotations

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.importers import IMPORTERS, load
from parlai_dialeval.importers.registry import load_importer_modules


def _formats_help() -> str:
    load_importer_modules()
    return "; ".join(f"{name}: {imp.help}" for name, imp in sorted(IMPORTERS.items()))


@register_script("convert")
class Convert(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Convert evaluation data into the canonical data model")
        parser.add_argument("--data", nargs="+", required=True, metavar="PATH",
                            help="files or folders to import")
        parser.add_argument("--from", dest="data_format", default=None, metavar="FORMAT",
                            help="input format, detected when omitted. Formats: " + _formats_help())
        parser.add_argument("--out", required=True, metavar="FILE.jsonl", help="canonical JSON Lines output")
        return parser

    def run(self):
        data = load(self.opt["data"], fmt=self.opt.get("data_format"))
        written = data.save(self.opt["out"])
        counts = ", ".join(f"{n} {t}s" for t, n in data.counts().items() if n)
        print(f"wrote {written} records ({counts}) to {self.opt['out']}")
        return data
