"""The evidence about each participant in one table, and the one rule that turns it into a flag (pure: DataFrames
in, a table out; the analysis commands, the dashboard and adaptive collection call ``evidence_table``).

One row per worker combines: the task's quality test (live chat's QC-bot test, Smith et al.'s checks), attention
checks and gold items (docs/data_model.md, "Checks"), the voter e-process tests (adaptive/voter_flags.py), how
the answers were made (analysis/answer_signals.py: pasted text, implausible typing, leaving the page, answers
without the page's record or with records the server doubted, time per judgment, constant answers), text
shared with other participants (analysis/shared_text.py), the LLM-text score (metrics/llm_text.py), agreement
with the others (analysis/live_agreement.py) and the crowd platform's confirmation of the identity (Prolific's
verification: the records' ``unverified``). ``signals`` names what fired, ``reasons`` says why in words.

**The rule** (``RULE``; `--exclude-flagged`, adaptive collection and the dashboard apply this one): a worker is
flagged when a decisive signal fires (failed attention checks, as many as the study's rule says; a voter test at
its family-wise error; the task's quality test; an identity the platform never confirmed), or when two or more
of the others fire together. The LLM-text score is one of the others: it never flags anyone alone. A flag is
evidence for review, never a rejection: only failed attention checks qualify for one under Prolific's policy
(``rejection``), and `dialeval review` says so.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from parlai_dialeval.analysis import answer_signals, live_agreement, shared_text

DECISIVE = ("attention", "voter", "quality_test", "unverified", "forged")
SUPPORTING = ("attention_missed", "gold", "pasted", "typing", "away", "unrecorded", "doubted", "shared_text", "fast",
              "constant", "llm_text")
SIGNALS = DECISIVE + SUPPORTING
RULE = ("flagged when one decisive signal fires (attention: failed attention checks, as many as the study's rule; "
        "voter: a voter test at its family-wise error; quality_test: the task's own worker test; unverified: an "
        "identity the crowd platform never confirmed; forged: page records the server's clock or the texts "
        "contradict, on half the answers or more) or when two or more of the others fire together "
        "(attention_missed: fewer failed attention checks than the rule; gold, pasted, typing, away, unrecorded, "
        "doubted, shared_text, fast, constant, llm_text); the LLM-text score never flags alone")
REJECTION_CATEGORY = "FAILED_CHECK"
DEFAULT_CHECKS = {"attention_fail": 2, "gold_min_accuracy": 0.5}
FORGED_MIN = 3  # answers with doubted records before they are a decisive sign of a made-up record
COLUMNS = ["worker_id", "flagged", "signals", "reasons", "rejection", "rejection_message", "verified", "quality_test",
           "attention_items", "attention_right", "gold_items", "gold_right", "voter_flags", "pasted_share",
           "pasted_texts", "typing_ms", "away_answers", "answers", "unrecorded", "doubted", "shared_texts",
           "median_seconds", "fast_share", "constant_share", "llm_score", "rating_alpha", "with_majority"]


@dataclass
class Evidence:
    """``table``: one row per worker (``COLUMNS``); ``notes``: which signals could not run on these data, why."""

    table: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> list[str]:
        return sorted(self.table.loc[self.table["flagged"], "worker_id"].astype(str))

    def summary(self) -> dict:
        fired = {s: int(self.table["signals"].str.split(", ").apply(lambda names: s in names).sum()) for s in SIGNALS}
        return {"rule": RULE, "workers": int(len(self.table)), "flagged": self.flagged,
                "signals": {s: n for s, n in fired.items() if n}, "not_run": self.notes,
                "rejection_qualifies": sorted(self.table.loc[self.table["rejection"] != "", "worker_id"].astype(str))}

    def sentences(self) -> list[str]:
        return [f"worker {row.worker_id}: {'FLAGGED' if row.flagged else 'not flagged'} ({row.signals}): {row.reasons}"
                for row in self.table[self.table["signals"] != ""].itertuples(index=False)]


def study_rule(studies: list[dict]) -> dict:
    """The checks rule a launch wrote into its study records (``meta.checks``, platform/checks.py), else defaults."""
    for study in studies:
        rule = (study.get("meta") or {}).get("checks") if isinstance(study.get("meta"), dict) else None
        if isinstance(rule, dict):
            return {**DEFAULT_CHECKS, **rule}
    return dict(DEFAULT_CHECKS)


def evidence_table(conversations: pd.DataFrame, ratings: pd.DataFrame, comparisons: pd.DataFrame,
                   checks: pd.DataFrame | None = None, studies: list[dict] = (), voters=None,
                   quality: pd.DataFrame | None = None, verified: dict[str, bool] | None = None,
                   llm: pd.DataFrame | None = None, texts: pd.DataFrame | None = None,
                   settings: answer_signals.AnswerSettings = answer_signals.AnswerSettings()) -> Evidence:
    """The table (module docstring). ``checks``: the answers to check items (ratings and comparisons with a
    ``check``, ``EvalData.without_checks``); ``voters``: adaptive.voter_flags' VoterFlags or None;
    ``quality``: the task's worker test, columns worker_id and passed; ``verified``: worker -> whether the crowd
    platform confirmed them (None: taken from the records' ``unverified``); ``llm``: metrics.llm_text.worker_scores
    (worker_id, llm_score, llm_flag, why_llm) or None; ``texts``: the free texts (answer_signals.free_texts; None:
    taken from ``conversations`` and ``comparisons``)."""
    notes = []
    checks = checks if checks is not None else pd.DataFrame(columns=["worker_id", "check"])
    rule = study_rule(list(studies))
    texts = answer_signals.free_texts(conversations, comparisons) if texts is None else texts
    answers = answer_signals.worker_answers(texts, answer_signals.judgment_screens(ratings, comparisons), settings)
    shared = shared_text.shared_texts(texts) if len(texts) else pd.DataFrame(columns=["worker_id"])
    attention = live_agreement.attention_results(checks)
    gold = live_agreement.gold_accuracy(checks)
    _, rating_alpha = live_agreement.rating_agreement(ratings)
    _, majority = live_agreement.majority_agreement(_votes(comparisons))
    workers = _workers(conversations, ratings, comparisons, checks)
    table = pd.DataFrame({"worker_id": workers})
    for part in (answers, shared, attention, gold, rating_alpha, majority, llm, quality):
        if part is not None and len(part):
            table = table.merge(part.assign(worker_id=part["worker_id"].astype(str)), on="worker_id", how="left",
                                suffixes=("", "_dup"))
    if verified is None:
        verified = _verified_from_records(conversations, ratings, comparisons, checks)
    voter_rows = voters.evidence() if voters is not None else pd.DataFrame(columns=["worker_id", "test"])
    if voters is None:
        notes.append("voter tests: not run (no pairwise votes, or not asked for)")
    if quality is None:
        notes.append("the task's quality test: not run on these data")
    if llm is None:
        notes.append("LLM-text score: not run (give a local causal LM: --llm-text-model PATH)")
    if not attention.shape[0]:
        notes.append("attention checks: none in these data")
    rows = [_judge(row, rule, voter_rows, verified) for row in table.to_dict("records")]
    # no workers (a study record alone, self-chats): an empty table of text columns, which .str takes
    out = pd.DataFrame(rows) if rows else pd.DataFrame(columns=COLUMNS, dtype=object)
    out = out.reindex(columns=COLUMNS + [c for c in out.columns if c not in COLUMNS and not c.startswith(("why_", "_"))
                                         and not c.endswith("_dup")])
    order = out["flagged"].astype(int) * 100 + out["signals"].str.count(",") + (out["signals"] != "")
    return Evidence(out.iloc[np.argsort(-order.to_numpy(), kind="stable")].reset_index(drop=True), notes)


def _votes(comparisons: pd.DataFrame) -> pd.DataFrame:
    if comparisons.empty:
        return comparisons
    votes = comparisons
    if "onboarding" in votes:
        votes = votes[~votes["onboarding"].eq(True)]
    return votes


def _workers(*frames) -> list[str]:
    names = set()
    for frame in frames:
        if frame is not None and "worker_id" in frame.columns:
            names |= {str(w) for w in frame["worker_id"].dropna()}
    return sorted(names - {"automatic"})


def _verified_from_records(*frames) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for frame in frames:
        if frame is None or "worker_id" not in frame.columns:
            continue
        marked = frame["unverified"].eq(True) if "unverified" in frame.columns else pd.Series(False, index=frame.index)
        for worker, unverified in zip(frame["worker_id"].astype(str), marked):
            out[worker] = out.get(worker, True) and not unverified
    return out


def _text(row: dict, key: str) -> str:
    """A reason column's text ("" where it did not fire, or the worker is missing from its table: NaN)."""
    value = row.get(key)
    return value if isinstance(value, str) else ""


def _number(row: dict, key: str) -> float:
    value = row.get(key)
    try:
        return float(value) if value is not None else np.nan
    except (TypeError, ValueError):
        return np.nan


def _judge(row: dict, rule: dict, voter_rows: pd.DataFrame, verified: dict[str, bool]) -> dict:
    """One worker's row with its signals, reasons, flag and rejection grounds."""
    worker = row["worker_id"]
    reasons: dict[str, str] = {}
    items, right = _number(row, "attention_items"), _number(row, "attention_right")
    failed = int(items - right) if np.isfinite(items) else 0
    if failed and failed >= rule["attention_fail"]:
        reasons["attention"] = (f"failed {failed} of {int(items)} attention checks (each said what to answer; the "
                                f"study's rule: {rule['attention_fail']} or more)")
    elif failed:  # a slip happens to honest people: evidence only beside another signal
        reasons["attention_missed"] = (f"failed {failed} of {int(items)} attention checks (fewer than the study's "
                                       f"rule of {rule['attention_fail']}: supporting evidence only)")
    mine = voter_rows[voter_rows["worker_id"].astype(str) == worker] if len(voter_rows) else voter_rows
    if len(mine):
        reasons["voter"] = "; ".join(f"voter test {r.test}{' ' + str(r.target) if r.target else ''}: {r.hits} of "
                                     f"{r.votes} votes, e-value {r.e_value:.3g} >= {r.threshold:,.0f}"
                                     for r in mine.itertuples(index=False))
    passed = row.get("passed")
    passed = None if passed is None or (isinstance(passed, float) and np.isnan(passed)) else bool(passed)
    if passed is False:
        reasons["quality_test"] = "failed the task's own worker test (live chat: the QC-bot test; SM-Eval, PW-Turn: " \
                                  "Smith et al.'s checks)"
    if verified.get(worker) is False:
        reasons["unverified"] = "the crowd platform never confirmed this identity for the study (Prolific)"
    gold_items, gold_right = _number(row, "gold_items"), _number(row, "gold_right")
    if np.isfinite(gold_items) and gold_items and gold_right / gold_items < rule["gold_min_accuracy"]:
        reasons["gold"] = (f"{int(gold_right)} of {int(gold_items)} gold items right (under "
                           f"{rule['gold_min_accuracy']:.0%})")
    for name in ("pasted", "typing", "away", "unrecorded", "doubted", "fast", "constant"):
        if _text(row, f"why_{name}"):
            reasons[name] = row[f"why_{name}"]
    doubted, answers = _number(row, "doubted"), _number(row, "answers")
    if np.isfinite(doubted) and doubted >= FORGED_MIN and doubted >= answers / 2:
        reasons.pop("doubted", None)
        reasons["forged"] = (f"the page's record of {int(doubted)} of {int(answers)} answers contradicts the server's "
                             "clock or the text (no page of ours makes such records)")
    if np.isfinite(_number(row, "shared_texts")):
        why = shared_text.reason(row)
        if why:
            reasons["shared_text"] = why
    if _text(row, "why_llm"):
        reasons["llm_text"] = row["why_llm"]
    decisive = [s for s in DECISIVE if s in reasons]
    supporting = [s for s in SUPPORTING if s in reasons]
    flagged = bool(decisive) or len(supporting) >= 2
    out = {**row, "flagged": flagged, "signals": ", ".join(decisive + supporting),
           "reasons": "; ".join(f"{s}: {reasons[s]}" for s in decisive + supporting),
           "verified": {True: "yes", False: "no"}.get(verified.get(worker), "unknown"),
           "quality_test": {True: "pass", False: "fail"}.get(passed, "n/a"),
           "voter_flags": ", ".join(sorted(set(mine["test"].astype(str)))) if len(mine) else "",
           "rejection": "", "rejection_message": ""}
    if "attention" in reasons and failed >= 2:  # Prolific: two or more failed attention checks
        out["rejection"] = REJECTION_CATEGORY
        out["rejection_message"] = rejection_message(failed, int(items))
    return out


def rejection_message(failed: int, items: int) -> str:
    """What a participant reads when rejected for failed attention checks (Prolific wants 100+ characters that
    say what was wrong, so they can learn from it)."""
    return (f"This study included {items} attention checks; each said in its question exactly what to answer (for "
            f"example, to move a slider to a stated value or to choose a stated option). {failed} of your answers "
            "did not follow those instructions. Prolific's attention check policy allows a rejection for two or "
            "more failed checks.")


def excluded(evidence: Evidence) -> set[str]:
    """The workers whose work `--exclude-flagged` and adaptive collection leave out: the flagged ones (``RULE``)."""
    return set(evidence.flagged)
