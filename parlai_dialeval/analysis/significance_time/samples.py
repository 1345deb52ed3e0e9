"""From canonical data to resampling units: each technique of Smith et al. (2022) (PW-Turn, PW-Dialog,
self-chat PW-Dialog, SM-Turn, SM-Dialog, the App. G combination) and A/B next-utterance comparisons
(Lee et al. 2020), per metric and model pair, with the worker time each unit cost."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from parlai_dialeval.analysis.significance_time.resampling import Units
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.protocols import criterion_of

SMITH_PAIRWISE = ("pw_turn", "pw_dialog")  # protocols whose wordings name a metric
TECHNIQUES = ("pw_turn", "pw_dialog", "pw_dialog_self", "ab", "sm_turn", "sm_dialog")


@dataclass
class Sample:
    """One technique, metric and model pair, ready for resampling (b is None for binomial tests)."""

    technique: str
    metric: str
    model_a: str
    model_b: str
    a: Units
    b: Units | None
    chunks: pd.DataFrame  # order, cost, value (and model for single-model techniques)

    @property
    def test(self) -> str:
        return "binomial" if self.b is None else "t-test"


def comparison_metric(comparisons: pd.DataFrame) -> pd.Series:
    """meta.criterion, else the criterion of the Smith PW-Turn / PW-Dialog question (wordings from
    parlai_dialeval.protocols), else the question text as its own metric ('overall' without one)."""
    named = comparisons["meta"].map(lambda m: m.get("criterion") if isinstance(m, dict) else None)
    question = comparisons["question"].fillna("")
    mapped = question.map(lambda q: criterion_of(q, SMITH_PAIRWISE) or q.strip() or "overall")
    return named.where(named.notna(), mapped).astype(str)


def _meta(value, key):
    return value.get(key) if isinstance(value, dict) else None


def onboarding_seconds(data, technique: str, default: float = 0.0) -> tuple[dict, float]:
    """(worker id -> onboarding seconds from records' meta.onboarding_duration, seconds for other workers:
    the study's meta.onboarding_duration (seconds, or an object keyed by technique), else ``default``)."""
    study_value = default
    for study in data.studies:
        value = _meta(study.get("meta"), "onboarding_duration")
        if isinstance(value, dict):
            value = value.get(technique)
        if value is not None:
            study_value = float(value)
    seconds: dict = {}
    for frame, worker in ((data.conversations, "worker_id"), (data.comparisons, "worker_id")):
        for w, meta in zip(frame[worker], frame["meta"]):
            value = _meta(meta, "onboarding_duration")
            if w is not None and value is not None:
                seconds[w] = float(value)
    return seconds, study_value


def _spread(frame: pd.DataFrame, conversation_seconds: pd.Series, key: str, group: list[str]) -> np.ndarray:
    """Each record's own duration, else its conversation's duration shared among the records of ``group``."""
    share = frame.groupby(group)[key].transform("size").to_numpy(float)
    spread = frame[key].map(conversation_seconds).to_numpy(float) / share
    own = pd.to_numeric(frame["duration"], errors="coerce").to_numpy(float)
    return np.where(np.isnan(own), spread, own)


def pairwise_samples(data, turns: tuple[int, int] | None = (2, 6), onboarding_default: float = 0.0) -> list[Sample]:
    """PW-Turn (Bot Speaker turns ``turns``), PW-Dialog, self-chat PW-Dialog and A/B next utterance
    (``ab``: responses, neither ``turn_index`` nor ``conversation_a``), per metric and model pair: outcome 1
    when the pair's first model (sorted by name) wins, 0 when it loses, NaN for worker ties.
    Automatic ties and onboarding items are left out (no worker time bought a judgement)."""
    from parlai_dialeval.analysis.pairwise import split_onboarding, turn_numbers

    comparisons, _ = split_onboarding(data.comparisons)
    comparisons = comparisons[~comparisons["automatic"].eq(True)].copy()
    if comparisons.empty:
        return []
    conv = data.conversations.set_index("id") if len(data.conversations) else None
    seconds = conv["duration"] if conv is not None else pd.Series(dtype=float)
    comparisons["metric"] = comparison_metric(comparisons).to_numpy()
    comparisons["_order"] = np.arange(len(comparisons))
    per_turn = comparisons[comparisons["turn_index"].notna()].copy()
    if len(per_turn):
        per_turn["turn_number"] = turn_numbers(per_turn)
        if turns is not None:
            kept = per_turn["turn_number"].between(*turns)
            if not kept.any():  # else every PW-Turn result would be dropped without a word
                raise DialevalError(f"--pw-turns {turns[0]}-{turns[1]}: no conversation has Bot Speaker turns "
                                    f"{turns[0]}-{turns[1]} (at most {int(per_turn['turn_number'].max())}); give a "
                                    "range within them or 'all'")
            per_turn = per_turn[kept]
        per_turn["cost"] = _spread(per_turn, seconds, "item_id", ["item_id", "metric"])
        per_turn["technique"] = "pw_turn"
    whole = comparisons["turn_index"].isna()
    shown = comparisons["conversation_a"].notna()
    # A/B votes judge one response, not a conversation: a protocol of their own (as worker agreement has it)
    ab = comparisons[whole & ~shown].copy()
    if len(ab):
        ab["technique"] = "ab"
        ab["cost"] = pd.to_numeric(ab["duration"], errors="coerce").to_numpy(float)
    dialog = comparisons[whole & shown].copy()
    if len(dialog):
        flagged = dialog["meta"].map(lambda m: bool(_meta(m, "self_chat"))).to_numpy(bool)
        both_self = np.zeros(len(dialog), bool)
        if conv is not None:
            is_self = (conv["task"].eq("self_chat") | conv["worker_id"].isna())
            both_self = np.logical_and.reduce([dialog[c].map(is_self).fillna(False).to_numpy(bool)
                                               for c in ("conversation_a", "conversation_b")])
        self_chat = flagged | both_self
        dialog["technique"] = np.where(self_chat, "pw_dialog_self", "pw_dialog")
        own = pd.to_numeric(dialog["duration"], errors="coerce").to_numpy(float)
        # Human-model conversations are bought too (Smith App. F): amortise each over every comparison side
        # showing it, A or B, so that the comparisons together pay for each conversation once.
        uses = pd.concat([dialog["conversation_a"], dialog["conversation_b"]]).value_counts()
        collect = np.zeros(len(dialog))
        for column in ("conversation_a", "conversation_b"):
            shown = dialog[column]
            collect += np.nan_to_num(shown.map(seconds).to_numpy(float) / shown.map(uses).to_numpy(float))
        dialog["cost"] = own + np.where(self_chat, 0.0, collect)
    samples = []
    for frame in (f for f in (per_turn, dialog, ab) if len(f)):
        for (technique, metric), group in frame.groupby(["technique", "metric"], sort=True):
            onboarding = onboarding_seconds(data, technique, onboarding_default)
            pairs = group.apply(lambda r: tuple(sorted((r["model_a"], r["model_b"]))), axis=1)
            for (first, second), part in group.groupby(pairs, sort=True):
                winner = np.where(part["choice"] == "a", part["model_a"],
                                  np.where(part["choice"] == "b", part["model_b"], None))
                value = np.where(winner == first, 1.0, np.where(winner == second, 0.0, np.nan))
                units = Units.build(value, part["cost"], part["worker_id"], onboarding)
                chunks = pd.DataFrame({"order": part["_order"].to_numpy(), "cost": part["cost"].to_numpy(float),
                                       "value": value})
                samples.append(Sample(technique, metric, first, second, units, None, chunks))
    return samples


def single_model_samples(data, turns: tuple[int, int] | None = (3, 6), onboarding_default: float = 0.0,
                         pairs=None) -> list[Sample]:
    """SM-Turn (each binary rating of Bot Speaker turns ``turns``, App. F) and SM-Dialog (each Likert
    score), per criterion and model pair, for two-sided independent t-tests."""
    from parlai_dialeval.analysis import single_model as sm

    conv_seconds = (data.conversations.set_index("id")["duration"] if len(data.conversations)
                    else pd.Series(dtype=float))
    ratings = data.ratings.assign(_order=np.arange(len(data.ratings)))
    turn = sm.select_turns(sm.sm_turn_ratings(ratings), turns)
    turn = turn.assign(cost=_spread(turn, conv_seconds, "conversation_id", ["conversation_id", "criterion"]))
    dialog = sm.sm_dialog_ratings(ratings)
    dialog = dialog.assign(cost=_spread(dialog, conv_seconds, "conversation_id", ["conversation_id", "criterion"]))
    samples = []
    for technique, frame in (("sm_turn", turn), ("sm_dialog", dialog)):
        onboarding = onboarding_seconds(data, technique, onboarding_default)
        for criterion, group in frame.groupby("criterion", sort=True):
            samples += _ttest_samples(technique, criterion, group, onboarding,
                                      pairs or sm.model_pairs(group["model"]))
    return samples


def _ttest_samples(technique, metric, frame, onboarding, pairs) -> list[Sample]:
    out = []
    for first, second in pairs:
        a, b = frame[frame["model"] == first], frame[frame["model"] == second]
        if len(a) < 2 or len(b) < 2:
            continue
        build = lambda part: Units.build(part["value"], part["cost"], part["worker_id"], onboarding)  # noqa: E731
        both = pd.concat([a, b])
        chunks = pd.DataFrame({"order": both["_order"].to_numpy(), "cost": both["cost"].to_numpy(float),
                               "value": both["value"].to_numpy(float), "model": both["model"].to_numpy()})
        out.append(Sample(technique, metric, first, second, build(a), build(b), chunks))
    return out


def combination_samples(data, weights, turns: tuple[int, int] | None = (3, 6), onboarding_default: float = 0.0,
                        pairs=None) -> list[Sample]:
    """Smith App. G: per conversation, the weighted SM-Turn WTA + rescaled SM-Dialog score, one sample per
    weighting (technique ``sm_combo w_turn:w_dialog``); cost = the conversation's duration."""
    from parlai_dialeval.analysis import single_model as sm

    ratings = data.ratings.assign(_order=np.arange(len(data.ratings)))
    turn = sm.select_turns(sm.sm_turn_ratings(ratings), turns)
    dialog = sm.sm_dialog_ratings(ratings)
    if turn.empty or dialog.empty:
        return []
    conv = data.conversations.set_index("id") if len(data.conversations) else None
    onboarding = onboarding_seconds(data, "sm_turn", onboarding_default)
    order = dialog.groupby("conversation_id")["_order"].min()
    samples = []
    for w_turn, w_dialog in weights:
        scores = sm.combined_scores(turn, dialog, w_turn, w_dialog)
        scores["_order"] = scores["conversation_id"].map(order).to_numpy()
        scores["cost"] = (scores["conversation_id"].map(conv["duration"]).to_numpy(float) if conv is not None
                          else np.full(len(scores), np.nan))
        workers = dialog.groupby("conversation_id")["worker_id"].first()
        scores["worker_id"] = scores["conversation_id"].map(workers).to_numpy()
        for criterion, group in scores.groupby("criterion", sort=True):
            samples += _ttest_samples(f"sm_combo {w_turn:g}:{w_dialog:g}", criterion, group, onboarding,
                                      pairs or sm.model_pairs(group["model"]))
    return samples
