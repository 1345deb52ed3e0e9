"""Santhanam & Shaikh (2020), rating-scale designs (section 4): the same readability and coherence
questions under a 6-point Likert scale, rank-based and biased magnitude estimation, and best-worst."""
from __future__ import annotations

from parlai_dialeval.protocols.base import Protocol, Question, TurnPolicy

CRITERIA = ("readability", "coherence")
WORDINGS = {
    "readability": "How easy is the response to read and understand?",
    "coherence": "How well does the response fit the conversation so far?",
}
LIKERT_SCALE = (1, 6)
MAGNITUDE_SCALE = (0, 999)
RME_REFERENCE = 100
BEST_WORST_SCALE = (-1, 1)
# Santhanam RQ3's two questions; keys as docs/single_model_analysis.md reads them from rating meta.
PRIOR_EXPERIENCE_QUESTIONS = {
    "prior_experience_evaluating": "Have you evaluated the output of dialogue systems (chatbots) before?",
    "prior_experience_agents": "Have you used conversational agents (e.g. Siri, Alexa, chatbots) before?",
}


def _design(name: str, title: str, kind: str, scale: tuple[float, float]) -> Protocol:
    return Protocol(name, f"Rating-scale design: {title}", "Santhanam & Shaikh 2020, section 4",
                    tuple(Question(c, c, WORDINGS[c], kind, scale) for c in CRITERIA),
                    TurnPolicy("response"), meta={"design": name, "family": "scale_designs"})


LIKERT = _design("likert", "6-point Likert", "likert", LIKERT_SCALE)
RME = _design("rme", "rank-based magnitude estimation (reference = 100)", "magnitude", MAGNITUDE_SCALE)
BME = _design("bme", "biased magnitude estimation (reference = an automatic score)", "magnitude", MAGNITUDE_SCALE)
BEST_WORST = _design("best_worst", "best-worst scaling", "best_worst", BEST_WORST_SCALE)

PROTOCOLS = (LIKERT, RME, BME, BEST_WORST)
DESIGNS = tuple(p.name for p in PROTOCOLS)
