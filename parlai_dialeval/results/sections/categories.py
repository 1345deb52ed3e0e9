"""Rankings per category of the pairwise analyses (analysis/categories.py): categories from the researcher's rules
matched against the prompts, or the comparisons' meta labels."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from parlai_dialeval.options import option
from parlai_dialeval.results.section import Section

CATEGORIES_HELP = ("YAML rule file, category: [regular expressions] matched (case-insensitive) against each prompt "
                   "(pairwise) or opening topic (live chat): one ranking per category, intervals corrected for the "
                   "number of categories (Bonferroni). Without it: the comparisons' meta.category labels, or live-chat "
                   "topics when there are at most 10")


@dataclass
class Categories:
    rankings: pd.DataFrame
    members: dict[str, int]  # category -> its votes (or conversations)
    source: str  # where the categories came from, in words
    level: float  # each interval's confidence (Bonferroni over the categories)
    alpha: float  # the family's: all categories' intervals hold together with probability 1 - alpha


def rules(given) -> dict[str, list[str]]:
    """Category rules from a YAML file's path or a mapping (checked alike)."""
    from parlai_dialeval.results.user_files import read_rules

    return read_rules(given)


def described(rankings: pd.DataFrame, membership: pd.DataFrame, source: str, alpha: float) -> Categories:
    from parlai_dialeval.analysis.categories import category_alpha

    return Categories(rankings, {name: int(membership[name].sum()) for name in membership.columns}, source,
                      1 - category_alpha(alpha, membership.shape[1]), alpha)


def compute(inputs, config, done: dict) -> Categories | None:
    from parlai_dialeval.analysis import categories
    from parlai_dialeval.results.sections.style import given

    comparisons = inputs.comparisons
    if given(config.categories):
        source = f"the rules of {config.categories}" if isinstance(config.categories, str) else "the rules given"
        membership = categories.rule_membership(categories.prompt_texts(comparisons), rules(config.categories))
    else:
        labels = categories.meta_labels(comparisons)
        if labels is None:
            return None
        membership, source = categories.label_membership(labels), "the category label in each comparison's meta"
    return described(categories.pairwise_rankings(comparisons, membership, config.alpha), membership, source,
                     config.alpha)


def summary(part: Categories) -> dict:
    return {"categories": {"source": part.source, "members": part.members, "interval_level": part.level}}


SECTION = Section("categories", compute, tables=lambda part: {"category_rankings": part.rankings}, summary=summary,
                  title="Rankings per category",
                  config=(("categories", str | None, option(None, CATEGORIES_HELP, metavar="F.yaml")),))
