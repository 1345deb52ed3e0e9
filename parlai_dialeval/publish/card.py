"""The dataset card of a published study: README.md with the YAML header the Hugging Face Hub reads
(https://huggingface.co/docs/hub/datasets-cards: license, language, task_categories, size_categories,
configs with their data_files) and a body saying what was collected and how. Facts come from the data
(``describe``); the quality-control rule, the headline and the researcher's statement from the caller."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined

from parlai_dialeval.atomic import atomic_open
from parlai_dialeval.data import EvalData

TEMPLATE = "dataset_card.md"
# The Hub's size buckets (datasets-cards: size_categories), by rows of the largest configuration.
SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
         (10_000_000, "1M<n<10M"))


def _judgments(data: EvalData) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ratings, and comparisons a worker made (no automatic ties, no onboarding items)."""
    comparisons = data.comparisons
    worked = ~(comparisons["automatic"].eq(True) | comparisons["onboarding"].eq(True))
    return data.ratings, comparisons[worked]


def describe(data: EvalData) -> dict:
    """Counts and names the card states: studies, protocols, questions, models, workers, judgments (of the
    published records: models and speakers that were ids or listed names are their pseudonyms there)."""
    ratings, comparisons = _judgments(data)
    conversations = data.conversation_fields()
    workers = set(ratings["worker_id"]) | set(comparisons["worker_id"]) | set(conversations["worker_id"].dropna())
    models = set(ratings["model"]) | set(comparisons["model_a"]) | set(comparisons["model_b"])
    for listed in conversations["models"]:
        models.update(listed)
    criteria = data.criteria()
    questions = sorted(set(comparisons["question"].dropna()) |
                       {c.get("question") or name for name, c in criteria.items()} |
                       (set(ratings["criterion"]) - set(criteria)))
    return {"studies": [{"name": s["name"], "description": s.get("description", "")} for s in data.studies],
            "tasks": sorted(set(conversations["task"].dropna())), "questions": questions,
            "models": sorted(models - data.qc_models()), "qc_models": sorted(data.qc_models()),
            "workers": len(workers), "ratings": len(ratings), "comparisons": len(comparisons),
            "automatic_ties": int(data.comparisons["automatic"].eq(True).sum()),
            "onboarding": int(data.comparisons["onboarding"].eq(True).sum()),
            "conversations": len(conversations)}


def renamed_in(paragraphs: list[str], renamed: dict[str, str]) -> list[str]:
    """The caller's paragraphs (the headline, written from the raw data) with each name the publication
    renamed (a model that was a worker id or a listed name: publish/fields.py) as it was published."""
    if not renamed or not paragraphs:
        return list(paragraphs or [])
    names = sorted(renamed, key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, names)) + r")(?!\w)")
    return [pattern.sub(lambda m: renamed[m.group()], paragraph) for paragraph in paragraphs]


def size_category(rows: int) -> str:
    return next((label for limit, label in SIZES if rows < limit), "n>10M")


def title(studies: list[dict]) -> str:
    """The studies' common name (``chateval-ab-2018`` for its 20 folders), else the first study's."""
    names = [s["name"] for s in studies] or ["study"]
    shared = os.path.commonprefix(names).rstrip("/_-. ")
    return shared if len(shared) >= 3 else names[0]


def header(facts: dict) -> dict:
    options = facts["options"]
    return {"pretty_name": options.pretty_name or title(facts["studies"]),
            "license": options.license, "language": [options.language],
            "annotations_creators": ["crowdsourced"], "language_creators": ["crowdsourced", "machine-generated"],
            "multilinguality": ["monolingual"], "size_categories": [size_category(max(facts["counts"].values()))],
            "task_categories": ["text-generation", "text-classification"],
            "tags": ["human-feedback", "preference", "dpo", "dialogue", "chatbot-evaluation", "parlai-dialeval"],
            "configs": [{"config_name": config, "data_files": [{"split": "train", "path": path}]}
                        for config, path in facts["files"].items()]}


def write_card(path: Path, facts: dict) -> None:
    """README.md from ``facts``: describe()'s keys, counts, files, options, scrubbed, pseudonymised,
    pairs_left_out, rated_left_out, qc (rule, flagged, records_excluded) and headline (paragraphs)."""
    environment = Environment(loader=FileSystemLoader(Path(__file__).parents[1] / "templates"), undefined=StrictUndefined,
                              keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    environment.filters["counted"] = lambda n, noun: f"{n} {noun}{'' if n == 1 else 's'}"  # 1 name, 2 names
    head = header(facts)
    body = environment.get_template(TEMPLATE).render(**facts, title=head["pretty_name"])
    with atomic_open(path, encoding="utf-8") as handle:
        handle.write("---\n" + yaml.safe_dump(head, sort_keys=False, allow_unicode=True) + "---\n\n" + body)
