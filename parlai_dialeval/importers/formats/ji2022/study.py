"""Ji et al. (2022) study constants shared by both importers: models and their paper labels, run names,
topic-change codes, the seven statements (from parlai_dialeval.protocols), the study record and the report."""
from __future__ import annotations

from dataclasses import dataclass, field

from parlai_dialeval.importers.registry import ImportReport
from parlai_dialeval.protocols.ji2022 import LIVE_CHAT_DA

MTURK = "ji2022-mturk"
DIALOGUES = "ji2022-dialogues"
TASK = "live_chat_da"
QC_MODEL = "qc"
SCALE_MIN, SCALE_MAX = LIVE_CHAT_DA.questions[0].scale
SLOTS = 6
PERSONA_SEED_MAX = 500  # seed <= 500: the model was given a persona (the paper's "p" variant)

# The seven statements of the paper's Figure 1 (parlai_dialeval.protocols), in the paper's table order (Table 3).
CRITERIA = LIVE_CHAT_DA.study_criteria(LIVE_CHAT_DA.meta["table_order"], labels=True)
NEGATIVE = {c["name"] for c in CRITERIA if not c["positive"]}
# Order of the seven numbers in the MTurk ``score{i}`` field: "r#i#f#c#fl#rep#t#".
MTURK_SCORE_ORDER = ("robotic", "interesting", "fun", "consistent", "fluent", "repetitive", "topic")

# ParlAI model name -> (paper letter, description). Letters as in the paper's Table 3 caption.
MODELS = {
    "biencoder": ("A", "Bi-Encoder Transformer"),
    "polyencoder": ("B", "Poly-Encoder Transformer"),
    "kvmemnn": ("C", "Key-Value Memory Network"),
    "seq2seq": ("D", "Sequence to Sequence"),
    "lan_model": ("E", "LSTM-based language model"),
}
LETTER_TO_MODEL = {letter: name for name, (letter, _) in MODELS.items()}
RELEASE_QC_NAME = "QualityControl"


def model_labels() -> dict[str, str]:
    """Canonical model name -> the paper's label (``biencoder_p`` -> ``Ap``, ``qc`` -> ``QC``)."""
    labels = {}
    for name, (letter, _) in MODELS.items():
        labels[name], labels[f"{name}_p"] = letter, f"{letter}p"
    labels[QC_MODEL] = "QC"
    return labels


def model_descriptions() -> dict[str, str]:
    out = {}
    for name, (_, description) in MODELS.items():
        out[name] = f"{description} (ParlAI {name}), no persona"
        out[f"{name}_p"] = f"{description} (ParlAI {name}) with a persona"
    out[QC_MODEL] = "quality-control bot: random training-set responses with meaning distortion"
    return out


# Topic-change codes of the MTurk CSV and the sentences the released JSON uses for them.
TOPIC_CHANGES = {
    "bot change": "The chatbot changed the topic.",
    "user change next": "The user will change the topic in the next input.",
    "user change last": "The user changed the topic the last input.",
    "no change": "No topic change.",
}
TOPIC_CHANGE_CODES = {sentence: code for code, sentence in TOPIC_CHANGES.items()}

RUN_NAMES = {"free(run1)": "FreeTopicRound1", "free(run2)": "FreeTopicRound2",
             "icebreaker": "IceBreaker", "ice-breaker": "IceBreaker"}


def study_name(run: str) -> str:
    return f"ji2022-{run}"


def study_record(run: str, source: str, empty_submissions: list[dict] | None = None) -> dict:
    meta = {
        "source": source,
        "paper": "Ji et al. 2022, Achieving Reliable Human Assessment of Open-Domain Dialogue Systems (ACL)",
        "model_labels": model_labels(),
        "model_descriptions": model_descriptions(),
        "persona_rule": f"seed <= {PERSONA_SEED_MAX} means the model had a persona (name suffix _p)",
    }
    if empty_submissions is not None:
        meta["empty_submissions"] = empty_submissions
    return {
        "type": "study",
        "name": study_name(run),
        "description": f"Ji et al. 2022 live-chat direct assessment, run {run}: each assignment holds six "
                       "live conversations (five genuine models and the quality-control bot 'qc') "
                       "rated on seven 0-100 statements.",
        "criteria": [dict(c) for c in CRITERIA],
        "qc_models": [QC_MODEL],
        "meta": meta,
    }


@dataclass
class Ji2022Report(ImportReport):
    """ImportReport plus the units it counted (assignments, workers) for a readable summary."""

    unit: str = "assignments"
    workers_read: set = field(default_factory=set)
    workers_kept: set = field(default_factory=set)
    conversations: int = 0
    ratings: int = 0
    files: list[str] = field(default_factory=list)
    studies: list[str] = field(default_factory=list)

    def summary(self) -> str:
        head, *skips = super().summary().split("\n")
        detail = [
            f"  read {self.read} {self.unit} from {len(self.workers_read)} workers in {len(self.files)} "
            f"file(s); studies: {', '.join(self.studies)}",
            f"  kept {self.kept} {self.unit} from {len(self.workers_kept)} workers: "
            f"{self.conversations} conversations, {self.ratings} ratings",
        ]
        return "\n".join([head] + detail + skips)


def rating_records(study: str, conversation_id: str, worker: str, model: str, assignment: str,
                   values: dict[str, int]) -> list[dict]:
    return [{"type": "rating", "study": study, "conversation_id": conversation_id, "worker_id": worker,
             "model": model, "criterion": c["name"], "scale": "continuous", "scale_min": SCALE_MIN,
             "scale_max": SCALE_MAX, "value": values[c["name"]], "assignment_id": assignment}
            for c in CRITERIA]
