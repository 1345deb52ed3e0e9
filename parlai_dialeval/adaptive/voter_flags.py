"""Workers who do not vote in good faith, flagged by tests that stay valid however often they are run.

Each test turns a worker's votes, in collection order, into outcomes y in [0, 1] whose mean an honest
worker keeps at or below a null value p0 at every vote, and bets against that null with certify's
e-process (parlai_dialeval.adaptive.sequential.wealth_paths: a test supermartingale, so by Ville's
inequality its running maximum ever reaches 1/a with probability at most a, at any look):

- ``position``: picks option A (y = 1) on decided votes, only on pairs shown in both orders (elsewhere a side is
  a model); null: A chosen at most ``side_share`` and at least 1 - ``side_share`` of the time (half the
  wealth bets on each side), so the position bias of honest crowds (55-65% A) is not evidence.
- ``against_crowd``: votes for the model that most other workers (leave-one-worker-out, the same question,
  unit and pair; each worker counted once, by the side most of their decided votes on the pair took; at
  least ``min_other_votes`` such workers) vote against; null 1/2: an honest worker who judges like the rest
  agrees with their majority at least as often as not.
- ``too_fast``: answers in less than the time reading allows (``duration`` under the response texts' words /
  ``words_per_second``, at least ``min_seconds``); null ``fast_share``; only where the records hold times.
- ``rigging``: per worker and model m, every decided vote of the worker on a pair with m whose question, unit
  and pair have at least ``min_other_votes`` other workers: y = voted for m; null: at most p, the other workers'
  mean share of votes for m there (each worker counted once, by their own share), its odds times e^``taste``
  (an honest worker may like a model more than the crowd does, by that much). Two bettors, each with half
  the error: certify's on z = 1/2 + (y - p) / (2 max(p, 1 - p)), in [0, 1] with mean at most 1/2 under the
  null, and a mixture of likelihood ratios against P(y = 1) = p's odds times e^1 ... e^4 (SHIFTS), strong
  for workers whose every vote goes one way. A worker voting for one target model whatever the opponent
  (the rigging of Min et al., ICML 2025) or at random (for weak models far more often than the crowd) wins.

FastChat's ``outlier_detect`` (its monitor's elo_analysis.py) runs a per-voter sequential test too, but
against pair statistics that include the voter, and with 1/alpha for every voter; here every worker is
left out of their own null, and the family-wise error rate over all workers and tests is at most ``alpha``:
Bonferroni over the e-values, threshold (tests x workers) / alpha, times the models for ``rigging``. Where
some worker's e-value reaches 1/alpha (a suspect: what one worker's test alone would call significant), the
tests run again with the suspects out of the crowd (not of the tests), up to ROUNDS times, until no suspect
changes: riggers who are a large share of a model's workers are its crowd until they are left out of it
(a group of riggers is left out as a group once each of them is suspect). An honest crowd without suspects
runs once, so its guarantee is the one above; with suspects, honest workers' nulls come from a crowd
without them, a shift the taste margin covers (validated by simulation: tests/test_voter_flags.py,
benchmarks/bench_voter_flags.py). The limits: a model's strength is known only from its own battles
(transitivity through other pairs places its opponents, not it), so riggers who are most of the workers on
a model's battles are its crowd and none of them becomes suspect; and a per-worker test under a family-wise
correction needs votes (at the benchmark's sizes riggers of 40 votes all for the target are found, of 20
not), so many riggers of a few votes each are not found, however many votes they add up to.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from parlai_dialeval.adaptive.sequential import LOG_CAP, wealth_paths
from parlai_dialeval.analysis.collection_order import collection_order
from parlai_dialeval.analysis.pairwise import split_onboarding, with_sections

TESTS = ("position", "against_crowd", "too_fast", "rigging")
CROWD_TESTS = ("against_crowd", "rigging")  # what they bet on changes when suspects leave the crowd
ROUNDS = 4  # at most: the tests again with the suspects out of the crowd, until no suspect changes
SHIFTS = np.array([1.0, 2.0, 3.0, 4.0])  # rigging's alternatives: log-odds above the null (itself above the crowd)
CHUNK = 2 ** 18  # outcomes bet on at once (x 20 bets of the grid): about 40 MB per array
FLAG_COLUMNS = ["worker_id", "test", "target", "votes", "hits", "rate", "null", "e_value", "threshold", "flagged"]


@dataclass(frozen=True)
class VoterSettings:
    """The tests' nulls (docstring of this module); alpha, side_share and words_per_second are command-line
    options of the pairwise commands (results/sections/voters.py)."""

    alpha: float = 0.05
    side_share: float = 0.8
    fast_share: float = 0.2
    words_per_second: float = 10.0
    min_seconds: float = 1.0
    min_other_votes: int = 5
    taste: float = 1.0  # rigging: log-odds by which an honest worker may favour a model more than the others do


@dataclass
class VoterFlags:
    """``table``: one row per worker and test that ran (``rigging``: the worker's strongest target only),
    with the votes tested, the hits (y = 1), the null, the e-value and its threshold; ``tests``: the tests
    that apply to these data, and why the others do not."""

    table: pd.DataFrame
    tests: dict = field(default_factory=dict)
    workers: int = 0
    alpha: float = 0.05
    order: str = "file order"  # the order each worker's votes were bet in: collection order where known

    @property
    def flagged(self) -> list[str]:
        return sorted(set(self.table.loc[self.table["flagged"], "worker_id"]))

    def evidence(self) -> pd.DataFrame:
        return self.table[self.table["flagged"]].reset_index(drop=True)

    def sentences(self) -> list[str]:
        """The flagged workers and their evidence, in words."""
        lines = []
        for row in self.evidence().itertuples(index=False):
            target = f" {row.target}" if row.target else ""
            lines.append(f"worker {row.worker_id}: {DESCRIBE[row.test]}{target} on {row.hits} of {row.votes} votes "
                         f"(honest at most {row.null:.0%}); e-value {row.e_value:.3g} >= {row.threshold:,.0f}")
        return lines

    def summary(self) -> dict:
        return {"alpha": self.alpha, "workers": self.workers, "order": self.order, "tests": self.tests,
                "flagged": self.flagged,
                "error_control": "family-wise over all workers and tests (Bonferroni over e-values)",
                "evidence": self.evidence().to_dict(orient="records")}


DESCRIBE = {"position": "picked one side", "against_crowd": "voted against the other workers' majority",
            "too_fast": "answered faster than reading allows", "rigging": "voted for"}


def flag_voters(comparisons: pd.DataFrame, settings: VoterSettings = VoterSettings()) -> VoterFlags:
    """Run the tests on every worker's votes (automatic ties and onboarding left out), in collection order
    (submit times where every vote has one, else file order: analysis.collection_order.collection_order)."""
    votes, _ = split_onboarding(comparisons)
    if "automatic" in votes:
        votes = votes[~votes["automatic"].eq(True)]
    position, order = collection_order(votes)
    votes = with_sections(votes.iloc[np.argsort(position, kind="stable")])
    workers = pd.factorize(votes["worker_id"].astype(str).to_numpy(dtype=object))
    pairs = _pairs(votes)
    fixed = {"position": _position(votes, pairs, settings.side_share), "too_fast": _too_fast(votes, settings)}
    suspects, memo = np.zeros(len(workers[1]), bool), {}
    for _ in range(ROUNDS):
        crowd = _crowd(pairs, trusted=~suspects[workers[0]])
        table, tests = _run_tests(workers, pairs["models"], settings, {
            "position": fixed["position"], "against_crowd": _against_crowd(crowd, settings.min_other_votes),
            "too_fast": fixed["too_fast"], "rigging": _rigging(crowd, settings.min_other_votes, settings.taste)}, memo)
        now = np.isin(workers[1], table.loc[table["e_value"] >= 1 / settings.alpha, "worker_id"])
        if (now == suspects).all():
            break
        suspects = now
    return VoterFlags(table, tests, len(workers[1]), settings.alpha, order)


def _run_tests(workers: tuple, models: np.ndarray, settings: VoterSettings, results: dict, memo: dict):
    """(the evidence table, what each test ran on) from each test's (outcomes or None, what it ran on);
    ``workers``: (code per vote, names). The tests that do not read the crowd (position, too_fast) take their
    evidence from ``memo`` when an earlier round had the same threshold."""
    codes, names = workers
    tests = {test: how for test, (_, how) in results.items()}
    outcomes = {test: result for test, (result, _) in results.items() if result is not None}
    base = len(outcomes) * max(len(names), 1) / settings.alpha
    frames = []
    for test, result in outcomes.items():
        threshold = base * (len(models) if test == "rigging" else 1)
        if test in CROWD_TESTS or (test, threshold) not in memo:
            memo[test, threshold] = _evidence(test, result, codes[result[0]], names, models, threshold)
        frames.append(memo[test, threshold])
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=FLAG_COLUMNS)
    table["hits"] = table["hits"].astype(int)
    table["rate"] = table["hits"] / table["votes"]
    table["flagged"] = table["e_value"] >= table["threshold"]
    rigging = table["test"] == "rigging"
    strongest = table[rigging].sort_values("e_value", ascending=False).drop_duplicates("worker_id")
    table = pd.concat([table[~rigging], strongest], ignore_index=True)[FLAG_COLUMNS]
    return table.sort_values(["flagged", "e_value"], ascending=False, ignore_index=True), tests


def _evidence(test: str, result: tuple, worker: np.ndarray, names: np.ndarray, models: np.ndarray,
              threshold: float) -> pd.DataFrame:
    """One row per worker (and target model) of one test's outcomes: votes, hits, null, e-value."""
    _, y, target, hits, null = result
    key = worker.astype(np.int64) * (len(models) + 1) + (0 if target is None else target + 1)
    group, _ = pd.factorize(key)  # groups numbered in first-seen order
    first = np.unique(group, return_index=True)[1]
    frame = pd.DataFrame({"worker_id": names[worker[first]],
                          "target": "" if target is None else models[target[first]], "test": test,
                          "threshold": threshold, "votes": np.bincount(group)})
    ones = np.bincount(group, weights=hits)
    frame["hits"] = np.maximum(ones, frame["votes"] - ones) if test == "position" else ones
    if test == "rigging":  # the mean null of the worker's votes; half the error on each bettor: the larger
        # running maximum, halved, reaches the threshold with probability at most 1 / threshold (shown >= 1)
        frame["null"] = np.bincount(group, weights=null) / frame["votes"]
        frame["e_value"] = np.maximum(1.0, np.fmax(_e_values(y, group, 0.5, False, 2 * threshold),
                                                   _likelihood_ratios(hits, null, group, 2 * threshold)) / 2)
    else:
        frame["null"] = null
        frame["e_value"] = _e_values(y, group, null, test == "position", threshold)
    return frame


def _e_values(y: np.ndarray, group: np.ndarray, null: float, two_sided: bool, threshold: float) -> np.ndarray:
    """Each group's e-value (its running maximum wealth, at least 1), its outcomes in order; nan for groups
    too small to reach ``threshold`` even if every outcome were 1 (the largest wealth there is). Groups of
    similar length are padded at the end with the null value (no change of wealth) and bet on as one array,
    so a million votes take a few array operations, not one call per worker."""
    order = np.argsort(group, kind="stable")
    sizes = np.bincount(group)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    best = (0.5 if two_sided else 1.0) * wealth_paths(np.ones(max(sizes.max(initial=0), 1)), 1, null)
    reachable = np.concatenate([[False], best >= threshold])[np.minimum(sizes, len(best))]
    e = np.where(reachable, 1.0, np.nan)
    bucket = np.ceil(np.log2(np.maximum(sizes, 1))).astype(int)
    for width in np.unique(bucket[reachable]):
        members = np.flatnonzero((bucket == width) & reachable)
        length = 2 ** width
        for chunk in np.array_split(members, max(1, len(members) * length // CHUNK)):
            offsets = np.arange(length)
            inside = offsets[None, :] < sizes[chunk, None]
            index = np.minimum(starts[chunk, None] + offsets[None, :], len(y) - 1)
            padded = np.where(inside, y[order[index]], null)
            paths = wealth_paths(padded, 1, null)
            if two_sided:  # half the wealth on each side
                paths = 0.5 * (paths + wealth_paths(np.where(inside, 1 - padded, null), 1, null))
            e[chunk] = np.maximum(1.0, paths.max(axis=1))
    return e


def _likelihood_ratios(y: np.ndarray, null: np.ndarray, group: np.ndarray, threshold: float) -> np.ndarray:
    """Each group's running maximum (at least 1) of the mean over SHIFTS of the likelihood ratios of its
    outcomes y in {0, 1} (in order) under "P(y = 1) = the null's odds times e^shift" against the null: each
    ratio has mean at most 1 where P(y = 1) <= the null, so the mean is a test supermartingale. Strong where
    certify's bets, truncated at half the largest safe bet, are weak: a worker whose every vote goes to a
    model the null gives 60% wins 1.33 per vote there, here up to 1 / 0.6. nan for groups that could not
    reach ``threshold`` even if every outcome were 1."""
    p = np.clip(null, 1e-3, 1 - 1e-3)  # a null of 0 or 1 would make one vote decisive
    most = np.log(expit(logit(p) + SHIFTS[-1]) / p)  # the largest step a vote can give
    reachable = np.bincount(group, weights=most) >= np.log(threshold)
    e = np.full(len(reachable), np.nan)
    keep = np.flatnonzero(reachable[group])
    if not len(keep):
        return e
    order = keep[np.argsort(group[keep], kind="stable")]
    sizes = np.bincount(group[order], minlength=len(reachable))[reachable]
    p = p[order][:, None]
    alternative = expit(logit(p) + SHIFTS[None, :])
    steps = np.where(y[order, None] > 0, np.log(alternative / p), np.log((1 - alternative) / (1 - p)))
    total = np.cumsum(steps, axis=0)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    before = np.concatenate([np.zeros((1, len(SHIFTS))), total])[starts]  # each group's sum before its start
    wealth = np.exp(np.minimum(total - np.repeat(before, sizes, axis=0), LOG_CAP)).mean(axis=1)
    e[reachable] = np.maximum(1.0, np.maximum.reduceat(wealth, starts))
    return e


def _decided(votes: pd.DataFrame) -> np.ndarray:
    return votes["choice"].astype(str).isin(["a", "b"]).to_numpy()


def _pairs(votes: pd.DataFrame) -> dict:
    """What every round reads, per vote: an integer per question, unit and unordered pair, its lower and
    higher model (codes into ``models``), whether the vote is decided; per decided vote whether the lower
    model won, its worker's share of votes for the lower model on the pair and whether it is the worker's
    first vote there."""
    a, b = votes["model_a"].astype(str).to_numpy(dtype=object), votes["model_b"].astype(str).to_numpy(dtype=object)
    codes, models = pd.factorize(np.concatenate([a, b]))
    a, b = codes[:len(a)], codes[len(a):]
    low, high = np.minimum(a, b), np.maximum(a, b)
    keys = [pd.factorize(column)[0] for column in (votes["question"].astype(str).to_numpy(dtype=object),
                                                    votes["unit"].to_numpy())]
    pair = pd.factorize(pd.MultiIndex.from_arrays(keys + [low, high]))[0]
    decided = _decided(votes)
    low_won = np.where(votes["choice"].astype(str).to_numpy() == "a", a, b)[decided] == low[decided]
    frame = pd.DataFrame({"pair": pair[decided], "worker": pd.factorize(votes["worker_id"].astype(str))[0][decided],
                          "low_won": low_won.astype(float)})
    return {"pair": pair, "low": low, "high": high, "models": np.asarray(models, dtype=object), "decided": decided,
            "a_is_low": a == low, "low_won": frame["low_won"].to_numpy(),
            "share": frame.groupby(["pair", "worker"])["low_won"].transform("mean").to_numpy(),
            "first": ~frame.duplicated(["pair", "worker"]).to_numpy()}


def _position(votes: pd.DataFrame, pairs: dict, side_share: float):
    pair = pairs["pair"]
    both = pd.Series(pairs["a_is_low"]).groupby(pair).nunique().to_numpy()[pair] == 2
    rows = np.flatnonzero(pairs["decided"] & both)
    if not len(rows):
        return None, "not run: no pair was shown in both orders, so a side cannot be told from a model"
    y = (votes["choice"].astype(str).to_numpy()[rows] == "a").astype(float)
    return (rows, y, None, y, side_share), f"{len(rows)} decided votes on pairs shown in both orders"


def _crowd(pairs: dict, trusted: np.ndarray) -> dict:
    """Per decided vote, leave-one-worker-out: the other (``trusted``) workers on the same question, unit and
    pair, each counted once (counts, no refits): how many (``workers``); how many most often chose the pair's
    lower model (``for_low``) and how many took a side (``voiced``); the mean of their shares of votes for the
    lower model (``share_low``). Each worker counting once, a few workers with many votes (riggers) cannot
    become the crowd by volume."""
    decided = pairs["decided"]
    pair_rows, share = pairs["pair"][decided], pairs["share"]
    side = np.sign(2 * share - 1)  # the side most of the worker's votes on the pair took (0: even)
    trusted = trusted[decided]
    first = pairs["first"] & trusted
    n_pairs = int(pairs["pair"].max(initial=-1)) + 1

    def others(values: np.ndarray, own: np.ndarray) -> np.ndarray:  # the pair's sum without this worker
        return np.bincount(pair_rows[first], weights=values[first], minlength=n_pairs)[pair_rows] - own * trusted

    workers = others(np.ones(len(share)), 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        share_low = others(share, share) / workers
    return {"rows": np.flatnonzero(decided), "low_won": pairs["low_won"], "low": pairs["low"][decided],
            "high": pairs["high"][decided], "workers": workers, "for_low": others((side > 0).astype(float), side > 0),
            "voiced": others((side != 0).astype(float), side != 0), "share_low": share_low}


def _against_crowd(crowd: dict, min_other: int):
    other_n, other_s = crowd["voiced"], crowd["for_low"]
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = other_s / other_n
    usable = (other_n >= min_other) & (rate != 0.5)
    if not usable.any():
        return None, f"not run: no pair has at least {min_other} other workers who took a side on it"
    crowd_low = rate[usable] > 0.5
    y = (crowd["low_won"][usable].astype(bool) != crowd_low).astype(float)
    return (crowd["rows"][usable], y, None, y, 0.5), (
        f"{int(usable.sum())} decided votes whose pair has at least {min_other} other workers who took a side on it "
        "(and no even split)")


def _rigging(crowd: dict, min_other: int, taste: float):
    """Per vote, once for each model of its pair: y = voted for that model m, null p = the other workers' mean
    share of votes for m, its odds times e^``taste``. Bet on z = 1/2 + (y - p) / (2 max(p, 1 - p)), in [0, 1]
    with mean at most 1/2 where E[y] <= p, so certify's bets against 1/2 apply (z = 1 for a vote for m where
    p <= 1/2: all a vote can say)."""
    usable = crowd["workers"] >= min_other
    if not usable.any():
        return None, f"not run: no pair has at least {min_other} other workers who voted on it"
    index = np.flatnonzero(usable)
    share = np.concatenate([crowd["share_low"][index], 1 - crowd["share_low"][index]])
    voted_for = np.concatenate([crowd["low_won"][index], 1 - crowd["low_won"][index]])
    target = np.concatenate([crowd["low"][index], crowd["high"][index]])
    rows = np.concatenate([crowd["rows"][index], crowd["rows"][index]])
    with np.errstate(divide="ignore"):
        null = expit(logit(share) + taste)
    z = 0.5 + (voted_for - null) / (2 * np.maximum(null, 1 - null))
    order = np.argsort(rows, kind="stable")  # each worker's bets in collection order
    return (rows[order], z[order], target[order], voted_for[order], null[order]), (
        f"{len(index)} decided votes whose pair has at least {min_other} other workers who voted on it, each for "
        f"both its models; honest at most the others' share of votes for the model with its odds x "
        f"{np.exp(taste):.3g}")


def _too_fast(votes: pd.DataFrame, settings: VoterSettings):
    if "duration" not in votes:
        return None, "not run: the records hold no times (duration)"
    seconds = pd.to_numeric(votes["duration"], errors="coerce").to_numpy(dtype=float)
    timed = np.isfinite(seconds)
    if not timed.any():
        return None, "not run: the records hold no times (duration)"
    words = np.zeros(len(votes))
    for column in ("response_a", "response_b"):
        if column in votes:
            words += votes[column].fillna("").astype(str).str.split().str.len().to_numpy()
    needed = np.maximum(settings.min_seconds, words / settings.words_per_second)
    rows = np.flatnonzero(timed)
    y = (seconds[rows] < needed[rows]).astype(float)
    return (rows, y, None, y, settings.fast_share), (
        f"{len(rows)} timed votes; too fast: under max({settings.min_seconds:g} s, words of the two responses / "
        f"{settings.words_per_second:g} per second)")


def exclude_flagged(comparisons: pd.DataFrame, flags: VoterFlags) -> tuple[pd.DataFrame, int]:
    """The comparisons without the flagged workers' votes, and how many were left out."""
    out = comparisons["worker_id"].astype(str).isin(flags.flagged)
    return comparisons[~out], int(out.sum())
