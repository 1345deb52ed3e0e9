"""A study as a Hugging Face dataset folder: one Parquet configuration per record type (studies,
conversations, ratings, comparisons) plus preference_pairs and rated_dialogues, written with the
``datasets`` library; worker and assignment ids pseudonymised and free text scrubbed first
(publish/privacy.py); a dataset card (README.md) saying what was collected and how; ``dialeval.json``
(what the importer of published folders reads back) and ``scrub_report.csv`` (where text was replaced,
never what). Written into a new folder, which appears complete or not at all. docs/publishing.md.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from parlai_dialeval.data import EvalData, schema
from parlai_dialeval.data.dataset import FRAME_TYPES
from parlai_dialeval.data.parquet import CONFIGS, MANIFEST, table_of
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.publish.card import describe, renamed_in, write_card
from parlai_dialeval.publish.coarse import coarse_integrity
from parlai_dialeval.publish.detectors import DETECTORS, MIN_ID_LENGTH, KnownIds
from parlai_dialeval.publish.fields import PSEUDONYM, TEXT, TURNS, Publication, fields_with, study_ids
from parlai_dialeval.publish.preferences import PairOptions, preference_pairs, rated_dialogues
from parlai_dialeval.publish.privacy import Pseudonymiser, ScrubReport, Scrubber

SCRUB_REPORT = "scrub_report.csv"
SPLIT = "train"  # one study is not a train/test partition: the Hub's single-split convention


@dataclass
class PublishOptions:
    statement: str            # the researcher's consent and anonymisation statement, quoted in the card
    license: str = "cc-by-4.0"
    language: str = "en"
    names: tuple[str, ...] = ()
    phone_region: str = "US"
    strict: bool = False      # refuse to publish while a high-risk pattern is left in the text
    pairs: PairOptions = field(default_factory=PairOptions)
    pretty_name: str | None = None


@dataclass
class Published:
    folder: Path
    counts: dict                 # config -> rows
    scrubbed: Counter            # kind -> replacements
    pseudonymised: dict          # field -> distinct ids replaced
    left_out: dict               # config -> {reason: count}
    scrub: dict = field(default_factory=dict)  # scrub_facts(): the detectors' table, high-risk patterns left

    def summary(self) -> str:
        rows = ", ".join(f"{n} {c}" for c, n in self.counts.items())
        ids = ", ".join(f"{n} {f}s" for f, n in sorted(self.pseudonymised.items())) or "none"
        lines = [f"wrote {self.folder}: {rows}", f"pseudonymised {ids}; replaced in text (see {SCRUB_REPORT}):"]
        lines += [f"  {d['replaced']} {d['kind']}: {d['covers']}; not found: {d['cannot']}" for d in self.scrub["detectors"]]
        lines.append(f"  names listed: {self.scrub['names']}" if self.scrub["names"] else
                     "  no --names list: no name is scrubbed (no name recogniser runs offline)")
        lines.append(f"  ids searched for in text: {self.scrub['ids_searched']}; not searched (shorter than "
                     f"{self.scrub['id_min_length']} characters or without a digit): {self.scrub['ids_not_searched']}")
        left = ", ".join(f"{n} {k}" for k, n in self.scrub["left"].items())
        lines.append(f"high-risk patterns left in text: {left} (listed in {SCRUB_REPORT}; --strict refuses them)" if left
                     else "high-risk patterns left in text: none")
        for config, reasons in self.left_out.items():
            lines += [f"  {config}: left out {n} {why}" for why, n in reasons.items()]
        return "\n".join(lines)


def refuse_unsafe_target(out: Path, inputs: list[Path]) -> None:
    """Never overwrite: the target must not exist (or be an empty folder) and must not lie in, or hold, an
    input's folder (the raw data stays untouched beside nothing published)."""
    out = out.resolve()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DialevalError(f"--out {out}: already exists and is not empty (publish writes a new folder; "
                            "choose another name)")
    for path in inputs:
        folder = path.resolve() if path.is_dir() else path.resolve().parent
        if out == folder or folder in out.parents or out in folder.parents:
            raise DialevalError(f"--out {out}: inside or around the input's folder {folder} (publish never writes "
                                "beside the raw data; choose a folder elsewhere)")


def _write_config(table, folder: Path, config: str) -> str:
    from datasets import Dataset, disable_progress_bars
    from datasets.table import InMemoryTable

    disable_progress_bars()  # one bar per configuration says nothing the summary does not

    path = Path("data") / config / f"{SPLIT}-00000-of-00001.parquet"
    (folder / path).parent.mkdir(parents=True, exist_ok=True)
    Dataset(InMemoryTable(table)).to_parquet(str(folder / path))
    return str(path)


def _pairs_table(rows: list[dict], columns: dict):
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=pa.schema(columns))


def _pair_columns():
    import pyarrow as pa

    messages = pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    preference = {"prompt": messages, "chosen": messages, "rejected": messages, "tie": pa.bool_(),
                  "model_chosen": pa.string(), "model_rejected": pa.string(), "item_id": pa.string(),
                  "question": pa.string(), "study": pa.string(), "worker_id": pa.string(), "votes": pa.int64()}
    rated = {"messages": messages, "model": pa.string(), "criterion": pa.string(), "scale": pa.string(),
             "scale_min": pa.float64(), "scale_max": pa.float64(), "score": pa.float64(), "turn_index": pa.int64(),
             "conversation_id": pa.string(), "worker_id": pa.string(), "study": pa.string()}
    return preference, rated


def publish(data: EvalData, out: Path, key: bytes, options: PublishOptions, card: dict,
            flagged_workers: set[str] = frozenset(), inputs: list[Path] = ()) -> Published:
    """Write the dataset folder ``out`` from ``data`` (``flagged_workers``: raw ids failing quality control;
    ``card``: what the card says beyond the data, see publish/card.py)."""
    out = Path(out)
    refuse_unsafe_target(out, list(inputs))
    if not options.statement or not options.statement.strip():
        raise DialevalError("no consent and anonymisation statement (--statement TEXT or @FILE): a published "
                            "dataset must say what participants agreed to and how their data were anonymised")
    data, checks_left_out = coarse_integrity(data)  # how answers were made: a coarse form only (publish/coarse.py)
    frames = {t: data.frame(t) for t in FRAME_TYPES}
    known = KnownIds(study_ids(data.studies, frames))
    privacy = Publication(Pseudonymiser(key), Scrubber(options.names, options.phone_region, known), known)
    public = EvalData(privacy.studies(data.studies), *(privacy.frame(t, frames[t]) for t in FRAME_TYPES))
    scrub = scrub_facts(privacy.report, known, privacy.scrubber.names.count)
    if options.strict and privacy.report.left:
        raise DialevalError(strict_refusal(privacy.report))
    flagged = {privacy.pseudonymise("worker_id", w) for w in flagged_workers}
    tables = {CONFIGS["study"]: table_of("study", pd.DataFrame.from_records(public.studies))}
    tables.update({CONFIGS[t]: table_of(t, public.frame(t)) for t in FRAME_TYPES})
    pairs, pairs_left = preference_pairs(public.comparisons, public.conversations, options.pairs, flagged)
    rated, rated_left = rated_dialogues(public.ratings, public.conversations, flagged, options.pairs.qc_passing_only)
    preference_columns, rated_columns = _pair_columns()
    tables["preference_pairs"] = _pairs_table(pairs, preference_columns)
    tables["rated_dialogues"] = _pairs_table(rated, rated_columns)

    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        files = {config: _write_config(table, staging, config) for config, table in tables.items() if table.num_rows}
        counts = {config: tables[config].num_rows for config in files}
        _write_scrub_report(privacy.report, staging / SCRUB_REPORT)
        text_fields = {t: sorted(set(fields) | set(fields_with(TURNS)[t])) for t, fields in fields_with(TEXT).items()}
        manifest = {"format_version": schema.FORMAT_VERSION, "configs": files, "split": SPLIT,
                    "pseudonymised": fields_with(PSEUDONYM), "scrubbed": text_fields,
                    "scrubbed_counts": dict(privacy.report.counts), "left_counts": dict(privacy.report.left),
                    "pairs": vars(options.pairs)}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        card = {**card, "headline": renamed_in(card.get("headline"), privacy.renamed)} if "headline" in card else card
        write_card(staging / "README.md", {**card, **describe(public), "counts": counts, "files": files,
                                             "options": options, "scrub": scrub,
                                             "pseudonymised": privacy.pseudonymise.mapped(),
                                             "pairs_left_out": dict(pairs_left), "rated_left_out": dict(rated_left)})
        if out.exists():
            out.rmdir()  # the empty folder refuse_unsafe_target allowed
        os.replace(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    left_out = {k: dict(v) for k, v in (("preference_pairs", pairs_left), ("rated_dialogues", rated_left)) if v}
    for record_type, count in checks_left_out.items():
        left_out.setdefault(CONFIGS[record_type], {})["answers to attention and gold items"] = count
    return Published(out, counts, privacy.report.counts, privacy.pseudonymise.mapped(), left_out, scrub)


def scrub_facts(report: ScrubReport, known: KnownIds, names: int) -> dict:
    """What the card and the command say about scrubbing: each detector's coverage and replacements, the
    ids searched for, and the high-risk patterns left."""
    return {"detectors": [{"kind": d.kind, "covers": d.covers, "cannot": d.cannot, "replaced": report.counts[d.kind]}
                          for d in DETECTORS],
            "ids_searched": len(known.owner), "ids_not_searched": known.too_short, "id_min_length": MIN_ID_LENGTH,
            "names": names, "left": dict(report.left)}


def strict_refusal(report: ScrubReport) -> str:
    where = [f"{e['config']} row {e['row']} {e['field']} ({e['kind']})" for e in report.entries if e["action"] == "left"]
    return (f"--strict: {sum(report.left.values())} high-risk pattern(s) left in the text after scrubbing ("
            + ", ".join(f"{n} {k}" for k, n in report.left.items()) + "): " + "; ".join(where[:10])
            + (f"; and {len(where) - 10} more" if len(where) > 10 else "")
            + ". Nothing was written: edit those texts in a copy of the data (or publish without --strict and "
              "read each in scrub_report.csv)")


def _write_scrub_report(report: ScrubReport, path: Path) -> None:
    import pandas as pd

    from parlai_dialeval.csv_safe import write_csv

    write_csv(pd.DataFrame(report.entries, columns=["config", "row", "id", "field", "kind", "action"]), path)
