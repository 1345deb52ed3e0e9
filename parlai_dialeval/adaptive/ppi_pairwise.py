"""Pairwise votes with an LLM judge: PPI++ win rates and Bradley-Terry scores next to the human-only
ones (parlai_dialeval.adaptive.ppi does the statistics). Pure functions: DataFrames in, DataFrames out.

Matching: a judge record (``dialeval judge`` output, worker ``judge:...``) answers one item: the same
(question, unit, model pair, item_id, turn_index) as human votes. A human vote with no recorded question
stands for each question the judge was asked on its item (judge/items.py asks them all; ChatEval records
none), and a recorded wording differing from the judge's only in case and spacing is the judge's
(protocols.normalise), as judge/agreement.py matches them. Human votes on an item the judge
answered are the labelled rows, each with the judge's answer; judge answers on items no person judged
are the unlabelled rows; human votes on items the judge did not answer cannot enter PPI and are
counted (``human_unjudged``). Outcomes for ``model_a``: 1 won, 0 lost, 1/2 tie (worker ties and
the judge's ties, flips across the two orders included); automatic ties are left out. Rows cluster by
the project's one rule (``cluster_robust.cluster_ids``: an A/B prompt, a conversation pair, a PW-Turn
conversation).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from parlai_dialeval.adaptive import ppi
from parlai_dialeval.analysis.cluster_robust import cluster_ids
from parlai_dialeval.analysis.pairwise import NO_QUESTION, SECTION, oriented, with_sections
from parlai_dialeval.protocols.base import normalise

KEY = SECTION + ["first", "second", "item_id", "turn"]
WIN_RATE_COLUMNS = SECTION + ["model_a", "model_b", "human_judgments", "judge_only", "human_unjudged",
                              "clusters"] + ppi.ESTIMATE_COLUMNS
BT_COLUMNS = SECTION + ["model", "bt_human", "bt_human_ci_low", "bt_human_ci_high", "bt_ppi", "bt_ppi_ci_low",
                        "bt_ppi_ci_high", "judge_weight", "human_judgments", "judge_only", "note"]
# A fitted log-strength beyond this means a model never lost (or never won): no finite estimate.
SEPARATED = 15.0


def matched(human: pd.DataFrame, judge: pd.DataFrame) -> pd.DataFrame:
    """Human and judge comparisons in one frame, oriented together (``first``/``second`` per section),
    with ``outcome`` for ``first``, ``judged`` (True for judge rows), ``turn`` (turn_index or -1) and
    ``cluster``."""
    both = pd.concat([asked_as_the_judge(human, judge).assign(judged=False), judge.assign(judged=True)],
                     ignore_index=True)
    frame = oriented(with_sections(both), by=SECTION)
    frame = frame[~frame["auto"]]
    turn = frame["turn_index"] if "turn_index" in frame else pd.Series(np.nan, index=frame.index)
    return frame.assign(outcome=(frame["score"] + 1) / 2, turn=pd.to_numeric(turn, errors="coerce").fillna(-1),
                        item_id=frame["item_id"].astype(str), cluster=cluster_ids(frame))


def asked_as_the_judge(human: pd.DataFrame, judge: pd.DataFrame) -> pd.DataFrame:
    """Human votes under the wording of the judge's question on the same item (see the module's matching): what
    PPI win rates, certify --judge and plan --judge match on."""
    if "question" not in judge or judge.empty or human.empty:
        return human

    def item(frame):
        a, b = frame["model_a"].astype(str), frame["model_b"].astype(str)
        turn = pd.to_numeric(frame["turn_index"], errors="coerce").fillna(-1).astype(int).astype(str) \
            if "turn_index" in frame else "-1"
        return frame["item_id"].astype(str) + "\x1f" + a.where(a < b, b) + "\x1f" + b.where(a < b, a) + "\x1f" + turn

    def wording(question):
        return question.map(lambda q: normalise(q) if isinstance(q, str) and q.strip() and q != NO_QUESTION else "")

    asked = pd.DataFrame({"_item": item(judge), "_wording": wording(judge["question"]),
                          "_judge_question": judge["question"]}).query("_wording != ''").drop_duplicates(
        ["_item", "_wording"])
    question = human["question"] if "question" in human else pd.Series(np.nan, index=human.index, dtype=object)
    people = human.assign(_item=item(human), _wording=wording(question), _row=np.arange(len(human)))
    blank = people["_wording"].eq("")
    recorded = people[~blank].merge(asked, on=["_item", "_wording"], how="left")
    unrecorded = people[blank].merge(asked.drop(columns="_wording"), on="_item", how="left")
    out = pd.concat([recorded, unrecorded]).sort_values("_row", kind="stable")
    out["question"] = out["_judge_question"].where(out["_judge_question"].notna(), out.get("question"))
    return out.drop(columns=["_item", "_wording", "_row", "_judge_question"]).reset_index(drop=True)


def _split(part: pd.DataFrame):
    """(labelled human votes with the judge's answer ``judge``, judge-only answers, unjudged human votes)."""
    grouped = part[part["judged"]].groupby(KEY, sort=False, dropna=False)
    answers = grouped.agg(judge=("outcome", "mean"), cluster=("cluster", "first"))
    people = part[~part["judged"]].join(answers[["judge"]], on=KEY)
    labelled = people[people["judge"].notna()]
    judged_keys = pd.MultiIndex.from_frame(people[KEY].drop_duplicates())
    only = answers[~answers.index.isin(judged_keys)].reset_index()
    return labelled, only, people[people["judge"].isna()]


def win_rates(human: pd.DataFrame, judge: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per question, unit and model pair: model_a's vote share (ties 1/2) by people alone and by PPI++
    with the judge, clustered by item, with the power-tuning weight and the effective human votes."""
    frame = matched(human, judge)
    pair = SECTION + ["first", "second"]
    # split once, then by pair (KEY holds the pair, so each pair's parts are what splitting it alone gives; a
    # split per pair cost 40 ms of pandas each: 5 minutes for the 7,884 pairs of 200 models)
    labelled_all, only_all, unjudged_all = _split(frame)
    labelled_of = dict(iter(labelled_all.groupby(pair, sort=False)))
    only_of = dict(iter(only_all.groupby(pair, sort=False)))
    unjudged_of = unjudged_all.groupby(pair, sort=False).size().to_dict()
    rows = []
    for question, unit, first, second in frame[pair].drop_duplicates().itertuples(index=False, name=None):
        key = (question, unit, first, second)
        labelled = labelled_of.get(key, labelled_all.iloc[:0])
        only = only_of.get(key, only_all.iloc[:0]).reset_index(drop=True)
        unjudged = int(unjudged_of.get(key, 0))
        row = {"question": question, "unit": unit, "model_a": first, "model_b": second,
               "human_judgments": len(labelled), "judge_only": len(only), "human_unjudged": unjudged,
               "clusters": labelled["cluster"].nunique()}
        if len(labelled) < 2:
            rows.append({**row, "note": "fewer than two human votes on judged items: no estimate"})
            continue
        result = ppi.ppi_mean(labelled["outcome"], labelled["judge"], only["judge"], labelled["cluster"],
                              only["cluster"], alpha=alpha)
        rows.append({**row, **ppi.estimate_row(result)})
    return pd.DataFrame(rows, columns=WIN_RATE_COLUMNS)


def bradley_terry(human: pd.DataFrame, judge: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Per question and unit: Bradley-Terry log-strengths (mean 0) from a logistic model on pair
    indicators, by people alone and by PPI++ with the judge, clustered by item."""
    frame = matched(human, judge)
    rows = []
    for (question, unit), part in frame.groupby(SECTION, sort=False):
        labelled, only, _ = _split(part)
        models = sorted(set(part["first"]) | set(part["second"]))
        base = {"question": question, "unit": unit, "human_judgments": len(labelled), "judge_only": len(only)}
        if len(models) < 2 or len(labelled) < 2:
            continue
        index = pd.Index(models)
        pairs = [index.get_indexer(frame[side]) for frame in (labelled, only) for side in ("first", "second")]
        try:
            result = ppi.centred(ppi.ppi_bradley_terry(models, pairs[:2], labelled["outcome"], labelled["judge"],
                                                       pairs[2:], only["judge"], labelled["cluster"], only["cluster"],
                                                       alpha=alpha), len(models))
        except np.linalg.LinAlgError:
            result = None
        if result is None or not np.all(np.abs(np.concatenate([result.estimate, result.human_estimate]))
                                        < SEPARATED):
            rows += [{**base, "model": m, "note": "no finite Bradley-Terry fit: a model never won or never lost "
                      "against the others, or the models are not connected by votes"} for m in models]
            continue
        (low, high), (h_low, h_high) = result.interval(), result.interval(human=True)
        for i, model in enumerate(models):
            rows.append({**base, "model": model, "bt_human": result.human_estimate[i], "bt_human_ci_low": h_low[i],
                         "bt_human_ci_high": h_high[i], "bt_ppi": result.estimate[i], "bt_ppi_ci_low": low[i],
                         "bt_ppi_ci_high": high[i], "judge_weight": result.lam, "note": ppi.note(result)})
    return pd.DataFrame(rows, columns=BT_COLUMNS)
