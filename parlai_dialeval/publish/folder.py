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
from parlai_dialeval.publish.card import write_card
from parlai_dialeval.publish.coarse import coarse_integrity
from parlai_dialeval.publish.preferences import PairOptions, preference_pairs, rated_dialogues
from parlai_dialeval.publish.privacy import PSEUDONYM_PREFIX, Pseudonymiser, ScrubReport, Scrubber

SCRUB_REPORT = "scrub_report.csv"
SPLIT = "train"  # one study is not a train/test partition: the Hub's single-split convention
# Free text a participant (or a model echoing one) may have written: scrubbed before anything leaves.
TEXT_FIELDS = {"conversation": ("turns", "feedback"), "comparison": ("justification", "context", "response_a",
                                                                   "response_b")}


@dataclass
class PublishOptions:
    statement: str            # the researcher's consent and anonymisation statement, quoted in the card
    license: str = "cc-by-4.0"
    language: str = "en"
    names: tuple[str, ...] = ()
    phone_region: str = "US"
    pairs: PairOptions = field(default_factory=PairOptions)
    pretty_name: str | None = None


@dataclass
class Published:
    folder: Path
    counts: dict                 # config -> rows
    scrubbed: Counter            # kind -> replacements
    pseudonymised: dict          # field -> distinct ids replaced
    left_out: dict               # config -> {reason: count}

    def summary(self) -> str:
        rows = ", ".join(f"{n} {c}" for c, n in self.counts.items())
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.scrubbed.items())) or "nothing"
        ids = ", ".join(f"{n} {f}s" for f, n in sorted(self.pseudonymised.items())) or "none"
        lines = [f"wrote {self.folder}: {rows}", f"pseudonymised {ids}; scrubbed {kinds} (see {SCRUB_REPORT})"]
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


class _Privacy:
    """Pseudonyms and scrubbing applied to the data column by column (a million votes hold few distinct ids and
    texts: each is replaced once), with the report of what was replaced."""

    def __init__(self, pseudonymise: Pseudonymiser, scrubber: Scrubber):
        self.pseudonymise, self.scrubber, self.report = pseudonymise, scrubber, ScrubReport()

    def _text(self, text, where: dict):
        clean, kinds = self.scrubber.scrub(text)
        if kinds:
            self.report.add(where, list(kinds))
        return clean

    def _walk(self, value, where: dict, path: str):
        """Ids under a worker/assignment key pseudonymised, every other string scrubbed, at any depth."""
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                id_field = next((f for f in PSEUDONYM_PREFIX if f.split("_")[0] in str(key).lower()), None)
                out[key] = (self.pseudonymise(id_field, item) if id_field and isinstance(item, str)
                            else self._walk(item, where, f"{path}.{key}"))
            return out
        if isinstance(value, list):
            return [self._walk(item, where, f"{path}[{i}]") for i, item in enumerate(value)]
        return self._text(value, {**where, "field": path}) if isinstance(value, str) else value

    def _column(self, values: list, config: str, ids: list, name: str) -> list:
        out, strings = [], {}  # a text repeats on every vote of its item: scrubbed once
        for row, value in enumerate(values):
            if isinstance(value, str):
                found = strings.get(value)
                if found is None:
                    found = strings[value] = self.scrubber.scrub(value)
                value = found[0]
                if found[1]:
                    self.report.add({"config": config, "row": row, "id": ids[row], "field": name}, list(found[1]))
            elif isinstance(value, (dict, list)):
                value = self._walk(value, {"config": config, "row": row, "id": ids[row]}, name)
            out.append(value)
        return out

    def frame(self, record_type: str, frame: pd.DataFrame) -> pd.DataFrame:
        """The frame's records with ids pseudonymised and text scrubbed (``turns``: each turn's text)."""
        config, out = CONFIGS[record_type], pd.DataFrame(index=range(len(frame)))
        key = {"conversation": "id", "rating": "conversation_id", "comparison": "item_id"}[record_type]
        ids = _objects(frame[key])
        for name in (c for c in frame.columns if not c.startswith("_")):
            if frame[name].isna().all():  # a field no record holds (most of the schema's, in most studies)
                out[name] = pd.Series(None, index=out.index, dtype=object)
                continue
            values = _objects(frame[name])
            if name in PSEUDONYM_PREFIX:
                values = [self.pseudonymise(name, v) if isinstance(v, str) else v for v in values]
            elif name == "turns":
                values = [[{**t, "text": self._text(t["text"], {"config": config, "row": row, "id": ids[row],
                                                                "field": f"turns[{i}].text"})}
                           for i, t in enumerate(turns)] for row, turns in enumerate(values)]
            elif name in TEXT_FIELDS.get(record_type, ()) or name == "meta":
                values = self._column(values, config, ids, name)
            out[name] = pd.Series(values, dtype=object)
        return out


def _objects(column: pd.Series) -> list:
    """A column as a list of Python values, missing ones None (to_numpy: iterating Arrow-backed strings is slow)."""
    values = column.to_numpy(dtype=object, copy=True)
    values[column.isna().to_numpy()] = None
    return values.tolist()


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
    privacy = _Privacy(Pseudonymiser(key), Scrubber(options.names, options.phone_region))
    public = EvalData([{k: v for k, v in s.items() if not k.startswith("_")} for s in data.studies],
                      *(privacy.frame(t, data.frame(t)) for t in FRAME_TYPES))
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
        manifest = {"format_version": schema.FORMAT_VERSION, "configs": files, "split": SPLIT,
                    "pseudonymised": sorted(PSEUDONYM_PREFIX), "scrubbed": {t: list(f) for t, f in TEXT_FIELDS.items()},
                    "scrubbed_counts": dict(privacy.report.counts), "pairs": vars(options.pairs)}
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
        write_card(staging / "README.md", {**card, "counts": counts, "files": files, "options": options,
                                             "scrubbed": dict(privacy.report.counts),
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
    return Published(out, counts, privacy.report.counts, privacy.pseudonymise.mapped(), left_out)


def _write_scrub_report(report: ScrubReport, path: Path) -> None:
    import pandas as pd

    from parlai_dialeval.csv_safe import write_csv

    write_csv(pd.DataFrame(report.entries, columns=["config", "row", "id", "field", "kind"]), path)
