"""Measure the offline bots' quality on held-out (message, reference response) pairs.

Two reference-based measures, both computed per reply and averaged: ParlAI's unigram F1 against
the reference response, and TF-IDF cosine similarity between reply and reference (the vectorizer
fitted on the references, so no bot's own corpus shapes it).
"""
from __future__ import annotations

from statistics import mean

from parlai.core.metrics import F1Metric
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import paired_cosine_distances
from tqdm import tqdm


def replies(agent, messages: list[str]) -> list[str]:
    """The agent's reply to each message, each as the opening of a fresh conversation."""
    out = []
    for message in tqdm(messages, desc=f"replies of {agent.id}", unit="msg", leave=False):
        agent.reset()
        agent.observe({"text": message, "episode_done": False})
        out.append(agent.act()["text"])
    return out


def score(responses: list[str], references: list[str]) -> dict:
    f1 = [F1Metric.compute(r, [ref]).value() for r, ref in zip(responses, references)]
    vectorizer = TfidfVectorizer().fit(references)
    similarity = 1 - paired_cosine_distances(vectorizer.transform(responses), vectorizer.transform(references))
    return {"f1": round(mean(f1), 4), "tfidf_similarity": round(float(similarity.mean()), 4), "n": len(references)}


def compare(agents: dict, pairs: list[tuple[str, str]]) -> dict[str, dict]:
    """{bot name: score(...)} for every agent on the same (message, reference) pairs."""
    messages, references = [m for m, _ in pairs], [r for _, r in pairs]
    return {name: score(replies(agent, messages), references) for name, agent in agents.items()}
