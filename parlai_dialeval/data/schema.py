"""The canonical evaluation data model: record types, their fields and the rules a valid file obeys.

Every collection task exports to this model and every analysis reads it. A file is JSON Lines; each
line is one record whose ``type`` is ``study``, ``conversation``, ``rating`` or ``comparison``.
docs/data_model.md is the human-readable version of this module; keep them in step.
"""
from __future__ import annotations

from dataclasses import dataclass

FORMAT_VERSION = "1.1"  # data/versions.py: what each version meant
RECORD_TYPES = ("study", "conversation", "rating", "comparison")
CHOICES = ("a", "b", "tie")
TIE_KINDS = ("tie", "both_bad")
CONVERSATION_STATUSES = ("complete", "incomplete", "returned", "failed", "onboarding")
# what became of the assignment (HIT) holding a conversation: only a submitted one is the worker's finished work
SUBMISSIONS = ("submitted", "working", "returned", "disconnected", "timed_out")

# JSON types a field may hold; "number" admits ints and floats but not booleans.
STR, NUM, INT, BOOL, LIST, DICT, STR_OR_LIST = "str", "number", "int", "bool", "list", "dict", "str|list"


@dataclass(frozen=True)
class Field:
    name: str
    kind: str
    required: bool = False
    help: str = ""


COMMON_FIELDS = (
    Field("type", STR, True, "record type"),
    Field("format_version", STR, False, f"data model version, currently {FORMAT_VERSION}; required in files"),
    Field("study", STR, False, "name of the study (run) the record belongs to"),
    Field("meta", DICT, False, "anything else the source held, kept verbatim"),
)

# work the crowd platform does not vouch for (a Prolific identity Prolific does not know, a submission returned)
UNVERIFIED = Field("unverified", BOOL, False,
                   "true: the crowd platform never confirmed the worker's identity, or the worker gave the assignment "
                   "back; analyses leave the record out unless --include-unverified")

# How an answer was made, as the worker's page recorded it (docs/data_model.md, "How an answer was made"):
# counts and times only, never key contents beyond the answer itself, never the mouse
PROVENANCE = Field("provenance", DICT, False,
                   "how the answer was made, as the page recorded it: {typed, pasted, ...} (docs/data_model.md)")
# an item that checks the worker rather than a model (docs/data_model.md, "Checks"); analyses set it aside
CHECK = Field("check", DICT, False,
              "{kind: attention | gold, passed, expected?, item?}: an answer to a check item, not a judgment of a "
              "model; analyses set it aside and the evidence table reads it")

FIELDS: dict[str, tuple[Field, ...]] = {
    "study": (
        Field("name", STR, True, "study name; other records point at it with `study`"),
        Field("criteria", LIST, False,
              "list of {name, positive (bool), scale, min, max, question, label}: drives reversal of "
              "negatively worded statements and quality control"),
        Field("qc_models", LIST, False, "model names of quality-control (degraded) bots"),
        Field("description", STR, False, "free text"),
    ),
    "conversation": (
        Field("id", STR, True, "unique conversation id"),
        Field("models", LIST, True, "model name(s) that took part; one for human-model chats"),
        Field("worker_id", STR, False, "crowd worker (absent for self-chats)"),
        Field("assignment_id", STR, False, "the worker's unit of work (an MTurk assignment / HIT)"),
        Field("hit_id", STR, False, "the task item the assignment answered"),
        Field("slot", INT, False, "position of this conversation within its assignment (0-based)"),
        Field("task", STR, False, "collection task, e.g. live_chat_da, sm_eval, self_chat, fed"),
        Field("turns", LIST, True,
              "list of {speaker, text, time?, meta?}; speaker is 'human' for the worker, "
              "else the model name (or 'bot' when unknown)"),
        Field("topic", STR, False, "opening topic"),
        Field("topic_attitude", STR, False, "like | ambivalent | dislike"),
        Field("personas", DICT, False, "speaker -> list of persona sentences"),
        Field("duration", NUM, False, "seconds the conversation took"),
        Field("assignment_duration", NUM, False, "seconds the whole assignment took"),
        Field("status", STR, False, "complete (default) | incomplete | returned | failed | onboarding"),
        Field("submission", STR, False,
              "the assignment holding it: submitted (default) | working | returned | disconnected | timed_out"),
        Field("feedback", STR, False, "worker's free-text feedback"),
        UNVERIFIED,
        Field("provenance", DICT, False, "how the free text of the assignment was made: {feedback: {typed, "
              "pasted, ...}} (docs/data_model.md)"),
    ),
    "rating": (
        Field("conversation_id", STR, True, "conversation (or item) rated"),
        Field("worker_id", STR, True, "rater"),
        Field("model", STR, True, "model whose output is rated"),
        Field("criterion", STR, True, "what is rated, e.g. interesting, engaging, overall"),
        Field("scale", STR, True, "continuous | likert | binary | magnitude | best_worst | count"),
        Field("scale_min", NUM, False, "lowest value of the scale"),
        Field("scale_max", NUM, False, "highest value of the scale"),
        Field("value", NUM, True, "the rating"),
        Field("turn_index", INT, False, "turn rated, for per-turn ratings (index into turns)"),
        Field("reference_value", NUM, False, "value of the reference item (magnitude estimation)"),
        Field("assignment_id", STR, False, "the worker's unit of work"),
        Field("duration", NUM, False, "seconds spent on this rating"),
        UNVERIFIED,
        PROVENANCE,
        CHECK,
    ),
    "comparison": (
        Field("item_id", STR, True, "the compared item (prompt, conversation pair, turn)"),
        Field("worker_id", STR, True, "annotator"),
        Field("model_a", STR, True, "model shown as option A"),
        Field("model_b", STR, True, "model shown as option B"),
        Field("choice", STR, True, "a | b | tie"),
        Field("turn_index", INT, False, "turn compared, for per-turn comparisons"),
        Field("question", STR, False, "the question answered, e.g. 'Who would you prefer to talk to?'"),
        Field("justification", STR, False, "annotator's reason"),
        Field("context", STR_OR_LIST, False, "prompt or dialogue history (string or list of turns)"),
        Field("response_a", STR, False, "model A's response text"),
        Field("response_b", STR, False, "model B's response text"),
        Field("conversation_a", STR, False, "conversation id shown for model A (PW-Dialog)"),
        Field("conversation_b", STR, False, "conversation id shown for model B (PW-Dialog)"),
        Field("automatic", BOOL, False, "true for ties decided without a worker (identical responses)"),
        Field("assignment_id", STR, False, "the worker's unit of work"),
        Field("duration", NUM, False, "seconds spent on this comparison"),
        Field("onboarding", BOOL, False, "true for onboarding/attention-check items"),
        # an adaptive launch with an LLM judge draws items for people at random (docs/ppi.md)
        Field("draw_probability", NUM, False,
              "adaptive launch with a judge: the probability with which this item was drawn from its pair's pool"),
        Field("draw_pool_size", INT, False, "adaptive launch with a judge: items in that pool (N)"),
        Field("draw_floor", NUM, False, "adaptive launch with a judge: the pool's smallest N x draw probability"),
        # the arena (crowdsourcing/arena): optional, so files without them read as before
        Field("weight", NUM, False, "the vote's weight in the Bradley-Terry fits (default 1; the arena's inverse "
                                    "sampling propensity, so an adaptive draw of pairs stays unbiased)"),
        Field("sampling_probability", NUM, False, "arena: the probability with which this battle's model pair was drawn"),
        Field("tie_kind", STR, False, "for a tie: tie (both equally good) | both_bad (neither is good)"),
        Field("anonymity_leak", BOOL, False, "true: a reply named its model or maker; analyses leave the vote out "
                                             "and count it"),
        Field("duplicate_prompt", BOOL, False, "true: the battle's prompt repeats an earlier one of the study (the "
                                               "arena's policy voids it); analyses leave the vote out and count it"),
        UNVERIFIED,
        PROVENANCE,
        CHECK,
    ),
}

# Comparison fields that mark a vote void (the arena): analyses and published training pairs leave such votes out,
# and say why (analysis/pairwise.py split_voided, publish/preferences.py).
VOIDED = {"anonymity_leak": "votes of battles where a reply named its model or maker (anonymity_leak)",
          "duplicate_prompt": "votes on a prompt the study already had (duplicate_prompt)"}
DRAW_FIELDS = ("draw_probability", "draw_pool_size", "draw_floor")  # a task export copies them from its item

TURN_FIELDS = (
    Field("speaker", STR, True),
    Field("text", STR, True),
    Field("time", NUM, False),
    Field("meta", DICT, False),
    Field("provenance", DICT, False),
)

# The keys of a provenance object (every one optional): a free text's record (a chat message, a justification,
# the feedback) and a judgment screen's record (a rating, a choice). Numbers are >= 0.
PROVENANCE_FIELDS = (
    Field("typed", INT, False, "characters typed (keys, on-screen keyboards, autocorrect)"),
    Field("pasted", INT, False, "characters pasted"),
    Field("dropped", INT, False, "characters dropped in by drag and drop"),
    Field("deleted", INT, False, "characters deleted"),
    Field("pastes", LIST, False, "the size of each paste, in characters (at most 20)"),
    Field("drops", LIST, False, "the size of each drop, in characters (at most 20)"),
    Field("keys", INT, False, "typed insertions (key presses that wrote)"),
    Field("compose_seconds", NUM, False, "seconds from the first key (or paste) to sending"),
    Field("key_interval_ms", NUM, False, "median milliseconds between typed insertions"),
    Field("pauses", INT, False, "pauses of 2 s or more between typed insertions"),
    Field("longest_pause", NUM, False, "the longest of them, in seconds"),
    Field("seconds", NUM, False, "a judgment: seconds from the screen shown to the answer sent"),
    Field("reread", BOOL, False, "a judgment: the conversation was scrolled back or opened again"),
    Field("changes", INT, False, "a judgment: answers changed before sending"),
    Field("away", INT, False, "times the page lost focus or was hidden (another tab, another window) meanwhile"),
    Field("away_seconds", NUM, False, "seconds it was away"),
    Field("doubts", LIST, False, "what the server found implausible in the page's record (its own clock, the text)"),
    Field("pasted_share", NUM, False, "a published dataset's coarse form of a text's record: the share of it pasted "
                                      "or dropped, to a quarter (docs/publishing.md)"),
)
# provenance keys holding the record of a free text inside a judgment's (comparison) or a conversation's
PROVENANCE_TEXTS = ("justification", "feedback")
CHECK_KINDS = ("attention", "gold")



@dataclass(frozen=True)
class Scale:
    """What a rating value on a scale type must be. ``low`` and ``high`` are assumed where a rating
    records no ``scale_min`` / ``scale_max`` (None: no bound)."""

    low: float | None = None
    high: float | None = None
    endpoints_only: bool = False  # binary: one end or the other, nothing between
    whole: bool = False
    reference: bool = False  # needs a non-negative reference_value (magnitude estimation)
    help: str = ""


SCALES = {
    "continuous": Scale(help="any finite number within the recorded range"),
    # 0-10 holds every Likert scale in the protocols we implement (FED 0-2 and 0-4, Smith et al. 1-5,
    # Santhanam & Shaikh 1-6) and the common 1-7 and 0-10 ones.
    "likert": Scale(0, 10, help="within [scale_min, scale_max]; 0-10 assumed where no range is recorded"),
    "binary": Scale(0, 1, endpoints_only=True, help="scale_min or scale_max; 0 or 1 where no range is recorded"),
    # Santhanam & Shaikh log-normalise as log10((value + 1) / (reference + 1)): both must be >= 0.
    "magnitude": Scale(0, reference=True, help="a number >= 0, with a reference_value >= 0"),
    "best_worst": Scale(-1, 1, whole=True, help="1 (best), -1 (worst) or 0"),
    "count": Scale(0, whole=True, help="a whole number >= 0"),
}
SCALE_TYPES = tuple(SCALES)

# Records that must not repeat: a second copy is the same work counted twice (a file given twice, an
# id reused by a task). Exempt: onboarding comparisons (a worker may retry the same known-answer items),
# attention-check ratings and best-worst ratings (one per item per tuple: an item comes back in other tuples).
UNIQUE_KEYS = {
    "conversation": ("id",),
    "comparison": ("study", "item_id", "worker_id", "assignment_id", "turn_index", "question", "model_a",
                   "model_b"),
    "rating": ("study", "conversation_id", "worker_id", "assignment_id", "criterion", "turn_index", "model"),
}
# Pairs of fields that must differ in one record: a model compared with itself says nothing.
DISTINCT = {"comparison": (("model_a", "model_b"),)}
# A canonical file stamps every record with its format version (write_jsonl does); records built in
# memory (importers, exports) may omit it.
FILE_REQUIRED = ("format_version",)

ENUMS = {
    ("comparison", "choice"): CHOICES,
    ("comparison", "tie_kind"): TIE_KINDS,
    ("rating", "scale"): SCALE_TYPES,
    ("conversation", "status"): CONVERSATION_STATUSES,
    ("conversation", "submission"): SUBMISSIONS,
}


def fields_of(record_type: str) -> tuple[Field, ...]:
    return COMMON_FIELDS + FIELDS[record_type]


def columns_of(record_type: str) -> list[str]:
    """DataFrame columns for a record type, in schema order (``type`` dropped)."""
    return [f.name for f in fields_of(record_type) if f.name != "type"]
