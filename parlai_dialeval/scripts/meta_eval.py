"""dialeval meta_eval: correlations between automatic metric scores and human scores.

Item level (Mehri & Eskenazi 2020, Table 6): ``--data`` holds the human ratings (canonical data or
the FED dataset), ``--scores`` the metric's per-item scores; each item's human score is the mean
of its ratings per criterion. System level (Ji et al. 2022, Tables 5-6): ``--human`` is the
live-chat analysis output ``system_scores.csv`` (model, n, overall, <criteria>), ``--scores`` has
one row per model (a CSV with a ``model`` column) or per dialogue (averaged per model).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.analysis.intervals import few_rounds
from parlai_dialeval.csv_safe import restore
from parlai_dialeval.errors import DataError, DialevalError
from parlai_dialeval.lazy import lazy_module
from parlai_dialeval.options import checked
from parlai_dialeval.scripts.command_line import output_file, write_csv

# Loaded on first use, so --help and option errors do not wait for scipy.
meta_eval = lazy_module("parlai_dialeval.analysis.meta_eval")

# FED dataset annotation names that differ from the FED metric's quality names.
ALIASES = {"understanding": "understand"}
REPLICATION_LEVELS = {"Turn-level": "turn", "Dialog-level": "dialog"}
# Columns that name what is scored; every other column of a CSV is a score where it holds numbers.
KEY_COLUMNS = ("id", "model", "level", "input")


def _json_objects(path: Path) -> list[dict]:
    """JSON Lines, or concatenated (pretty-printed) JSON objects as the FED replication writes them."""
    text, decoder, position, objects = path.read_text(encoding="utf-8"), json.JSONDecoder(), 0, []
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            return objects
        try:
            obj, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            raise DataError(path, f"not JSON ({error.msg})", line=text.count("\n", 0, position) + 1) from None
        if not isinstance(obj, dict):
            raise DataError(path, "not a JSON object", line=text.count("\n", 0, position) + 1, got=obj)
        objects.append(obj)


def read_scores(path: Path, data=None) -> pd.DataFrame:
    """Metric scores as a frame with ``id``/``model``/``level`` key columns and one column per metric.

    Accepted: a CSV with an ``id`` or ``model`` column; ``dialeval fed`` output (JSON Lines of
    ``{id, model, level, scores}``); the FED replication's ``*_FU_scores.jsonl`` (``{idx, level, input,
    score}``, matched to the FED items of ``data`` in order within each level, checked by text).
    """
    if path.suffix == ".csv":
        frame = read_csv(path)
        if "id" not in frame and "model" not in frame:
            raise DataError(path, "no key column", field="id/model", expected="an 'id' or 'model' column")
        return frame
    objects = _json_objects(path)
    if objects and all("scores" in o for o in objects):
        return pd.DataFrame([{k: o.get(k) for k in ("id", "model", "level")} | o["scores"] for o in objects])
    if objects and all({"score", "level", "input"} <= set(o) for o in objects):
        return _replication(path, objects, data)
    raise DataError(path, "unrecognised score file",
                    expected="CSV with id/model, dialeval fed JSON Lines, or FED replication output")


def read_csv(path: Path) -> pd.DataFrame:
    """A CSV of scores with its key columns as written (text: an id "007" is not the number 7) and every
    other column that holds a number numeric throughout: a value that is not a number is named by row,
    not left to make its whole column silently not a score."""
    try:
        frame = restore(pd.read_csv(path, dtype={c: str for c in KEY_COLUMNS}, encoding="utf-8"))
    except pd.errors.EmptyDataError:
        raise DataError(path, "empty file", expected="a CSV with a header row") from None
    except UnicodeDecodeError as error:
        raise DataError(path, f"not UTF-8 text ({error.reason})", expected="a UTF-8 encoded CSV") from None
    except pd.errors.ParserError as error:
        raise DataError(path, f"not a readable CSV ({error})") from None
    for column in frame.columns:
        if column in KEY_COLUMNS or pd.api.types.is_numeric_dtype(frame[column]):
            continue
        numbers = pd.to_numeric(frame[column], errors="coerce")
        bad = numbers.isna() & frame[column].notna()
        comma = pd.to_numeric(frame[column].astype(str).str.replace(",", ".", regex=False), errors="coerce")
        if numbers.isna().all() and frame[column].notna().any() and comma[frame[column].notna()].notna().all():
            raise DataError(path, "a decimal comma", line=f"row {int(frame[column].notna().to_numpy().argmax()) + 2}",
                            field=column, expected="a number with a decimal point",
                            got=frame[column].dropna().iloc[0])
        if numbers.notna().any() and bad.any():
            row = int(bad.to_numpy().argmax())
            raise DataError(path, "not a number", line=f"row {row + 2}", field=column, expected="a number",
                            got=frame[column].iloc[row])
    return frame


def _replication(path: Path, objects: list[dict], data) -> pd.DataFrame:
    from parlai_dialeval.metrics.fed import join_turns

    if data is None:
        raise DialevalError(f"{path}: FED replication scores need the FED items (--data fed_data.json)")
    conversations = data.conversations
    levels = conversations["meta"].map(lambda m: m.get("level") if isinstance(m, dict) else None)
    order = conversations.assign(_level=levels, _index=conversations["meta"].map(
        lambda m: m.get("index") if isinstance(m, dict) else None)).sort_values("_index")
    queues = {level: list(order[order["_level"] == level].itertuples()) for level in ("turn", "dialog")}
    rows = []
    for k, obj in enumerate(objects, 1):
        level = REPLICATION_LEVELS.get(obj["level"])
        if level is None:
            raise DataError(path, f"object {k}: unknown level", field="level", expected="Turn-level or Dialog-level",
                            got=obj["level"])
        if not queues[level]:
            raise DataError(path, f"object {k}: more {level}-level scores than FED items in --data")
        item = queues[level].pop(0)
        # Whitespace aside: importers strip utterances, the reference keeps their trailing spaces.
        if join_turns([t["text"] for t in item.turns]).split() != str(obj["input"]).split():
            raise DataError(path, f"object {k}: its input is not the text of FED item {item.id}", field="input")
        rows.append({"id": item.id, "model": item.models[0], "level": level} | obj["score"])
    return pd.DataFrame(rows)


def add_fed_overall(scores: pd.DataFrame) -> pd.DataFrame:
    """FED's overall impression: the mean of the item's level's quality scores (Mehri & Eskenazi, §5)."""
    from parlai_dialeval.metrics.fed import load_followups

    if "overall" in scores or "level" not in scores:
        return scores
    followups = load_followups()
    overall = pd.Series(float("nan"), index=scores.index)
    for level in ("turn", "dialog"):
        columns = [q.name for q in followups.values() if q.level == level and q.name in scores]
        rows = scores["level"] == level
        if columns and rows.any():
            overall[rows] = scores.loc[rows, columns].mean(axis=1)
    return scores.assign(overall=overall) if overall.notna().any() else scores


def default_pairs(human_columns, metric_columns, against: str | None) -> list[tuple[str, str]]:
    if against:
        return [(against, m) for m in metric_columns]
    return [(h, ALIASES.get(h, h) if ALIASES.get(h, h) in metric_columns else h) for h in human_columns
            if h in metric_columns or ALIASES.get(h) in metric_columns]


def parse_pairs(text: str) -> list[tuple[str, str]]:
    pairs = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        human, _, metric = part.partition("=")
        if not metric:
            raise DialevalError(f"--pairs: '{part}' is not HUMAN=METRIC")
        pairs.append((human.strip(), metric.strip()))
    return pairs


def metric_columns(frame: pd.DataFrame) -> list[str]:
    return [c for c in frame.columns if c not in ("id", "model", "level", "turn_index", "n", "input")
            and pd.api.types.is_numeric_dtype(frame[c])]


@register_script("meta_eval")
class MetaEval(ParlaiScript):
    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, "Correlate metric scores with human scores (see docs/metrics.md)")
        group = parser.add_argument_group("Inputs and output")
        group.add_argument("--scores", nargs="+", required=True, metavar="FILE",
                           help="metric scores: CSV (id or model column), dialeval fed output, or FED "
                                "replication *_FU_scores.jsonl")
        group.add_argument("--data", nargs="+", default=None, metavar="PATH",
                           help="item level: human ratings (canonical data or the FED dataset)")
        group.add_argument("--from", dest="data_format", default=None, metavar="FORMAT",
                           help="force the --data format")
        group.add_argument("--human", default=None, metavar="system_scores.csv",
                           help="system level: per-model human scores (model, n, overall, <criteria>)")
        group.add_argument("--out", required=True, metavar="FILE.csv", help="correlation table", type=output_file)
        options = parser.add_argument_group("Correlations")
        options.add_argument("--pairs", default=None, metavar="HUMAN=METRIC,...",
                             help="criterion/metric pairs (default: same names; FED understanding=understand)")
        options.add_argument("--against", default=None, metavar="CRITERION",
                             help="correlate every metric column with this human criterion (e.g. overall)")
        options.add_argument("--bootstrap", type=checked("--bootstrap", "non_negative_int"), default=1000,
                             help="bootstrap resamples for CIs (0: none; with fewer than 100 the output says the "
                                  "intervals are noise)")
        options.add_argument("--confidence", type=checked("--confidence", "probability"), default=0.95,
                             help="confidence level of the intervals (0 < c < 1)")
        options.add_argument("--seed", type=checked("--seed", "non_negative_int"), default=0,
                             help="random seed of the bootstrap (>= 0)")
        return parser

    def run(self):
        opt = self.opt
        if bool(opt["data"]) == bool(opt["human"]):
            raise DialevalError("give --data (item level) or --human (system level), not both or neither")
        human, metric, groups = self._system() if opt["human"] else self._items()
        pairs = parse_pairs(opt["pairs"]) if opt["pairs"] else \
            default_pairs(list(human.columns), metric_columns(metric), opt["against"])
        if not pairs:
            raise DialevalError("no human criterion matches a metric column; name them with --pairs or --against")
        table = meta_eval.correlation_table(human, metric[metric_columns(metric)], pairs, groups=groups,
                                  n_resamples=opt["bootstrap"], confidence=opt["confidence"], seed=opt["seed"])
        if table.empty:
            raise DialevalError("no keys (items or models) common to the human and metric scores")
        unmatched = {side: sorted(set(frame.index.astype(str)) - set(other.index.astype(str)))
                     for side, frame, other in (("human", human, metric), ("metric", metric, human))}
        if any(unmatched.values()):  # a model named 'M1' on one side and 'm1' on the other is no key of either
            keys = "models" if opt["human"] else "items"
            print(f"{keys} not in both, left out: " + "; ".join(
                f"{len(names)} only in the {side} scores ({', '.join(map(repr, names[:5]))}"
                f"{', ...' if len(names) > 5 else ''})" for side, names in unmatched.items() if names))
        write_csv(table, opt["out"])
        shown = [c for c in ("group", "human", "metric", "n", "pearson", "spearman", "spearman_p",
                             "spearman_lo", "spearman_hi", "kendall") if c in table]
        print(table[shown].to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-"))
        if opt["bootstrap"]:
            lows = table[[f"{m}_lo" for m in meta_eval.METHODS]]
            empty = lows.isna().to_numpy() & table[list(meta_eval.METHODS)].notna().to_numpy()
            if empty.any():
                print(f"no bootstrap interval for {int(empty.any(axis=1).sum())} of {len(table)} rows (left empty): "
                      f"too few keys (n as low as {int(table['n'].min())}) for resamples to vary on both sides")
            if (rough := few_rounds(opt["bootstrap"])) and lows.notna().any(axis=None):
                print(f"the intervals (*_lo, *_hi) are not to be read as intervals: {rough} (--bootstrap)")
        print(f"wrote {len(table)} correlations to {opt['out']}")
        return table

    def _items(self):
        from parlai_dialeval.scripts.command_line import load_data

        data = load_data(self.opt)
        human = meta_eval.item_human_scores(data.ratings)
        levels = data.conversations.set_index("id")["meta"].map(
            lambda m: m.get("level") if isinstance(m, dict) else None)
        scores = pd.concat([read_scores(Path(p), data) for p in self.opt["scores"]], ignore_index=True)
        if "id" not in scores:
            raise DialevalError("item-level scores need an 'id' column (the conversation id)")
        scores = add_fed_overall(scores)
        metric = scores.groupby("id")[metric_columns(scores)].mean()
        return human, metric, levels if levels.notna().any() else None

    def _system(self):
        path = Path(self.opt["human"])
        human = read_csv(path)
        if "model" not in human:
            raise DataError(path, "no model column", field="model", expected="model,n,overall,<criteria>")
        human = human.set_index("model").drop(columns=["n"], errors="ignore")
        scores = pd.concat([read_scores(Path(p)) for p in self.opt["scores"]], ignore_index=True)
        if "model" not in scores:
            raise DialevalError("system-level scores need a 'model' column")
        rows = scores["model"].value_counts()
        if "id" not in scores and (rows > 1).any():  # per-dialogue scores carry ids; a table of models should not
            print(f"metric scores: the rows of a model averaged, {int((rows > 1).sum())} of {len(rows)} models "
                  f"with several ({', '.join(f'{m!r}: {n}' for m, n in rows[rows > 1].items())})")
        return human, scores.groupby("model")[metric_columns(scores)].mean(), None
