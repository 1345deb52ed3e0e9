"""Single-model ratings with an LLM judge: PPI++ SM-Turn success rates and SM-Dialog Likert means next
to the human-only ones (parlai_dialeval.adaptive.ppi does the statistics). Pure functions.

Matching: a judge rating (``dialeval judge`` output, worker ``judge:...``) answers one item: the same
(model, criterion, conversation_id, turn_index) as human ratings. Human ratings on an item the judge
answered are the labelled rows, each with the judge's value; judge ratings on items no person rated are
the unlabelled rows; human ratings on items the judge did not answer are counted (``human_unjudged``).
Rows cluster by conversation (the turns of one conversation, the raters of one dialogue, are not
independent). The judge must answer on the humans' scale: ``dialeval judge`` asks the protocol's own.
"""
from __future__ import annotations

import pandas as pd

from parlai_dialeval.adaptive import ppi

KEY = ["model", "criterion", "conversation_id", "turn"]
COLUMNS = ["measure", "model", "criterion", "human_judgments", "judge_only", "human_unjudged",
           "clusters"] + ppi.ESTIMATE_COLUMNS


def _keyed(ratings: pd.DataFrame) -> pd.DataFrame:
    turn = ratings["turn_index"] if "turn_index" in ratings else pd.Series(float("nan"), index=ratings.index)
    return ratings.assign(turn=pd.to_numeric(turn, errors="coerce").fillna(-1),
                          conversation_id=ratings["conversation_id"].astype(str), value=ratings["value"].astype(float))


def ppi_means(human: pd.DataFrame, judge: pd.DataFrame, measure: str, alpha: float = 0.05) -> pd.DataFrame:
    """Per model and criterion, the mean rating (an SM-Turn success rate with every turn pooled, an
    SM-Dialog Likert mean) by people alone and by PPI++ with the judge, clustered by conversation."""
    human, judge = _keyed(human), _keyed(judge)
    answers = judge.groupby(KEY, sort=False)["value"].mean().rename("judge")
    people = human.join(answers, on=KEY)
    rated = pd.MultiIndex.from_frame(human[KEY].drop_duplicates())
    only = answers[~answers.index.isin(rated)].reset_index()
    rows = []
    for (model, criterion), part in people.groupby(["model", "criterion"], sort=True):
        labelled = part[part["judge"].notna()]
        extra = only[(only["model"] == model) & (only["criterion"] == criterion)]
        row = {"measure": measure, "model": model, "criterion": criterion, "human_judgments": len(labelled),
               "judge_only": len(extra), "human_unjudged": int(part["judge"].isna().sum()),
               "clusters": labelled["conversation_id"].nunique()}
        if labelled["conversation_id"].nunique() < 2:
            rows.append({**row, "note": "fewer than two conversations rated by both people and the judge: no estimate"})
            continue
        result = ppi.ppi_mean(labelled["value"], labelled["judge"], extra["judge"], labelled["conversation_id"],
                              extra["conversation_id"], alpha=alpha)
        rows.append({**row, **ppi.estimate_row(result)})
    return pd.DataFrame(rows, columns=COLUMNS)
