"""The one Bradley-Terry of the project: votes encoded once, then fitted, bootstrapped and differentiated.

Encoding (``encode``): worker votes (automatic ties left out) as a ``Votes``: the models sorted by name,
``first``/``second`` as indices into them (model_a, model_b), ``outcome`` for ``first`` (1 won, 1/2 tie,
0 lost: a worker tie is half a win each way), ``clusters``, one integer per vote naming its unit of
independence: a model pair's votes on one item (``cluster_codes``; the item is cluster_robust.cluster_ids'),
and ``weights``, each vote's ``weight`` (the arena's inverse sampling propensity; 1 where missing; None where
all are 1): a vote of weight k counts as k votes in ``fit`` and ``bootstrap``. ``model_codes`` is the same
numbering for any frame with model_a and model_b (pairwise.oriented keys pairs on it). ``kinds`` deduplicates
votes into counts of distinct (first, second, outcome) rows.

The model: P(first wins) = expit(s_first - s_second + x . beta), log-strengths s with mean 0, covariates x
(style differences, a user's columns) with coefficients beta. Two ways to fit it:
- ``fit``: maximum likelihood by Newton's method with per-vote weights (counts of a kind, a removal, PPI++'s
  signed weights), covariates, pseudo-votes (``prior``) and the cluster-robust (CR1) sandwich covariance; the
  model strengths are fixed effects of a logistic regression without intercept. Style control, categories,
  fragility (refits and the influence of each vote) and PPI++ fit here.
- ``ilsr`` / ``bootstrap``: the plain model only (no covariates), regularised as choix's I-LSR (``alpha`` added
  to every rate of its Markov chain), whose rounds batch into one linear solve each (``ilsr_rounds``): the
  rankings' bootstrap of a thousand rounds (resampled votes, or resampled clusters) and the adaptive allocator.

Extensions change the likelihood only (``fit``'s ``likelihood``): ties as information (Bradley-Terry-Davidson,
analysis/ties.py) and a position effect per model (covariates with ``fit``'s ridge ``penalty``, analysis/position.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from parlai_dialeval.analysis.bt_likelihood import Likelihood, one_blas_thread, solve

# A log-strength beyond this: the model never lost (or never won) in the fit's votes, no finite estimate.
SEPARATED = 15.0
# choix's regularisation in the rankings: keeps strengths finite when a model never wins (or never loses).
ILSR_ALPHA = 1e-3
# Bytes of one rounds x models x models array in a batched fit; the fit holds a few of them at once.
FIT_BYTES = 2 ** 25


@dataclass(frozen=True)
class Votes:
    """Worker votes encoded once (see the module docstring)."""

    models: list[str]
    first: np.ndarray
    second: np.ndarray
    outcome: np.ndarray
    clusters: np.ndarray | None = None
    weights: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.outcome)

    def subset(self, rows: np.ndarray, local: np.ndarray | None = None, models: list[str] | None = None) -> "Votes":
        """The votes at ``rows`` (a mask or indices); with ``local`` (old model index -> new) renumbered onto
        ``models``."""
        first, second = self.first[rows], self.second[rows]
        if local is not None:
            first, second = local[first], local[second]
        return Votes(self.models if models is None else models, first, second, self.outcome[rows],
                     None if self.clusters is None else self.clusters[rows],
                     None if self.weights is None else self.weights[rows])

    def largest_part(self) -> tuple["Votes", np.ndarray, np.ndarray]:
        """(the votes of the largest connected part of the comparison graph, renumbered onto its models; the
        part's members as indices into ``models``; which votes are in it)."""
        part = components(self.first, self.second, len(self.models))
        members = np.flatnonzero(part == 1)
        local = np.full(len(self.models), -1)
        local[members] = np.arange(len(members))
        keep = part[self.first] == 1
        return self.subset(keep, local, [self.models[i] for i in members]), members, keep


def model_codes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(model_a and model_b as codes of one numbering, in sorted order of the names; each code's name as str):
    pairs are keyed on the codes, since comparing and grouping a million names as strings took seconds
    (issue 43)."""
    both = pd.concat([frame["model_a"].astype(str), frame["model_b"].astype(str)], ignore_index=True)
    codes, names = pd.factorize(both, sort=True, use_na_sentinel=False)
    return codes[:len(frame)], codes[len(frame):], np.asarray(names, dtype=object)


def encode(comparisons: pd.DataFrame, clusters: bool = True) -> Votes:
    """Worker votes of ``comparisons`` (automatic ties left out) as ``Votes``; ``clusters`` False, or a frame
    without ``unit`` (``pairwise.with_sections``: the cluster rule needs it), leaves the clusters out."""
    votes = comparisons[~comparisons["automatic"].eq(True)] if "automatic" in comparisons else comparisons
    a, b, names = model_codes(votes)
    choice = votes["choice"].astype(str).to_numpy()
    first, second = a.astype(np.int64), b.astype(np.int64)
    codes = cluster_codes(votes, first, second) if clusters and "unit" in votes else None
    weights = pd.to_numeric(votes["weight"], errors="coerce").fillna(1.0).to_numpy(float) if "weight" in votes \
        else np.ones(len(votes))
    return Votes([str(name) for name in names], first, second, np.select([choice == "a", choice == "b"], [1.0, 0.0],
                 0.5), codes, None if np.all(weights == 1.0) else weights)


def cluster_codes(votes: pd.DataFrame, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """An integer per vote naming its cluster, numbered in first-seen order: a model pair's votes on one item
    (cluster_robust.cluster_ids), from integer keys (its strings of a million pairs took 5 s)."""
    from parlai_dialeval.analysis.cluster_robust import cluster_ids

    items = pd.factorize(cluster_ids(votes))[0].astype(np.int64)
    span = int(max(first.max(initial=0), second.max(initial=0))) + 1
    pair = np.minimum(first, second) * span + np.maximum(first, second)
    return pd.factorize(pair * (int(items.max(initial=0)) + 1) + items)[0]


def components(first: np.ndarray, second: np.ndarray, n_models: int) -> np.ndarray:
    """Connected parts of the comparison graph, numbered 1.. from the largest: strengths from different
    parts are not comparable, since no vote links them."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(first)), (first, second)), shape=(n_models, n_models))
    _, labels = connected_components(graph, directed=False)
    order = np.argsort(-np.bincount(labels), kind="stable")
    return np.argsort(order)[labels] + 1


def kinds(first: np.ndarray, second: np.ndarray, outcome: np.ndarray,
          weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (first, second, outcome) rows (shape k x 3, sorted) and how often each occurs (the sum of the
    votes' ``weights``, where given). Rows are counted as one integer key each (outcome 0, 1/2, 1 -> 0, 1, 2):
    np.unique over rows sorts 3-column records, about 20 times slower on a million votes."""
    n = int(max(first.max(initial=0), second.max(initial=0))) + 1
    keys = (first.astype(np.int64) * n + second) * 3 + np.rint(outcome * 2).astype(np.int64)
    unique, inverse = np.unique(keys, return_inverse=True)
    counts = np.bincount(inverse, weights, len(unique))
    rows = np.column_stack([unique // 3 // n, unique // 3 % n, unique % 3 / 2]).astype(float)
    return rows, counts


def win_matrix(rows: np.ndarray, counts: np.ndarray, n_models: int) -> np.ndarray:
    """m[i, j] = (possibly fractional) wins of i over j from ``kinds``' rows; a tie adds half to each side."""
    a, b, outcome = rows[:, 0].astype(int), rows[:, 1].astype(int), rows[:, 2]
    matrix = np.zeros((n_models, n_models))
    np.add.at(matrix, (a, b), counts * outcome)
    np.add.at(matrix, (b, a), counts * (1 - outcome))
    return matrix


def unlinked(matrix: np.ndarray) -> tuple[list[int], list[int]] | None:
    """None where the plain model has a finite maximum-likelihood fit on the win matrix (``win_matrix``: one
    connected part): where every model can be reached from every other through wins (a tie counts both ways),
    Zermelo's and Ford's condition. Else (the models that never lost, the models that never won), either list
    possibly empty where a group of models, not one, never lost to the rest: the fit's strengths are then set by
    its regularisation, and so are their bootstrap intervals (an unbeaten model stays unbeaten in every resample)."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    parts, _ = connected_components(csr_matrix(matrix > 0), directed=True, connection="strong")
    if parts <= 1:
        return None
    return list(np.flatnonzero(matrix.sum(axis=0) == 0)), list(np.flatnonzero(matrix.sum(axis=1) == 0))


def centring(n_models: int, reference: int = 0) -> np.ndarray:
    """The map from the fit's parameters (every model's log-strength but the reference's, which is 0) to
    log-strengths with mean 0."""
    return (np.eye(n_models) - 1 / n_models) @ np.delete(np.eye(n_models), reference, axis=1)


def design(first: np.ndarray, second: np.ndarray, n_models: int, reference: int = 0) -> np.ndarray:
    """Dense rows e_first - e_second without the reference model's column (what a generic logistic regression
    on pair indicators takes; ``fit`` never builds it)."""
    full = np.zeros((len(first), n_models))
    rows = np.arange(len(first))
    np.add.at(full, (rows, np.asarray(first, np.int64)), 1.0)
    np.add.at(full, (rows, np.asarray(second, np.int64)), -1.0)
    return np.delete(full, reference, axis=1)


# --- the regularised plain model (choix's I-LSR), batched for the bootstrap -----------------------------------


def ilsr(matrix: np.ndarray, alpha: float = ILSR_ALPHA) -> np.ndarray:
    """Log-strengths (mean 0) of the plain model from a win matrix, regularised by ``alpha`` (choix's I-LSR)."""
    import choix  # scipy.stats (about 1 s): imported where a fit runs

    return choix.ilsr_pairwise_dense(matrix, alpha=alpha)


def ilsr_rounds(matrices: np.ndarray, alpha: float = ILSR_ALPHA, max_iter: int = 100,
                tol: float = 1e-8) -> np.ndarray:
    """``ilsr`` of every win matrix in ``matrices`` (rounds x models x models) at once: choix's I-LSR
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


def bootstrap(votes: Votes, rounds: int = 1000, ci: float = 0.95, seed: int = 0, progress: bool = False):
    """(strengths, ci_low, ci_high) of the plain regularised model: log-strengths (mean 0) and percentile
    bootstrap intervals over ``rounds`` resamples. With ``votes.clusters`` it is a cluster bootstrap: whole
    clusters are resampled, since votes on one item are not independent. Without them, or where every cluster
    is one vote, the votes are resampled (multinomial over ``kinds``, the same distribution). With
    ``votes.weights`` each vote weighs its weight in the fit, and votes (or clusters) are resampled with them."""
    from tqdm import tqdm

    n_models = len(votes.models)
    unique, counts = kinds(votes.first, votes.second, votes.outcome, votes.weights)
    strengths = ilsr(win_matrix(unique, counts, n_models))
    if rounds <= 0:
        nan = np.full(n_models, np.nan)
        return strengths, nan, nan
    rng = np.random.default_rng(seed)
    codes = pd.factorize(np.asarray(votes.clusters, dtype=object))[0] if votes.clusters is not None else None
    if votes.weights is not None and codes is None:
        codes = np.arange(len(votes))  # weighted votes differ: each is its own row of the bootstrap
    if codes is not None and (votes.weights is not None or codes.max(initial=-1) + 1 < len(codes)):
        draws = _cluster_draws(codes, votes, rounds, rng)
    else:
        total = int(counts.sum())
        a_idx, b_idx, won = unique[:, 0].astype(int), unique[:, 1].astype(int), unique[:, 2]
        # 250 rounds drawn at a time (the same stream as all at once): rounds x unique rows is dense
        draws = (_vote_draws(rng.multinomial(total, counts / total, size=min(250, rounds - start)), a_idx, b_idx,
                             won, n_models) for start in range(0, rounds, 250))
    # Fitted as drawn, a bounded number of rounds per batched fit: all rounds' rounds x models^2 arrays at
    # once took 20 GB for 800 models (issue 43).
    step = max(1, min(250, FIT_BYTES // (8 * n_models * n_models)))
    # one BLAS thread: OpenBLAS's threads spin on each small LU (250 rounds of 100 models: 12-18 CPU-s on the busy
    # 2-core machine, 0.6-0.8 on one thread); the intervals move by rounding (1e-15), as with another core count
    with one_blas_thread():
        boot = np.concatenate([ilsr_rounds(chunk[start:start + step])
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


def _cluster_draws(codes: np.ndarray, votes: Votes, rounds: int, rng):
    """Win matrices of resampled clusters, 250 rounds at a time: each cluster's own win matrix (sparse,
    clusters x models^2; its votes' weights applied) weighted by how often a round drew it."""
    from scipy.sparse import csr_matrix

    n_models, a, b, outcome = len(votes.models), votes.first, votes.second, votes.outcome
    w = np.ones(len(outcome)) if votes.weights is None else np.asarray(votes.weights, float)
    n_clusters = int(codes.max()) + 1
    cells = np.concatenate([a * n_models + b, b * n_models + a])
    own = csr_matrix((np.concatenate([outcome * w, (1 - outcome) * w]), (np.concatenate([codes, codes]), cells)),
                     shape=(n_clusters, n_models * n_models))
    for start in range(0, rounds, 250):
        size = min(250, rounds - start)
        drawn = rng.multinomial(n_clusters, np.full(n_clusters, 1 / n_clusters), size=size)
        yield np.asarray((own.T @ drawn.T).T).reshape(size, n_models, n_models)


# --- maximum likelihood with weights, covariates, pseudo-votes and clusters ---------------------------------------


@dataclass
class Fit:
    """One maximum-likelihood fit: log-strengths (mean 0) and covariate coefficients with their cluster-robust
    covariance (None where not asked for), the inverse information of the strengths (mean 0: what the
    influence of a vote is computed from), the fit's own parameters (``params``: strengths relative to the
    first model, then coefficients) and inverse Hessian (``bread``), the clusters and whether Newton's method
    converged; ``separated``: the votes separate the models or the covariates (a model never lost, or a
    covariate decides every vote), so no finite maximum-likelihood estimate exists: some linear predictor ran past
    SEPARATED, or the fit did not converge."""

    strengths: np.ndarray
    strength_cov: np.ndarray | None
    coefficients: np.ndarray
    coefficient_cov: np.ndarray | None
    inverse_information: np.ndarray
    params: np.ndarray
    bread: np.ndarray
    clusters: int
    converged: bool
    separated: bool = False

    def intervals(self, alpha: float, which: str = "strengths") -> tuple[np.ndarray, np.ndarray]:
        """t intervals with clusters - 1 degrees of freedom from the cluster-robust covariance."""
        from scipy import stats

        values, cov = (self.strengths, self.strength_cov) if which == "strengths" else (self.coefficients,
                                                                                        self.coefficient_cov)
        half = stats.t.ppf(1 - alpha / 2, max(self.clusters - 1, 1)) * np.sqrt(np.clip(np.diag(cov), 0, None))
        return values - half, values + half


def fit(votes: Votes, covariates: np.ndarray | None = None, weights: np.ndarray | None = None,
        targets: np.ndarray | None = None, prior: float = 0.0, start: np.ndarray | None = None,
        inverse: np.ndarray | None = None, covariance: bool = True, max_iter: int = 50, tol: float = 1e-8,
        penalty: np.ndarray | None = None, likelihood=None) -> Fit:
    """Maximum likelihood by Newton's method, with the cluster-robust (CR1) sandwich covariance statsmodels'
    GLM gives with cov_type="cluster" (tests/test_bradley_terry.py checks both against it). Hand-written
    because statsmodels' GLM and Logit need the dense design: a million votes by 200 models is 1.6 GB.
    ``covariates``: votes x k; ``weights``: a weight per vote (a count of a kind; default 1), times ``votes.weights``
    where the votes carry theirs (a weight multiplies the vote's log-likelihood and its score in the sandwich);
    ``targets``: the weight of each vote's outcome (default those weights x outcome; PPI++'s rectified loss is a
    logistic loss whose targets and weights differ: ppi.ppi_bradley_terry); ``prior``: pseudo-votes each way
    between every two models (a finite fit where one never lost); ``votes.clusters``: the unit of each vote's score
    in the sandwich (None: each vote its own), split by model pair where one spans several; ``start``:
    log-strengths to start from; ``inverse``: an earlier fit's ``bread`` for nearby data, whose steps (a product,
    no solve) are taken first; ``covariance`` False skips the sandwich; ``penalty``: a ridge (penalised
    likelihood, -penalty_c beta_c^2 / 2) per covariate; ``likelihood``: a ``bt_likelihood.Likelihood`` subclass's constructor
    (Davidson's ties: its extra parameters follow the covariates' in ``coefficients``)."""
    m = len(votes.models)
    first, second, y = votes.first.astype(np.int64), votes.second.astype(np.int64), np.asarray(votes.outcome, float)
    features = np.zeros((len(y), 0)) if covariates is None else np.asarray(covariates, float)
    w = (np.ones(len(y)) if weights is None else np.asarray(weights, float)) * (
        1.0 if votes.weights is None else votes.weights)
    t = w * y if targets is None else np.asarray(targets, float)
    data = len(y)
    if prior > 0:  # ``prior`` won and ``prior`` lost by the lower-numbered model of every pair
        low, high = np.triu_indices(m, 1)
        first, second = np.concatenate([first, low, low]), np.concatenate([second, high, high])
        w = np.concatenate([w, np.full(2 * len(low), prior)])
        t = np.concatenate([t, np.full(len(low), prior), np.zeros(len(low))])
        features = np.vstack([features, np.zeros((2 * len(low), features.shape[1]))])
    # one BLAS thread: on a busy 2-core machine OpenBLAS's threads made each 200 x 200 Cholesky 0.13 s, not 1 ms
    with one_blas_thread():
        model = (likelihood or Likelihood)(first, second, t, w, features, m)
        if penalty is not None:
            model.ridge[m - 1:m - 1 + features.shape[1]] = penalty
        beta, converged = model.maximise(start, inverse, max_iter, tol)
        eta = model.linear(beta)
        prob = model.probability(eta)
        bread = solve(model.hessian(prob) + np.diag(model.ridge), np.eye(len(beta)))
        centre, j, strength_cov, coefficient_cov, groups = centring(m), m - 1, None, None, 0
        if covariance:
            cov, groups = model.sandwich(prob, bread, votes.clusters, data)
            strength_cov, coefficient_cov = centre @ cov[:j, :j] @ centre.T, cov[j:, j:]
    separated = not converged or bool(np.max(np.abs(eta[:data]), initial=0.0) > SEPARATED)
    return Fit(centre @ beta[:j], strength_cov, beta[j:], coefficient_cov, centre @ bread[:j, :j] @ centre.T, beta,
               bread, groups, converged, separated)
