"""Rankings by the people who judged: Bradley-Terry strengths per group of workers (a participant attribute:
Prolific's demographic export, data/participants.py), whether the groups disagree, and the ranking weighted to a
target population (analysis/raking.py).

- Groups: ``parse_by`` reads ``--by ATTRIBUTE`` (a numeric attribute in bands: ``age`` in 18-29, 30-49, 50+, or
  ``age:18,30,50`` for the bands' lower edges); ``worker_levels`` gives each worker their level, a worker the
  file does not describe, or whose answer is missing, the level NOT_GIVEN.
- Strengths per group: the one Bradley-Terry (bradley_terry.fit through style_control.bt_table: a model that never
  lost said so, disconnected models left out) with a covariance clustered two ways, by item (cluster_robust.cluster_ids)
  and by worker (Cameron, Gelbach & Miller 2011: V_item + V_worker - V_item x worker, t with min(effective
  clusters) - 1 degrees of freedom), each cluster whole across model pairs (``clustered_cov``), since one worker's
  taste for a model moves their votes on many items and pairs together. Each group's intervals are at level 1 - alpha / K for K groups (Bonferroni: the K groups'
  intervals hold together with probability at least 1 - alpha). A group of fewer than ``min_workers`` workers is
  reported as too small, not fitted.
- Disagreement: a score (Rao) statistic of a group x model interaction at the pooled fit, sum_g U_g' I_g^+ U_g,
  its p-value from permutations of the groups' labels across workers: exact under the null that the attribute
  says nothing about how a worker votes, whatever the dependence of one worker's votes or of votes on one item
  (a chi-square reference would count votes as independent). The NOT_GIVEN group is left out of it: it is not a
  population.

Pure: DataFrames and arrays in, DataFrames out; the section (results/sections/groups.py) reads the files.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from parlai_dialeval.analysis import bradley_terry as bt
from parlai_dialeval.errors import DialevalError

NOT_GIVEN = "(not given)"
AGE_EDGES = (18, 30, 50)  # --by age: under 18, 18-29, 30-49, 50+
RANKING_COLUMNS = ["question", "unit", "group", "model", "votes", "workers", "bt", "ci_low", "ci_high", "rank",
                   "note", "confidence"]
WEIGHTED_COLUMNS = ["question", "unit", "model", "votes", "bt", "ci_low", "ci_high", "rank", "bt_weighted",
                    "weighted_ci_low", "weighted_ci_high", "rank_weighted", "note"]


@dataclass(frozen=True)
class By:
    """An attribute to group workers by, and for a number the lower edges of its bands (None: levels as given)."""

    attribute: str
    edges: tuple[float, ...] | None = None

    def __str__(self) -> str:
        return self.attribute


def parse_by(text: str, numeric: bool = False) -> By:
    """``ATTRIBUTE`` or ``ATTRIBUTE:EDGE,EDGE,...`` (a numeric attribute's bands by their lower edges, increasing);
    ``age`` alone takes AGE_EDGES, another number needs its edges (``numeric``: the column holds numbers)."""
    name, _, edges = str(text).partition(":")
    name = name.strip()
    if not name:
        raise DialevalError(f"--by {text!r}: name an attribute (a column of the participants file)")
    if not edges:
        if numeric and name != "age":
            raise DialevalError(f"--by {name}: a number; give its bands' lower edges, e.g. --by {name}:10,20")
        return By(name, AGE_EDGES if numeric else None)
    try:
        values = tuple(float(e) for e in edges.split(","))
    except ValueError:
        raise DialevalError(f"--by {text!r}: bands' lower edges must be numbers, e.g. age:18,30,50") from None
    if list(values) != sorted(set(values)):
        raise DialevalError(f"--by {text!r}: bands' lower edges must increase")
    return By(name, values)


def _number(value: float) -> str:
    return f"{value:g}"


def band_labels(edges: tuple[float, ...]) -> list[str]:
    """The bands' names in order: 'under 18', '18-29', '30-49', '50+' for edges 18, 30, 50 (whole numbers: the
    band ends one below the next edge; else 'from 2.5 to under 4')."""
    whole = all(float(e).is_integer() for e in edges)
    labels = [f"under {_number(edges[0])}"]
    for low, high in zip(edges, edges[1:]):
        labels.append(f"{_number(low)}-{_number(high - 1)}" if whole else f"from {_number(low)} to under "
                      f"{_number(high)}")
    return labels + [f"{_number(edges[-1])}+"]


def levels(values: pd.Series, by: By) -> pd.Series:
    """Each value's level as text (a band for a number), NOT_GIVEN where missing."""
    if by.edges is None:
        return values.astype(object).where(values.notna(), NOT_GIVEN).astype(str)
    numbers = pd.to_numeric(values, errors="coerce").to_numpy(float)
    labels = np.array(band_labels(by.edges), dtype=object)
    out = labels[np.searchsorted(np.asarray(by.edges, float), np.nan_to_num(numbers), side="right")]
    return pd.Series(np.where(np.isfinite(numbers), out, NOT_GIVEN), index=values.index, dtype=object)


def worker_levels(workers, participants: pd.DataFrame, by: By) -> pd.Series:
    """Each worker's level (indexed by worker id as text): from the participants' ``by`` column, NOT_GIVEN for a
    worker the file does not describe or whose answer is missing."""
    if by.attribute not in participants.columns:
        raise DialevalError(f"--by {by}: the participants file has no column {by.attribute!r} (columns: "
                            f"{', '.join(c for c in participants.columns if c != 'worker_id')})")
    table = participants.assign(worker_id=participants["worker_id"].astype(str)).set_index("worker_id")
    found = levels(table[by.attribute], by)
    ids = pd.Index(pd.unique(pd.Series(np.asarray(workers, dtype=object)).astype(str)))
    return found.reindex(ids).fillna(NOT_GIVEN)


def clustered_cov(votes: bt.Votes, fit: bt.Fit, codes: np.ndarray) -> tuple[np.ndarray, float]:
    """(the CR1 covariance of ``fit``'s strengths (mean 0) with the votes clustered by ``codes``, the effective
    number of clusters). The fit's own sandwich splits each cluster by model pair; here a cluster is whole, since one
    worker's taste for a model (or one item's difficulty for it) moves their votes in every pair with that model
    together. The effective number is Kish's over the clusters' total weights, (sum W)^2 / sum W^2: where a few
    heavily weighted workers carry the estimate (raking), the t reference has as few degrees of freedom as they
    are (CR1 with G nominal clusters covered 86-95% in benchmarks/bench_groups.py)."""
    from scipy.special import expit

    m, n = len(votes.models), len(votes)
    w = np.ones(n) if votes.weights is None else votes.weights
    residual = w * (votes.outcome - expit(fit.strengths[votes.first] - fit.strengths[votes.second]))
    codes = pd.factorize(codes)[0]
    clusters = int(codes.max(initial=-1)) + 1
    sums = np.zeros((clusters, m))
    np.add.at(sums, (codes, votes.first), residual)
    np.add.at(sums, (codes, votes.second), -residual)
    scores = sums[:, 1:]  # the fit's parameters: strengths relative to the first model
    correction = clusters / max(clusters - 1, 1) * (n - 1) / max(n - (m - 1), 1)  # CR1, as the fit's own
    centre = bt.centring(m)
    totals = np.bincount(codes, np.abs(w), clusters)
    return (centre @ (correction * fit.bread @ (scores.T @ scores) @ fit.bread) @ centre.T,
            float(totals.sum() ** 2 / np.sum(totals ** 2)))


def two_way_fit(votes: bt.Votes, workers: np.ndarray, items: np.ndarray,
                level: float) -> tuple[pd.DataFrame, bt.Fit | None]:
    """style_control.bt_table's table of ``votes`` with its intervals clustered by item and by worker (``items``,
    ``workers``: a code per vote; Cameron, Gelbach & Miller 2011, t with min(effective items, effective workers) - 1
    degrees of freedom) at ``level``."""
    from scipy import stats
    from parlai_dialeval.analysis.style_control import bt_table

    table, fit = bt_table(votes, level)
    finite = table["bt"].notna().to_numpy()
    if fit is None or fit.separated or finite.sum() < 2:
        return table, fit
    members = np.flatnonzero(finite)
    within = np.isin(votes.first, members) & np.isin(votes.second, members)
    local = np.full(len(votes.models), -1)
    local[members] = np.arange(len(members))
    part = votes.subset(within, local, [votes.models[i] for i in members])
    worker, item = workers[within], items[within]
    (by_item, n_items), (by_worker, n_workers), (by_both, _) = (
        clustered_cov(part, fit, codes) for codes in (item, worker, item * (int(worker.max(initial=0)) + 1) + worker))
    cov = by_item + by_worker - by_both
    half = stats.t.ppf(1 - level / 2, max(min(n_items, n_workers) - 1, 1.0)) * np.sqrt(np.clip(np.diag(cov), 0, None))
    table.loc[members, "ci_low"], table.loc[members, "ci_high"] = fit.strengths - half, fit.strengths + half
    return table, fit


def disagreement(votes: bt.Votes, workers: np.ndarray, labels: np.ndarray, permutations: int = 999,
                 seed: int = 0) -> tuple[float, float]:
    """(the score statistic of a group x model interaction, its permutation p-value): ``workers`` a code per vote
    (0..W-1), ``labels`` a group code per worker (0..K-1). Under the pooled fit's probabilities each worker's score
    U_w (excess wins per model, its votes' weights applied) and information per model pair are summed per group;
    the labels are then shuffled across workers ``permutations`` times (the pooled fit does not change)."""
    from scipy.sparse import csr_matrix
    from scipy.special import expit

    m, n_workers = len(votes.models), len(labels)
    pooled = bt.fit(votes, covariance=False, prior=0.01)  # pseudo-votes: finite where a model never lost
    w = np.ones(len(votes)) if votes.weights is None else votes.weights
    prob = expit(pooled.strengths[votes.first] - pooled.strengths[votes.second])
    residual, curvature = w * (votes.outcome - prob), w * prob * (1 - prob)
    shape = (n_workers, m)
    score = (csr_matrix((residual, (workers, votes.first)), shape) - csr_matrix((residual, (workers, votes.second)),
                                                                                 shape)).toarray()
    low, high = np.minimum(votes.first, votes.second), np.maximum(votes.first, votes.second)
    pairs, pair_code = np.unique(low * m + high, return_inverse=True)
    information = csr_matrix((curvature, (workers, pair_code)), (n_workers, len(pairs))).toarray()
    groups = int(labels.max()) + 1
    pair_low, pair_high = pairs // m, pairs % m

    def statistic(assigned: np.ndarray) -> float:
        one_hot = np.eye(groups)[assigned]
        u, c = one_hot.T @ score, one_hot.T @ information  # groups x models, groups x pairs
        lap = np.zeros((groups, m, m))
        lap[:, pair_low, pair_high] -= c
        lap[:, pair_high, pair_low] -= c
        lap[:, np.arange(m), np.arange(m)] = -lap.sum(axis=2)
        return float(np.einsum("gi,gij,gj->", u, np.linalg.pinv(lap, hermitian=True), u))

    observed = statistic(labels)
    rng = np.random.default_rng(seed)
    exceed = sum(statistic(rng.permutation(labels)) >= observed - 1e-9 * abs(observed) for _ in range(permutations))
    return observed, (1 + exceed) / (1 + permutations)


def leader(table: pd.DataFrame) -> str | None:
    """The model ranked first in a ranking table (None where none has a strength)."""
    ranked = table.dropna(subset=["bt"])
    return None if ranked.empty else str(ranked.sort_values("bt", ascending=False)["model"].iloc[0])


@dataclass
class GroupResult:
    """Per question and unit: ``rankings`` (a row per group and model, RANKING_COLUMNS), ``groups`` (a row per
    group: workers, votes, whether fitted and why not), ``tests`` (the disagreement test of the fitted named
    groups), ``weighted`` (unweighted and weighted strengths side by side, or None)."""

    rankings: pd.DataFrame
    groups: pd.DataFrame
    tests: pd.DataFrame
    weighted: pd.DataFrame | None = None


def section_votes(part: pd.DataFrame, worker_ids: np.ndarray) -> tuple[bt.Votes, np.ndarray, np.ndarray]:
    """The section's worker votes (bradley_terry.encode: automatic ties left out), a worker code per vote (its
    index in ``worker_ids``) and an item code per vote (cluster_robust.cluster_ids: the item judged)."""
    from parlai_dialeval.analysis.cluster_robust import cluster_ids

    votes = bt.encode(part)
    kept = part[~part["automatic"].eq(True)] if "automatic" in part else part
    return (votes, pd.Index(worker_ids).get_indexer(kept["worker_id"].astype(str)),
            pd.factorize(cluster_ids(kept))[0])


def _test(question, unit, fitted: list[str], leader_name, permutations: int, label: np.ndarray, workers: np.ndarray,
          statistic) -> dict:
    """A row of ``tests``: the named ``fitted`` groups compared by ``statistic`` (which rows, a code per worker of
    those rows, a group code per worker -> (statistic, p)), from each row's group ``label`` and worker key."""
    tested = [name for name in fitted if name != NOT_GIVEN]
    row = {"question": question, "unit": unit, "groups": ", ".join(tested), "statistic": np.nan, "p_value": np.nan,
           "permutations": permutations, "leader": leader_name, "note": ""}
    if len(tested) < 2:
        row["note"] = "fewer than two named groups with enough workers: nothing to compare"
        return row
    keep = np.isin(label, tested)
    codes = pd.factorize(workers[keep])[0]
    _, first = np.unique(codes, return_index=True)
    code_of = {name: i for i, name in enumerate(tested)}
    labels = np.array([code_of[name] for name in label[keep][first]], np.int64)
    row["statistic"], row["p_value"] = statistic(keep, codes, labels)
    return row


def group_rankings(comparisons: pd.DataFrame, worker_level: pd.Series, alpha: float = 0.05, min_workers: int = 10,
                   permutations: int = 999, seed: int = 0) -> GroupResult:
    """Per question and unit (``comparisons`` with sections: pairwise.with_sections), the ranking of each group of
    workers (``worker_level``: a level per worker id, as ``worker_levels``) and the test of whether the named groups
    that have at least ``min_workers`` workers disagree."""
    from parlai_dialeval.analysis.pairwise import SECTION
    from parlai_dialeval.analysis.style_control import bt_table

    ids = np.asarray(worker_level.index, dtype=object)
    rankings, groups, tests = [], [], []
    for (question, unit), part in comparisons.groupby(SECTION, sort=False, dropna=False):
        votes, workers, items = section_votes(part, ids)
        label = worker_level.to_numpy(dtype=object)[workers]
        names = sorted(pd.unique(label), key=lambda name: (name == NOT_GIVEN, name))
        counts = {name: len(np.unique(workers[label == name])) for name in names}
        fitted = [name for name in names if counts[name] >= min_workers]
        level = alpha / max(len(fitted), 1)
        for name in names:
            rows = label == name
            if name not in fitted:  # suppressed: neither ranked nor counted (a few people are recognisable)
                groups.append({"question": question, "unit": unit, "group": name, "workers": np.nan, "votes": np.nan,
                               "status": f"too small: fewer than {min_workers} workers, not shown"})
                continue
            groups.append({"question": question, "unit": unit, "group": name, "workers": counts[name],
                           "votes": int(rows.sum()), "status": "fitted"})
            table, _ = two_way_fit(votes.subset(rows), workers[rows], items[rows], level)
            workers_of = [len(np.unique(workers[rows & ((votes.first == i) | (votes.second == i))]))
                          for i in range(len(votes.models))]
            rankings.append(table.assign(question=question, unit=unit, group=name, workers=workers_of,
                                         confidence=1 - level))
        tests.append(_test(question, unit, fitted, leader(bt_table(votes, alpha)[0]), permutations, label, workers,
                           lambda keep, codes, labels: disagreement(votes.subset(keep), codes, labels, permutations,
                                                                    seed)))
    table = pd.concat(rankings, ignore_index=True)[RANKING_COLUMNS] if rankings else pd.DataFrame(columns=RANKING_COLUMNS)
    return GroupResult(_whole_ranks(table, "rank"), pd.DataFrame(groups), pd.DataFrame(tests))


def _whole_ranks(table: pd.DataFrame, *columns: str) -> pd.DataFrame:
    """Ranks as whole numbers (missing where a model has no strength), not '3.0'."""
    return table.astype({column: "Int64" for column in columns})


def weighted_rankings(comparisons: pd.DataFrame, worker_weight: pd.Series, alpha: float = 0.05) -> pd.DataFrame:
    """Per question and unit: each model's strength with votes unweighted and with each vote weighted by its
    worker's weight (``worker_weight``, by worker id; workers without one left out of both, so the two differ by
    the weights alone), intervals clustered by item and worker at 1 - alpha."""
    from parlai_dialeval.analysis.pairwise import SECTION

    ids = np.asarray(worker_weight.index, dtype=object)
    rows = []
    for (question, unit), part in comparisons.groupby(SECTION, sort=False, dropna=False):
        part = part[part["worker_id"].astype(str).isin(ids)]
        if part.empty:
            continue
        votes, workers, items = section_votes(part, ids)
        plain, _ = two_way_fit(votes, workers, items, alpha)
        given = np.ones(len(votes)) if votes.weights is None else votes.weights
        weighted, _ = two_way_fit(bt.Votes(votes.models, votes.first, votes.second, votes.outcome, votes.clusters,
                                           given * worker_weight.to_numpy(float)[workers]), workers, items, alpha)
        rows.append(pd.DataFrame({
            "question": question, "unit": unit, "model": plain["model"], "votes": plain["votes"],
            "bt": plain["bt"], "ci_low": plain["ci_low"], "ci_high": plain["ci_high"], "rank": plain["rank"],
            "bt_weighted": weighted["bt"], "weighted_ci_low": weighted["ci_low"],
            "weighted_ci_high": weighted["ci_high"], "rank_weighted": weighted["rank"],
            "note": [" ".join(filter(None, (a, b if b != a else ""))) for a, b in zip(plain["note"], weighted["note"])]}))
    return _whole_ranks(pd.concat(rows, ignore_index=True), "rank", "rank_weighted") if rows else \
        pd.DataFrame(columns=WEIGHTED_COLUMNS)


def score_disagreement(scores: np.ndarray, models: np.ndarray, workers: np.ndarray, labels: np.ndarray,
                       permutations: int = 999, seed: int = 0) -> tuple[float, float]:
    """The live chat's disagreement test: (the residual sum of squares a group x model interaction removes from an
    additive model + group fit of the conversations' ``scores``, its permutation p-value): ``models`` and
    ``workers`` codes per conversation, ``labels`` a group code per worker, shuffled across workers."""
    y = np.asarray(scores, float)
    n_models, groups_ = int(models.max()) + 1, int(labels.max()) + 1
    model_part = np.eye(n_models)[models]

    def statistic(assigned: np.ndarray) -> float:
        group = assigned[workers]
        cell = group * n_models + models
        sizes = np.bincount(cell, minlength=groups_ * n_models)
        sums = np.bincount(cell, y, groups_ * n_models)
        full = np.sum(y ** 2) - np.sum(np.divide(sums ** 2, sizes, out=np.zeros_like(sums), where=sizes > 0))
        design = np.hstack([model_part, np.eye(groups_)[group][:, 1:]])
        residual = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
        return float(residual @ residual - full)

    observed = statistic(labels)
    rng = np.random.default_rng(seed)
    exceed = sum(statistic(rng.permutation(labels)) >= observed - 1e-9 * abs(observed) for _ in range(permutations))
    return observed, (1 + exceed) / (1 + permutations)


def live_chat_groups(conversations: pd.DataFrame, worker_level: pd.Series, alpha: float = 0.05,
                     min_workers: int = 10, permutations: int = 999, seed: int = 0) -> GroupResult:
    """Per group of workers, each model's mean score (``conversations``: conversation_id, worker_id, model, score:
    the passing workers' z-scored overall ratings) with an interval clustered by worker at the Bonferroni level
    (categories.live_chat_rankings), and whether the named groups with at least ``min_workers`` workers disagree
    (``score_disagreement``). One row of ``tests``, question 'overall z'."""
    from parlai_dialeval.analysis.categories import live_chat_rankings

    worker = conversations["worker_id"].astype(str)
    label = worker.map(worker_level).fillna(NOT_GIVEN).to_numpy(dtype=object)
    names = sorted(pd.unique(label), key=lambda name: (name == NOT_GIVEN, name))
    counts = {name: worker[label == name].nunique() for name in names}
    fitted = [name for name in names if counts[name] >= min_workers]
    rows = [{"question": "overall z", "unit": "conversation", "group": name,
             "workers": counts[name] if name in fitted else np.nan,
             "conversations": int(np.sum(label == name)) if name in fitted else np.nan,
             "status": "fitted" if name in fitted else f"too small: fewer than {min_workers} workers, not shown"}
            for name in names]
    membership = pd.DataFrame({name: label == name for name in fitted}, index=conversations.index)
    rankings = live_chat_rankings(conversations, membership, alpha).rename(columns={"category": "group"})
    rankings = rankings.assign(bt=rankings["score"])  # ``leader`` reads bt
    means = conversations.groupby("model")["score"].mean()
    scores, models = conversations["score"].to_numpy(float), pd.factorize(conversations["model"].astype(str))[0]
    test = _test("overall z", "conversation", fitted, str(means.idxmax()) if len(means) else None, permutations,
                 label, worker.to_numpy(dtype=object),
                 lambda keep, codes, labels: score_disagreement(scores[keep], pd.factorize(models[keep])[0], codes,
                                                                labels, permutations, seed))
    return GroupResult(rankings.assign(question="overall z", unit="conversation"), pd.DataFrame(rows),
                       pd.DataFrame([test]))
