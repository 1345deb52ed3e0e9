"""Rankings from pairwise votes: Bradley-Terry strengths with bootstrap intervals (choix) and
TrueSkill mu/sigma (trueskill), as Lee et al. 2020 (2.2) use them.

Tie policy (TIE_POLICY): a worker tie counts as half a win for each model in Bradley-Terry and as a
draw in TrueSkill; automatic ties (identical responses, no worker judgement) are left out of both.

Speed: votes are deduplicated into counts of unique (a, b, outcome) rows, and each bootstrap round
resamples those counts from a multinomial instead of resampling millions of rows (the idea behind
FastChat's rating_systems.py); all rounds' win matrices are then fitted at once (``fit_bt_rounds``).
Where votes cluster (several votes on one item: parlai_dialeval.analysis.cluster_robust) the bootstrap
resamples whole clusters instead, each round's win matrix one sparse product (``_cluster_draws``).
"""
from __future__ import annotations

import math

import choix
import numpy as np
import pandas as pd
import trueskill
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from tqdm import tqdm

TIE_POLICY = ("Bradley-Terry: a worker tie is half a win for each model; TrueSkill: a worker tie is a "
              "draw; automatic ties (identical responses) are excluded from both")
RANKING_COLUMNS = ["model", "votes", "component", "rank", "bt_score", "bt_ci_low", "bt_ci_high", "bt_note", "trueskill_mu",
                   "trueskill_sigma", "win_count"]
# A little regularisation keeps strengths finite when a model never wins (or never loses).
BT_ALPHA = 1e-3
# Bytes of one rounds x models x models array in a batched fit; the fit holds a few of them at once.
FIT_BYTES = 2 ** 25


def encode(comparisons: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Worker votes as (models, a index, b index, outcome) with outcome 1 = a won, 0 = b won, 0.5 = tie."""
    votes = comparisons
    if "automatic" in votes:
        votes = votes[~votes["automatic"].eq(True)]
    from parlai_dialeval.analysis.pairwise import model_codes

    a, b, names = model_codes(votes)  # codes in sorted order of the names
    choice, kinds = pd.factorize(votes["choice"].astype(str), use_na_sentinel=False)
    outcome = pd.Series(kinds, dtype=object).map({"a": 1.0, "b": 0.0, "tie": 0.5}).to_numpy(dtype=float)[choice]
    return list(names), a.astype(np.int64), b.astype(np.int64), outcome


def deduplicate(a: np.ndarray, b: np.ndarray, outcome: np.ndarray,
                weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Unique (a, b, outcome) rows (shape k x 3, sorted) and how often each occurs (the sum of the votes'
    ``weights``, where given). Rows are counted as one integer key each (outcome 0, 1/2, 1 -> 0, 1, 2):
    np.unique over rows sorts 3-column records, about 20 times slower on a million votes."""
    n = int(max(a.max(initial=0), b.max(initial=0))) + 1
    keys = (a.astype(np.int64) * n + b) * 3 + np.rint(outcome * 2).astype(np.int64)
    if weights is None:
        unique, counts = np.unique(keys, return_counts=True)
    else:
        unique, inverse = np.unique(keys, return_inverse=True)
        counts = np.bincount(inverse, weights, len(unique))
    rows = np.column_stack([unique // 3 // n, unique // 3 % n, unique % 3 / 2]).astype(float)
    return rows, counts


def win_matrix(unique: np.ndarray, counts: np.ndarray, n_models: int) -> np.ndarray:
    """m[i, j] = (possibly fractional) wins of i over j; a tie adds half to each side."""
    a, b, outcome = unique[:, 0].astype(int), unique[:, 1].astype(int), unique[:, 2]
    matrix = np.zeros((n_models, n_models))
    np.add.at(matrix, (a, b), counts * outcome)
    np.add.at(matrix, (b, a), counts * (1 - outcome))
    return matrix


def fit_bt(matrix: np.ndarray, alpha: float = BT_ALPHA) -> np.ndarray:
    """Bradley-Terry log-strengths (mean 0) from a win matrix (choix's I-LSR)."""
    return choix.ilsr_pairwise_dense(matrix, alpha=alpha)


def fit_bt_rounds(matrices: np.ndarray, alpha: float = BT_ALPHA, max_iter: int = 100,
                  tol: float = 1e-8) -> np.ndarray:
    """``fit_bt`` of every win matrix in ``matrices`` (rounds x models x models) at once: choix's I-LSR
    (Maystre & Grossglauser 2015) with its stationary distributions solved as one batched linear system,
    since choix fits one matrix per call (1,000 bootstrap rounds were 1,000 Python-level fits)."""
    rounds, n, _ = matrices.shape
    weights = np.ones((rounds, n))
    params = np.zeros((rounds, n))
    wins_t = np.swapaxes(matrices, 1, 2)
    for _ in range(max_iter):
        chain = alpha + wins_t / (weights[:, :, None] + weights[:, None, :])
        chain[:, np.arange(n), np.arange(n)] = 0.0
        chain[:, np.arange(n), np.arange(n)] = -chain.sum(axis=2)
        # stationary distribution pi: pi @ chain = 0, normalised to sum n
        system = np.swapaxes(chain, 1, 2).copy()
        system[:, -1, :] = 1.0
        target = np.zeros((rounds, n, 1))
        target[:, -1, 0] = n
        dist = np.linalg.solve(system, target)[:, :, 0]
        new = np.log(dist)
        new -= new.mean(axis=1, keepdims=True)
        done = np.abs(new - params).sum(axis=1).max() < tol
        params, weights = new, np.exp(new - new.mean(axis=1, keepdims=True))
        weights *= n / weights.sum(axis=1, keepdims=True)
        if done:
            return params
    raise RuntimeError(f"Bradley-Terry bootstrap fits did not converge after {max_iter} iterations")


def bradley_terry(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, n_models: int, rounds: int = 1000,
                  ci: float = 0.95, seed: int = 0, progress: bool = False, clusters: np.ndarray | None = None,
                  weights: np.ndarray | None = None):
    """(strengths, ci_low, ci_high): maximum-likelihood log-strengths (mean 0) and percentile bootstrap
    intervals over ``rounds`` resamples. ``clusters`` (one label per vote; parlai_dialeval.analysis.
    clustering's rule) makes it a cluster bootstrap: whole clusters are resampled, since votes on one item
    are not independent. Without it, or where every cluster is one vote, the votes are resampled
    (multinomial over deduplicated rows, the same distribution). ``weights`` (one per vote, e.g. the arena's
    inverse sampling propensity) weigh each vote's likelihood; the bootstrap then resamples votes (or
    clusters) with their weights."""
    unique, counts = deduplicate(a, b, outcome, weights)
    strengths = fit_bt(win_matrix(unique, counts, n_models))
    if rounds <= 0:
        nan = np.full(n_models, np.nan)
        return strengths, nan, nan
    rng = np.random.default_rng(seed)
    codes = pd.factorize(np.asarray(clusters, dtype=object))[0] if clusters is not None else None
    if weights is not None and codes is None:
        codes = np.arange(len(a))  # weighted votes differ: each is its own row of the bootstrap
    if codes is not None and (weights is not None or codes.max(initial=-1) + 1 < len(codes)):
        draws = _cluster_draws(codes, a, b, outcome, n_models, rounds, rng, weights)
    else:
        total = int(counts.sum())
        a_idx, b_idx, won = unique[:, 0].astype(int), unique[:, 1].astype(int), unique[:, 2]
        # 250 rounds drawn at a time (the same stream as all at once): rounds x unique rows is dense
        draws = (_vote_draws(rng.multinomial(total, counts / total, size=min(250, rounds - start)), a_idx, b_idx,
                             won, n_models) for start in range(0, rounds, 250))
    # Fitted as drawn, a bounded number of rounds per batched fit: all rounds' rounds x models^2 arrays at
    # once took 20 GB for 800 models (issue 43).
    step = max(1, min(250, FIT_BYTES // (8 * n_models * n_models)))
    boot = np.concatenate([fit_bt_rounds(chunk[start:start + step])
                           for chunk in tqdm(draws, total=-(-rounds // 250), desc="Bradley-Terry bootstrap",
                                             disable=not progress)
                           for start in range(0, len(chunk), step)])
    tail = (1 - ci) / 2 * 100
    low, high = np.percentile(boot, [tail, 100 - tail], axis=0)
    return strengths, low, high


def _vote_draws(chunk: np.ndarray, a_idx, b_idx, won, n_models: int) -> np.ndarray:
    """Win matrices of resampled vote counts (rounds x deduplicated rows)."""
    matrices = np.zeros((len(chunk), n_models, n_models))
    np.add.at(matrices, (slice(None), a_idx, b_idx), chunk * won)
    np.add.at(matrices, (slice(None), b_idx, a_idx), chunk * (1 - won))
    return matrices


def _cluster_draws(codes: np.ndarray, a, b, outcome, n_models: int, rounds: int, rng, weights=None):
    """Win matrices of resampled clusters, 250 rounds at a time: each cluster's own win matrix (sparse,
    clusters x models^2; its votes' ``weights`` applied) weighted by how often a round drew it."""
    from scipy.sparse import csr_matrix

    n_clusters = int(codes.max()) + 1
    cells = np.concatenate([a * n_models + b, b * n_models + a])
    w = np.ones(len(outcome)) if weights is None else np.asarray(weights, float)
    own = csr_matrix((np.concatenate([outcome * w, (1 - outcome) * w]), (np.concatenate([codes, codes]), cells)),
                     shape=(n_clusters, n_models * n_models))
    for start in range(0, rounds, 250):
        size = min(250, rounds - start)
        drawn = rng.multinomial(n_clusters, np.full(n_clusters, 1 / n_clusters), size=size)
        yield np.asarray((own.T @ drawn.T).T).reshape(size, n_models, n_models)


def trueskill_ratings(a: np.ndarray, b: np.ndarray, outcome: np.ndarray, n_models: int,
                      progress: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """TrueSkill (mu, sigma) per model after rating every vote as a 1-vs-1 game in data order; the
    environment's draw probability is the observed tie share.

    Hand-written update: trueskill.rate_1vs1 builds a factor graph per game (about 0.5 ms: 8 minutes for a
    million votes); for two players it reduces to Herbrich et al.'s (2007) closed form, computed here with
    the library's own environment, draw margin and cdf/pdf (tests/test_rankings.py checks it game by game)."""
    ties = float(np.mean(outcome == 0.5)) if len(outcome) else 0.0
    env = trueskill.TrueSkill(draw_probability=min(max(ties, 1e-6), 0.99))
    cdf, pdf, beta2, tau2 = env.cdf, env.pdf, env.beta ** 2, env.tau ** 2
    margin = trueskill.calc_draw_margin(env.draw_probability, 2, env=env)
    mu, var = [env.mu] * n_models, [env.sigma ** 2] * n_models
    for i, j, o in tqdm(zip(a.tolist(), b.tolist(), outcome.tolist()), total=len(a), desc="TrueSkill",
                        disable=not progress):
        if o == 0.0:
            i, j = j, i
        vi, vj = var[i] + tau2, var[j] + tau2
        c = math.sqrt(2 * beta2 + vi + vj)
        t, e = (mu[i] - mu[j]) / c, margin / c
        if o == 0.5:
            mass = cdf(e - t) - cdf(-e - t)
            v = (pdf(-e - t) - pdf(e - t)) / mass
            w = v * v + ((e - t) * pdf(e - t) + (e + t) * pdf(e + t)) / mass
        else:
            v = pdf(t - e) / cdf(t - e)
            w = v * (v + t - e)
        mu[i], mu[j] = mu[i] + vi / c * v, mu[j] - vj / c * v
        var[i], var[j] = vi * (1 - vi / c ** 2 * w), vj * (1 - vj / c ** 2 * w)
    return np.array(mu), np.sqrt(np.array(var))


def vote_clusters(comparisons: pd.DataFrame, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """The cluster of each encoded vote (model pair and item, as everywhere: parlai_dialeval.analysis.
    clustering), or None where the comparisons carry no unit of judgement (``pairwise.with_sections``)."""
    if "unit" not in comparisons:
        return None
    from parlai_dialeval.analysis.cluster_robust import cluster_ids

    votes = comparisons[~comparisons["automatic"].eq(True)] if "automatic" in comparisons else comparisons
    item = pd.factorize(cluster_ids(votes))[0]  # codes, not "pair|item" strings: a million of those took seconds
    key = (np.minimum(a, b).astype(np.int64) * (max(a.max(initial=0), b.max(initial=0)) + 1) + np.maximum(a, b))
    return pd.factorize(key * (item.max(initial=0) + 1) + item)[0]


def vote_weights(comparisons: pd.DataFrame) -> np.ndarray | None:
    """Each worker vote's ``weight`` (1 where missing) in ``encode``'s order; None where every vote weighs 1."""
    if "weight" not in comparisons:
        return None
    votes = comparisons[~comparisons["automatic"].eq(True)] if "automatic" in comparisons else comparisons
    weights = pd.to_numeric(votes["weight"], errors="coerce").fillna(1.0).to_numpy(float)
    return None if np.all(weights == 1.0) else weights


def components(a: np.ndarray, b: np.ndarray, n_models: int) -> np.ndarray:
    """Connected parts of the comparison graph, numbered 1.. from the largest: strengths from different
    parts are not comparable, since no vote links them."""
    graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(n_models, n_models))
    _, labels = connected_components(graph, directed=False)
    sizes = np.bincount(labels)
    order = np.argsort(-sizes, kind="stable")
    return np.argsort(order)[labels] + 1


def rankings(comparisons: pd.DataFrame, rounds: int = 1000, seed: int = 0, win_counts: pd.Series | None = None,
             progress: bool = False, ci: float = 0.95) -> pd.DataFrame:
    """model, votes (worker votes the model took part in: the unit of analysis), component, rank,
    bt_score, bt_ci_low, bt_ci_high, bt_note, trueskill_mu, trueskill_sigma, win_count, sorted by component then bt_score (win_count: Lee's system win count, passed in from
    pairwise.system_win_counts; ``ci``: the bootstrap intervals' confidence level).

    Bradley-Terry is fitted within each connected part of the comparison graph (``component``, 1 =
    largest; ``rank`` is within it), each vote weighted by its ``weight`` where the comparisons carry one
    (TrueSkill and ``votes`` count votes). Where the bootstrap cannot vary (a part whose votes are all of one
    kind, e.g. a single vote or a one-sided pair) no interval is given and ``bt_note`` says why."""
    models, a, b, outcome = encode(comparisons)
    weights = vote_weights(comparisons)
    if len(models) < 2:
        return pd.DataFrame(columns=RANKING_COLUMNS)
    clusters = vote_clusters(comparisons, a, b)
    part = components(a, b, len(models))
    votes = np.bincount(a, minlength=len(models)) + np.bincount(b, minlength=len(models))
    frame = pd.DataFrame({"model": models, "votes": votes, "component": part, "bt_score": np.nan, "bt_ci_low": np.nan,
                          "bt_ci_high": np.nan, "bt_note": ""})
    for label in np.unique(part):
        members = np.flatnonzero(part == label)
        if len(members) < 2:
            frame.loc[members, "bt_note"] = "no votes"
            continue
        local = np.full(len(models), -1)
        local[members] = np.arange(len(members))
        rows = part[a] == label
        strength, low, high = bradley_terry(local[a[rows]], local[b[rows]], outcome[rows], len(members),
                                            rounds=rounds, ci=ci, seed=seed, progress=progress,
                                            clusters=None if clusters is None else clusters[rows],
                                            weights=None if weights is None else weights[rows])
        frame.loc[members, "bt_score"] = strength
        if len(deduplicate(a[rows], b[rows], outcome[rows])[1]) == 1:
            frame.loc[members, "bt_note"] = ("no interval: every vote in this part is the same outcome of the "
                                             "same pair, so the bootstrap cannot vary")
        elif rounds > 0:
            fixed = np.isclose(low, high, rtol=0, atol=1e-9)
            frame.loc[members, "bt_ci_low"] = np.where(fixed, np.nan, low)
            frame.loc[members, "bt_ci_high"] = np.where(fixed, np.nan, high)
            frame.loc[members[fixed], "bt_note"] = "no interval: the bootstrap did not vary"
    mu, sigma = trueskill_ratings(a, b, outcome, len(models), progress=progress)
    frame["trueskill_mu"], frame["trueskill_sigma"] = mu, sigma
    counts = win_counts if win_counts is not None else pd.Series(dtype=int)
    frame["win_count"] = frame["model"].map(counts).fillna(0).astype(int)
    frame = frame.sort_values(["component", "bt_score"], ascending=[True, False], ignore_index=True)
    frame["rank"] = frame.groupby("component").cumcount() + 1
    return frame[RANKING_COLUMNS]
