"""dialeval publish --data ... --out DIR --statement TEXT: a study as a Hugging Face dataset folder (Parquet
per record type, preference pairs, rated dialogues, dataset card), pseudonymised and scrubbed; ``--push
REPO`` uploads it to the Hub. CLI glue: parlai_dialeval/publish/ does the work. docs/publishing.md."""
from __future__ import annotations

from pathlib import Path

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.options import checked
from parlai_dialeval.scripts.command_line import add_data_args

QC_RULE = ("Quality-control rule: Smith et al. (2022) Appendix B checks on every message a worker typed "
           "(too short, all capitals, offensive words, copying the bot, ...; docs/crowdsourcing_protocols.md); a "
           "worker failing one in any conversation is flagged. Workers who typed no messages (A/B, ACUTE, "
           "PW-Turn judgments only) are never checked.")


def _text_or_file(text: str) -> str:
    """TEXT, or the contents of FILE for @FILE."""
    if text.startswith("@"):
        path = Path(text[1:])
        if not path.is_file():
            raise DialevalError(f"{text}: no such file (expected @FILE holding the statement)")
        return path.read_text(encoding="utf-8")
    return text


@register_script("publish")
class Publish(ParlaiScript):
    @classmethod
    def setup_args(cls):
        from parlai_dialeval.publish.preferences import STYLES, TIES, VOTES

        parser = ParlaiParser(False, False, "Publish a study as a Hugging Face dataset folder (Parquet per record "
                              "type, TRL preference pairs, rated dialogues, dataset card), worker ids pseudonymised "
                              "and text scrubbed first; the raw data are never changed (docs/publishing.md)")
        add_data_args(parser, out=None)
        group = parser.add_argument_group("Publishing")
        group.add_argument("--out", required=True, metavar="DIR",
                           help="the dataset folder to write: a new (or empty) folder, not inside or around an input's "
                                "folder; it appears complete or not at all")
        group.add_argument("--statement", default=None, metavar="TEXT|@FILE",
                           help="required: the consent and anonymisation statement quoted in the card (what "
                                "participants agreed to, how their data were anonymised); @FILE reads it from FILE")
        group.add_argument("--key-file", default=None, metavar="FILE",
                           help="the secret key of the worker pseudonyms (created owner-only when missing; keep it "
                                "to map ids the same way in later releases; never published). Default: "
                                "$DIALEVAL_HOME/publish_keys/<first study name>.key")
        group.add_argument("--names", default=None, metavar="FILE",
                           help="names to scrub from text, one per line, found in any case and spacing (no name "
                                "recogniser runs offline; e-mail addresses, phone numbers, URLs and the study's ids "
                                "are always scrubbed)")
        group.add_argument("--strict", type="bool", default=False,
                           help="refuse to publish (write nothing) while a high-risk pattern is left in the text after "
                                "scrubbing: a run of 9 or more digits, an @ next to a word, an at ... dot address, an "
                                "id-like token (docs/publishing.md)")
        group.add_argument("--phone-region", default="US", metavar="CC", type=_region,
                           help="two-letter region whose national phone numbers are recognised (international "
                                "+CC numbers always are)")
        group.add_argument("--license", default="cc-by-4.0", help="license id for the card (Hub license identifiers)")
        group.add_argument("--language", default="en", help="language code of the texts, for the card")
        group.add_argument("--pretty-name", default=None, help="the dataset's title (default: the study names)")
        group.add_argument("--alpha", type=checked("--alpha", "probability"), default=0.05,
                           help="significance level of the headline result (analyze_pairwise's verdict)")
        pairs = parser.add_argument_group("Preference pairs and rated dialogues")
        pairs.add_argument("--pairs-ties", default="drop", choices=TIES,
                           help="drop ties, or keep them with tie: true (chosen = option A)")
        pairs.add_argument("--pairs-votes", default="every", choices=VOTES,
                           help="every vote a pair, or one pair per item by majority vote (a draw is a tie)")
        pairs.add_argument("--pairs-workers", default="passing", choices=("passing", "all"),
                           help="only workers passing the quality-control rule, or all")
        pairs.add_argument("--pairs-style", default="raw", choices=STYLES,
                           help="raw: every pair; matched: only pairs whose two replies have the same style (length "
                                "within about 20%%, the same markdown, questions and emoji), so a model trained on "
                                "them cannot learn that longer or more formatted replies win")
        hub = parser.add_argument_group("Hugging Face Hub")
        hub.add_argument("--push", default=None, metavar="OWNER/NAME",
                         help="upload the folder to this dataset repository (created private when missing); needs a "
                              "token (HF_TOKEN or `hf auth login`)")
        hub.add_argument("--public", type="bool", default=False,
                         help="create the repository public rather than private (an existing one keeps its setting)")
        return parser

    def run(self):
        return run(self.opt)


def _region(text: str) -> str:
    if len(text) != 2 or not text.isalpha():
        raise DialevalError(f"--phone-region {text}: expected a two-letter region code such as US or GB")
    return text.upper()


def _names(path: str | None) -> tuple[str, ...]:
    if path is None:
        return ()
    if not Path(path).is_file():
        raise DialevalError(f"--names {path}: no such file (expected one name per line)")
    return tuple(line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip())


def headline(data, alpha: float) -> list[str]:
    """analyze_pairwise's verdict on the comparisons (the first paragraphs of its report, with its default
    correction for multiple tests); [] without any."""
    from parlai_dialeval import verdict
    from parlai_dialeval.analysis import pairwise
    from parlai_dialeval.analysis.multiple_testing import DEFAULT_CORRECTION
    from parlai_dialeval.analysis.pairwise_tables import win_rate_table

    comparisons, _ = pairwise.split_voided(pairwise.split_onboarding(data.comparisons)[0])
    if comparisons.empty:
        return []
    return verdict.pairwise(win_rate_table(pairwise.with_sections(comparisons), alpha, DEFAULT_CORRECTION), alpha)


def run(opt, log=print):
    """The command's work; ``log`` None keeps it quiet (tests)."""
    log = log or (lambda *_: None)
    from parlai_dialeval.atomic import owner_only
    from parlai_dialeval.home import dialeval_home
    from parlai_dialeval.publish.folder import PublishOptions, publish, refuse_unsafe_target
    from parlai_dialeval.publish.preferences import PairOptions
    from parlai_dialeval.publish.privacy import read_or_create_key
    from parlai_dialeval.scripts.command_line import load_data
    from parlai_dialeval.scripts.worker_check_option import run_worker_checks

    statement = _text_or_file(opt["statement"]) if opt.get("statement") else ""
    if not statement.strip():
        raise DialevalError("--statement is required: the consent and anonymisation statement the card quotes "
                            "(what participants agreed to, how their data were anonymised); TEXT or @FILE")
    options = PublishOptions(statement=statement, license=opt["license"], language=opt["language"],
                             names=_names(opt.get("names")), phone_region=opt["phone_region"],
                             strict=bool(opt.get("strict")),
                             pretty_name=opt.get("pretty_name"),
                             pairs=PairOptions(opt["pairs_ties"], opt["pairs_votes"],
                                               opt["pairs_workers"] == "passing", opt["pairs_style"]))
    data = load_data(opt, log=log)  # prints each importer's read/kept/skipped report
    flagged, checked = set(), 0
    if len(data.conversation_fields()):  # without conversations no one typed a message (and the checker's import is slow)
        _, checks = run_worker_checks(data, "report")
        flagged, checked = set(checks.flagged()), len(checks.table)
    facts = {}  # the card's facts about the data come from the published records (publish/folder.py)
    excluded = sum(int(frame["worker_id"].isin(flagged).sum())
                   for frame in (data.conversation_fields(), data.ratings, data.comparisons))
    facts["qc"] = {"rule": QC_RULE, "workers_checked": checked, "flagged": len(flagged), "records_excluded": excluded}
    facts["headline"] = headline(data, opt["alpha"])
    owner_only()  # the key file, and the folder until it is published
    study = data.studies[0]["name"] if data.studies else "default"
    key_file = Path(opt.get("key_file") or dialeval_home() / "publish_keys" / f"{_file_name(study)}.key")
    inputs = [Path(p) for p in opt["data"]] + [key_file]
    refuse_unsafe_target(Path(opt["out"]), inputs)  # before the key is made: a refused run leaves nothing behind
    key = read_or_create_key(key_file, log=log)
    published = publish(data, Path(opt["out"]), key, options, facts, flagged, inputs)
    log(published.summary())
    if opt.get("push"):
        from parlai_dialeval.publish.hub import push

        url = push(published.folder, opt["push"], private=not opt.get("public"))
        log(f"pushed to {url}")
    return published


def _file_name(study: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in study)[:100] or "default"
