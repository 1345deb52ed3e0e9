"""Worker checks of the per-turn tasks (Smith et al. 2022, Appendix B), as pure functions.

A conversation fails when the worker's typed messages (the fixed opening "Hi!" excluded):
  - ``short_messages``: average fewer than three words;
  - ``greeting_first``: the first typed message contains a greeting (redundant after the fixed "Hi!");
  - ``all_caps``: several messages (``min_caps_messages``, default 2) are written in capitals;
  - ``repeated_first``: later messages duplicate the first one;
  - ``offensive``: a message uses a word or phrase of the shipped list (offensive_words.txt).
Short messages, repetition and offensive language are ParlAI's own ``AcceptabilityChecker`` (the checks
of its crowdsourcing tasks), its ``OffensiveStringMatcher`` given ``offensive_words.txt`` (English words
and phrases, one per line, shipped so that nothing is downloaded: ParlAI would fetch its list); the
matcher also counts affixed forms ("prickly", "cocker"), though on the 4,419 lines of the ChatterBot
corpus it flags the same two lines as whole-word matching does. Greetings
and capitals keep their own rules, because ParlAI's compare only the first whitespace token ("Hello,"
is no greeting there) and count any message equal to its upper case ("OK", "123") as shouting.
Smith et al. drop *all* evaluations of a worker with at least one failed conversation;
``apply_worker_checks`` does that and returns the per-worker summary saying who was dropped and why.
The collection tasks store the same result in ``conversation.meta["worker_checks"]`` at collection
time (for optional blocking); analysis recomputes from the turns, so both always agree.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence


CHECKS = ("short_messages", "greeting_first", "all_caps", "repeated_first", "offensive")
FIXED_OPENING = "Hi!"
GREETINGS = ("hi", "hello", "hey", "hiya", "howdy", "greetings", "yo", "heya", "hi there", "good morning",
             "good afternoon", "good evening", "what's up", "whats up", "sup")
WORD_LIST = Path(__file__).with_name("offensive_words.txt")
_TOKEN = re.compile(r"[a-z0-9']+")


@dataclass(frozen=True)
class CheckSettings:
    min_mean_words: float = 3.0
    min_caps_messages: int = 2
    # messages with fewer letters ("OK", "I") are not counted as written in capitals
    caps_min_letters: int = 4
    min_repeats: int = 1


@lru_cache(maxsize=None)
def offensive_words(path: Path = WORD_LIST) -> frozenset[str]:
    """The shipped word list (lower case; phrases kept as space-joined tokens)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(" ".join(_tokens(line)) for line in lines if line.strip())


@lru_cache(maxsize=None)
def acceptability_checker(path: Path = WORD_LIST, min_words: float = 3.0):
    """ParlAI's AcceptabilityChecker with its offensive-language matcher reading ``path`` (compat/parlai.py)."""
    from parlai_dialeval.compat.parlai import acceptability_checker as checker

    return checker(str(path), min_words)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower().replace("\u2019", "'"))


def _contains_phrase(text: str, phrases: Iterable[str]) -> bool:
    padded = f" {' '.join(_tokens(text))} "
    return any(f" {phrase} " in padded for phrase in phrases)


def _is_all_caps(text: str, min_letters: int) -> bool:
    letters = [c for c in text if c.isalpha()]
    return len(letters) >= min_letters and all(c.isupper() for c in letters)


def check_messages(messages: Sequence[str], settings: CheckSettings = CheckSettings(),
                   words: Path = WORD_LIST) -> dict[str, bool]:
    """Check name -> True when violated, for one conversation's typed worker messages (in order)."""
    from parlai.crowdsourcing.utils.acceptability import normalize_answer

    checker = acceptability_checker(words, settings.min_mean_words)
    found = checker.check_messages(list(messages), is_worker_0=False, violation_types=("min_words", "safety"))
    first = normalize_answer(messages[0]) if messages else ""
    repeats = sum(normalize_answer(m) == first for m in messages[1:])
    return {
        # ParlAI passes an empty list (a disconnect); a conversation with no typed message fails here
        "short_messages": not messages or "under_min_length" in found,
        "greeting_first": bool(messages) and _contains_phrase(messages[0], GREETINGS),
        "all_caps": sum(_is_all_caps(m, settings.caps_min_letters) for m in messages) >= settings.min_caps_messages,
        "repeated_first": bool(first) and repeats >= settings.min_repeats,
        "offensive": "unsafe:" in found,
    }


def violations(result: dict[str, bool]) -> list[str]:
    return [name for name in CHECKS if result.get(name)]


def worker_messages(turns: Sequence[dict], fixed_opening: str | None = FIXED_OPENING) -> list[str]:
    """The worker's typed messages: human turns, minus the fixed opening.

    The opening is recognised by ``turn.meta.fixed`` (what this project's tasks write) or, for other
    sources, by being the first human turn with exactly the fixed text.
    """
    human = [t for t in turns if t.get("speaker") == "human"]
    typed = [t for t in human if not (t.get("meta") or {}).get("fixed")]
    if fixed_opening is not None and len(typed) == len(human) and typed and typed[0]["text"] == fixed_opening:
        typed = typed[1:]
    return [t["text"] for t in typed]


def check_conversations(conversations: pd.DataFrame, settings: CheckSettings = CheckSettings(),
                        fixed_opening: str | None = FIXED_OPENING) -> pd.DataFrame:
    """One row per human-model conversation handed in (with a worker_id, finished, of a submitted assignment:
    analysis/completeness.py): checks as booleans plus ``failed``. Work not handed in is not analysed, so it is
    not judged either: a PW-Turn participant who stopped after the practice holds only the page's own "Hi!",
    which is no short message of theirs (issue 50 item 3)."""
    import pandas as pd  # a live task's worlds check messages with this module and need no pandas (0.4 s)

    from parlai_dialeval.analysis.completeness import finished, submitted

    handed_in = pd.Series(True, index=conversations.index)
    for column, kept in (("status", finished), ("submission", submitted)):
        if column in conversations:
            handed_in &= kept(conversations[column])
    rows = []
    for conv in conversations[handed_in].itertuples(index=False):
        if not isinstance(conv.worker_id, str):
            continue
        result = check_messages(worker_messages(conv.turns, fixed_opening), settings)
        rows.append({"conversation_id": conv.id, "worker_id": conv.worker_id, **result,
                     "failed": any(result.values())})
    return pd.DataFrame(rows, columns=["conversation_id", "worker_id", *CHECKS, "failed"])


def summarise_workers(checks: pd.DataFrame) -> pd.DataFrame:
    """Per worker: conversations checked, conversations failed, and each check's violation count."""
    summary = checks.groupby("worker_id").agg(conversations=("conversation_id", "size"),
                                              failed=("failed", "sum"),
                                              **{name: (name, "sum") for name in CHECKS})
    return summary.astype(int).reset_index()


def worker_report(records: list[dict], alpha: float | None = None,
                  settings: CheckSettings = CheckSettings()) -> pd.DataFrame:
    """The ``dialeval qc_workers`` table of a per-turn task: per worker ``passed`` (no failed
    conversation) and the counts of ``summarise_workers``. These checks are rules, not a test: a
    significance level (``qc_workers --alpha``) has nothing to act on and is refused, not ignored."""
    from parlai_dialeval.data import from_records
    from parlai_dialeval.errors import DialevalError

    if alpha is not None:
        raise DialevalError(f"--alpha {alpha}: this task's worker checks are Smith et al.'s Appendix B rules "
                            f"({', '.join(CHECKS)}), with no significance test; leave --alpha out")

    summary = summarise_workers(check_conversations(from_records(records).conversations, settings))
    summary.insert(1, "passed", summary["failed"] == 0)
    return summary


def apply_worker_checks(data, settings: CheckSettings = CheckSettings(),
                        fixed_opening: str | None = FIXED_OPENING):
    """Drop every conversation, rating and comparison of workers with a failed conversation.

    Returns ``(filtered EvalData, per-worker summary)``; the summary's ``dropped`` column says who went.
    """
    from parlai_dialeval.data import EvalData

    summary = summarise_workers(check_conversations(data.conversations, settings, fixed_opening))
    summary["dropped"] = summary["failed"] > 0
    dropped = set(summary.loc[summary["dropped"], "worker_id"])

    def keep(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[~frame["worker_id"].isin(dropped)].reset_index(drop=True)

    filtered = EvalData(list(data.studies), keep(data.conversations), keep(data.ratings), keep(data.comparisons))
    return filtered, summary
