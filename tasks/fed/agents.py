"""``-t dialeval:fed``: the FED dataset (Mehri and Eskenazi 2020), turn and dialog level.

One example per FED item: ``text`` is the conversation (``speaker: text`` lines, the rated response
apart in ``response`` for turn-level items), ``labels`` the annotators' mean for ``--fed-criterion``
(default overall), and ``ratings`` every annotator label of every quality. Parsed by the ``fed``
importer (``parlai_dialeval.importers.formats.fed``), so the teacher and ``dialeval convert`` agree.
FED has no splits: every datatype sees all items.
"""
from __future__ import annotations

from pathlib import Path

from parlai_dialeval.tasks.canonical_teacher import CanonicalTeacher, item_example, load_records
from parlai_dialeval.shared_data import resolve

SOURCE = ("https://github.com/DSincerity/FED_Replication (fed_data.json; original: "
          "http://shikib.com/fed_data.json)")


class FedTeacher(CanonicalTeacher):
    @classmethod
    def add_cmdline_args(cls, parser, partial_opt=None):
        super().add_cmdline_args(parser, partial_opt)
        group = parser.add_argument_group("FED dataset")
        group.add_argument("--fed-datafile", type=str, default=None,
                           help="fed_data.json (default: $DIALEVAL_SHARED_DATA/fed/fed_data.json, "
                                "else ../shared/data/fed/fed_data.json beside the repository)")
        group.add_argument("--fed-level", type=str, default="both", choices=["turn", "dialog", "both"],
                           help="which FED items to show")
        group.add_argument("--fed-criterion", type=str, default="overall",
                           help="quality whose annotator mean is the label (lower case, e.g. interesting)")
        return parser

    def __init__(self, opt, shared=None):
        self.id = "fed"
        self.level = opt.get("fed_level", "both")
        self.criterion = opt.get("fed_criterion", "overall")
        super().__init__(opt, shared)

    @staticmethod
    def data_path(opt) -> Path:
        return resolve(opt.get("fed_datafile"), "fed/fed_data.json", "The FED dataset",
                       "--fed-datafile", SOURCE)

    def episodes(self, path: Path):
        conversations, ratings = load_records(path, "fed")
        for conversation in conversations:
            level = conversation["meta"]["level"]
            if self.level in ("both", level):
                yield [item_example(conversation, ratings.get(conversation["id"], {}), self.criterion,
                                    response_is_last=level == "turn") | {"level": level}]


class DefaultTeacher(FedTeacher):
    pass
