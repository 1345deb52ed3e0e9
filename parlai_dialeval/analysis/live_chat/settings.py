"""Live-chat analysis settings: the options (``LiveChatConfig``), what they resolve to against the
data (``Settings``), the result record, and choosing the study."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import pandas as pd

from parlai_dialeval.analysis.multiple_testing import CORRECTIONS, DEFAULT_CORRECTION
from parlai_dialeval.errors import DialevalError, location, record_line
from parlai_dialeval.options import option

# The reports' mean of all statements; a criterion of that name (FED's dialogue-level question) is analysed
# as OVERALL_RATED, so that neither column hides the other.
OVERALL, OVERALL_RATED = "overall", "overall (rated)"
QC_TESTS = ("mannwhitney", "ttest", "none")
QC_OFF = "quality control off"  # the note of every worker when qc_test is none: none was checked
SIG_TESTS = ("mannwhitney", "ttest")
AGREEMENT_BY = ("models", "hit")
HUMAN = "human"


@dataclass
class LiveChatConfig:
    """Every step of the analysis; the defaults are Ji et al. (2022)'s method."""

    study: str | None = option(None, "study to analyse when the data hold several")
    criteria: list[str] | None = option(None, "comma-separated statements to analyse (default: all the study "
                                              "declares)")
    negative: list[str] | None = option(None, "comma-separated negatively worded statements, reversed as max - x "
                                              "(default: those the study declares positive: false; '' for none)")
    scale_min: float | None = option(None, "scale minimum for reversal (default: metadata / ratings)")
    scale_max: float | None = option(None, "scale maximum for reversal (default: metadata / ratings)")
    reverse: bool = option(True, "reverse negative statements before anything else")
    standardise: bool = option(True, "per-worker z scores over all the worker's ratings (false: reversed raw "
                                     "values)")
    ddof: int = option(1, "degrees of freedom of the worker SD", kind="non_negative_int")
    epsilon: float = option(1e-6, "added to the worker SD (the authors' code)", kind="non_negative")
    qc_models: list[str] | None = option(None, "comma-separated quality-control bots (default: the study's)")
    qc_test: str = option("mannwhitney", "worker test that the QC bot was rated lower: Mann-Whitney U (paper), "
                                         "Welch t, or none (everyone passes)", choices=QC_TESTS)
    qc_alpha: float = option(0.05, "a worker passes when p < this", kind="probability")
    qc_criteria: list[str] | None = option(None, "comma-separated statements the QC test uses (default: the "
                                                 "positive ones)")
    sig_test: str = option("mannwhitney", "pairwise test between models on per-conversation overall z",
                           choices=SIG_TESTS)
    correction: str = option(DEFAULT_CORRECTION, "multiple-comparison correction over all ordered model pairs "
                                                 "(statsmodels; default holm, none switches it off)",
                             choices=CORRECTIONS)
    order: list[str] | None = option(None, "comma-separated model order for the tables (default: by overall z; "
                                           "the paper's run 2 used run 1's)")
    agreement_by: str = option("models", "rater agreement pairs HITs that held the same models (paper) or share "
                                         "a hit_id", choices=AGREEMENT_BY)
    agreement_max_pairs: int = option(2_000_000, "rater agreement: above this many candidate pairs among passing "
                                                 "(or failing) workers, use a seeded random sample of this many",
                                      kind="positive_int")
    seed: int = option(0, "random seed (pair sampling, >= 0)", kind="non_negative_int")

    def check(self) -> None:
        for name, value, allowed in (("qc_test", self.qc_test, QC_TESTS), ("sig_test", self.sig_test, SIG_TESTS),
                                     ("correction", self.correction, CORRECTIONS),
                                     ("agreement_by", self.agreement_by, AGREEMENT_BY)):
            if value not in allowed:
                raise DialevalError(f"--{name} must be one of {', '.join(allowed)}, not '{value}'")
        if not 0 < self.qc_alpha < 1:
            raise DialevalError(f"--qc_alpha must lie between 0 and 1, not {self.qc_alpha}")


@dataclass
class Settings:
    """The configuration resolved against the data: what was actually done."""

    study: str | None
    criteria: list[str]
    negative: list[str]
    bounds: dict[str, tuple[float, float]]
    qc_models: list[str]
    qc_criteria: list[str]
    labels: dict[str, str]
    config: LiveChatConfig

    def as_dict(self) -> dict:
        return {"study": self.study, "criteria": self.criteria, "negative": self.negative,
                "scale": {c: list(b) for c, b in self.bounds.items()}, "qc_models": self.qc_models,
                "qc_criteria": self.qc_criteria, **{k: v for k, v in asdict(self.config).items()
                                                     if k not in ("study", "criteria", "negative", "qc_models",
                                                                  "qc_criteria")}}


@dataclass
class LiveChatResult:
    settings: Settings
    ratings: pd.DataFrame          # per analysed rating: worker_id, conversation_id, model, criterion, value, x, z
    conversations: pd.DataFrame    # one row per rated conversation: overall z / raw, passed, qc
    workers: pd.DataFrame          # worker_id, n_hits, n_ratings, p_value, passed (+ note)
    system_scores: pd.DataFrame    # model, n, overall, <criteria> (z)
    system_scores_raw: pd.DataFrame
    significance: pd.DataFrame     # model_a, model_b, p_value (+ p_adjusted)
    correlations: pd.DataFrame     # Table 8 (z); Pearson above the diagonal, Spearman below
    correlations_raw: pd.DataFrame
    agreement: dict                # {"passed": r array, "failed": r array, "stats": DataFrame, ...}
    table1: pd.DataFrame
    durations: pd.DataFrame
    topics: pd.DataFrame | None
    inputs: pd.DataFrame | None
    summary: dict
    notes: list[str] = field(default_factory=list)
    intervals: pd.DataFrame | None = None  # per model: unit, n_conversations, mean overall z, t interval
    # workers.csv: every worker, who submitted (with the QC result) or did not, with ``outcome`` in words
    outcomes: pd.DataFrame | None = None
    # the sections computed on this result (results/live_chat_result.py: verdict, style, categories) by name,
    # and the warnings statistics libraries raised in each
    parts: dict = field(default_factory=dict)
    library_warnings: dict = field(default_factory=dict)



def _study_names(data) -> list[str]:
    names = [s["name"] for s in data.studies]
    for frame in (data.ratings, data.conversation_fields()):
        if "study" in frame.columns:
            names += [n for n in frame["study"].dropna().unique().tolist() if n not in names]
    return list(dict.fromkeys(names))


def select_study(data, study: str | None):
    """The study's record (or None) and its conversations (without turns: ``data.turns()`` has them) and
    ratings."""
    names = _study_names(data)
    if study is None:
        if len(names) > 1:
            raise DialevalError("the data hold several studies (" + ", ".join(names) + "); choose one with "
                                "--study NAME (z scores and quality control are per study)")
        study = names[0] if names else None
    elif study not in names:
        raise DialevalError(f"no study named '{study}' in the data; found: {', '.join(names) or 'none'}")
    record = next((s for s in data.studies if s["name"] == study), None)
    conversations, ratings = data.conversation_fields(), data.ratings
    if study is not None and len(names) > 1:
        conversation_study, rating_study = _studies_of(conversations, ratings)
        conversations = conversations[conversation_study.eq(study).to_numpy()]
        ratings = ratings[rating_study.eq(study).to_numpy()]
    if len(ratings) and ratings["criterion"].eq(OVERALL).any():
        ratings = ratings.assign(criterion=ratings["criterion"].replace({OVERALL: OVERALL_RATED}))
        record = record and {**record, "criteria": [{**c, "name": OVERALL_RATED} if c.get("name") == OVERALL else c
                                                    for c in record.get("criteria") or []]}
    return study, record, conversations, ratings


def _studies_of(conversations: pd.DataFrame, ratings: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Each conversation's and rating's study where the data hold several: a record that names none takes
    its conversation's (a rating) or its ratings' (a conversation); one still without a study is refused,
    since leaving it out of every study would drop it silently and guessing could mix studies."""
    def named(frame):
        return frame["study"] if "study" in frame else pd.Series(None, index=frame.index, dtype=object)

    conversation_study, rating_study = named(conversations), named(ratings)
    by_conversation = pd.Series(conversation_study.to_numpy(), index=conversations["id"].astype(str).to_numpy())
    by_conversation = by_conversation[by_conversation.notna()]
    rating_study = rating_study.where(rating_study.notna(), ratings["conversation_id"].astype(str).map(
        by_conversation[~by_conversation.index.duplicated()]))
    by_rating = pd.Series(rating_study.to_numpy(), index=ratings["conversation_id"].astype(str).to_numpy())
    by_rating = by_rating[by_rating.notna()]
    conversation_study = conversation_study.where(conversation_study.notna(), conversations["id"].astype(str).map(
        by_rating[~by_rating.index.duplicated()]))
    for kind, frame, study in (("rating", ratings, rating_study), ("conversation", conversations, conversation_study)):
        missing = study.isna().to_numpy()
        if missing.any():
            where = frame[missing].iloc[0]
            line = record_line(where.get("_line"))
            place = f" (the first at {location(where['_file'], line)})" if "_file" in frame else ""
            raise DialevalError(f"{int(missing.sum())} {kind} record(s) name no study{place}, nor do the "
                                "conversation and ratings they belong with, while the data hold several studies: "
                                "give each record its study, or analyse its file on its own")
    return conversation_study, rating_study


def _ordered_criteria(names: list[str], negative: set[str]) -> list[str]:
    """Positive statements first, then negative ones, each in declared order (the paper's tables)."""
    return [c for c in names if c not in negative] + [c for c in names if c in negative]


def _analysed(given: list[str], names: list[str], flag: str) -> list[str]:
    """The non-empty names of an option that picks among the analysed criteria."""
    chosen = [c for c in given if c]
    missing = [c for c in chosen if c not in names]
    if missing:
        raise DialevalError(f"{flag} names criteria that are not analysed: {', '.join(missing)}")
    return chosen


def resolve_settings(config: LiveChatConfig, study: str | None, record: dict | None,
                     ratings: pd.DataFrame) -> Settings:
    config.check()
    declared = {c["name"]: c for c in (record or {}).get("criteria") or []}
    present = list(dict.fromkeys(ratings["criterion"].tolist())) if len(ratings) else []
    names = [OVERALL_RATED if c == OVERALL else c for c in config.criteria or declared or present]
    unknown = [c for c in names if c not in present]
    if unknown:
        raise DialevalError(f"no ratings of criteria {', '.join(unknown)}; the data rate: {', '.join(present)}")
    if config.negative is not None:
        negative = _analysed(config.negative, names, "--negative")
    else:
        negative = [c for c in names if declared.get(c, {}).get("positive") is False]
    negative_set = set(negative)
    names = _ordered_criteria(names, negative_set)
    bounds = {}
    for name in names:
        low = config.scale_min if config.scale_min is not None else declared.get(name, {}).get("min")
        high = config.scale_max if config.scale_max is not None else declared.get(name, {}).get("max")
        if low is None or high is None:
            rows = ratings[ratings["criterion"].eq(name)]
            if low is None and "scale_min" in rows and rows["scale_min"].notna().any():
                low = float(pd.to_numeric(rows["scale_min"]).min())
            if high is None and "scale_max" in rows and rows["scale_max"].notna().any():
                high = float(pd.to_numeric(rows["scale_max"]).max())
        if name in negative_set and config.reverse and (low is None or high is None):
            raise DialevalError(f"cannot reverse '{name}': its scale bounds are unknown (declare min and max "
                                "in the study's criteria, or give --scale_min and --scale_max)")
        bounds[name] = (float(low) if low is not None else math.nan, float(high) if high is not None else math.nan)
    qc_models = list(config.qc_models if config.qc_models is not None else (record or {}).get("qc_models") or [])
    if config.qc_criteria is not None:
        qc_criteria = _analysed(config.qc_criteria, names, "--qc-criteria")
    else:
        qc_criteria = [c for c in names if c not in negative_set]
    labels = dict(((record or {}).get("meta") or {}).get("model_labels") or {})
    return Settings(study, names, [c for c in names if c in negative_set], bounds, qc_models, qc_criteria,
                    labels, config)
