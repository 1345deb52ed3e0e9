"""The data types of a protocol: its questions (wording shown to people, kind, scale, criterion,
reversal) and its turn policy. Pure data: no Mephisto, no pandas."""
from __future__ import annotations

from dataclasses import dataclass, field

from parlai_dialeval.errors import DialevalError

KINDS = ("pairwise", "likert", "binary", "continuous", "magnitude", "best_worst")


class ProtocolError(DialevalError):
    """An unknown protocol or question, named with the valid choices."""


def normalise(text: str) -> str:
    """Wording as compared across records: case and runs of whitespace do not matter."""
    return " ".join(str(text).lower().split())


@dataclass(frozen=True)
class Question:
    """One question a worker (or a judge) answers.

    ``id``: the key configs use (``pw_turn.question=humanness``); ``criterion``: the canonical criterion
    the answer is stored under (``humanlike``); ``kind``: pairwise | likert | binary | continuous |
    magnitude | best_worst; ``scale``: (min, max) of the stored value, None for pairwise choices;
    ``positive``: False when agreeing is bad (reversed in analysis, Ji et al.'s robotic/repetitive).
    """

    id: str
    criterion: str
    wording: str
    kind: str
    scale: tuple[float, float] | None = None
    positive: bool = True
    label: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"question {self.id}: kind {self.kind!r} is not one of {', '.join(KINDS)}")


@dataclass(frozen=True)
class TurnPolicy:
    """What is rated and which turns count.

    ``unit``: turn | dialog | response (one next utterance out of context); ``num_turns``: bot messages
    per conversation; ``fixed_opening``: the worker's fixed first message; ``analysis_turns``: the Bot
    Speaker turns (1-based, inclusive) the paper's analysis keeps, None for all.
    """

    unit: str
    num_turns: int | None = None
    fixed_opening: str | None = None
    analysis_turns: tuple[int, int] | None = None
    history_delimiter: str = "\n"


@dataclass(frozen=True)
class Protocol:
    """A human-evaluation protocol: its questions, in the order the task shows them, and its turn policy."""

    name: str
    title: str
    source: str
    questions: tuple[Question, ...]
    turns: TurnPolicy
    prompt: str | None = None
    meta: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        kinds = {q.kind for q in self.questions}
        return kinds.pop() if len(kinds) == 1 else "mixed"

    @property
    def pairwise(self) -> bool:
        return self.kind == "pairwise"

    def ids(self) -> tuple[str, ...]:
        return tuple(q.id for q in self.questions)

    def criteria(self) -> tuple[str, ...]:
        return tuple(q.criterion for q in self.questions)

    def question(self, key: str) -> Question:
        """The question with this id, criterion or wording (case and spacing ignored)."""
        wanted = normalise(key)
        for q in self.questions:
            if wanted in (q.id.lower(), q.criterion.lower(), normalise(q.wording)):
                return q
        raise ProtocolError(f"protocol {self.name}: unknown question {key!r} "
                            f"(expected one of {', '.join(self.ids())})")

    def wording(self, key: str) -> str:
        return self.question(key).wording

    def criterion(self, key: str) -> str:
        return self.question(key).criterion

    def study_criteria(self, order: tuple[str, ...] | None = None, labels: bool = False) -> list[dict]:
        """The ``criteria`` list of a canonical study record (docs/data_model.md), in ``order`` (ids)
        when given, with each question's display label when ``labels``."""
        chosen = [self.question(k) for k in order] if order else list(self.questions)
        out = []
        for q in chosen:
            entry = {"name": q.criterion, "positive": q.positive, "scale": q.kind, "question": q.wording}
            if labels and q.label:
                entry["label"] = q.label
            if q.scale is not None:
                entry["min"], entry["max"] = q.scale
            out.append(entry)
        return out
