"""Workers who do not vote in good faith, flagged by tests that stay valid however often they are run.

Each test turns a worker's votes, in collection order, into outcomes y and bets against what an honest worker
would do, with an e-process: a test supermartingale under the null, so by Ville's inequality its running maximum
ever reaches 1/a with probability at most a, at any look.

- ``position``: picks option A (y = 1) on decided votes, only on pairs shown in both orders (elsewhere a side is
  a model); null: A chosen at most ``side_share`` and at least 1 - ``side_share`` of the time (half the
  wealth bets on each side), so the position bias of honest crowds (55-65% A) is not evidence. Certify's bets
  (parlai_dialeval.adaptive.sequential.wealth_paths).
- ``against_crowd``: votes for the model that most other workers (leave-one-worker-out, the same question,
  unit and pair; each worker counted once, by the side most of their decided votes on the pair took; at
  least ``min_other_votes`` such workers) vote against, per worker and that model; null: the others' share of
  votes for it, with the worker's own taste for it around it (below).
- ``too_fast``: answers in less than the time reading allows (``duration`` under the response texts' words /
  ``words_per_second``, at least ``min_seconds``); null ``fast_share``; only where the records hold times.
- ``rigging``: per worker and model m, every decided vote of the worker on a pair with m whose question, unit
  and pair have at least ``min_other_votes`` other workers: y = voted for m; null: the other workers' mean share
  of votes for m there (each worker counted once, by their own share), with the worker's own taste for m.
  A worker voting for one target model whatever the opponent (the rigging of Min et al., ICML 2025) or at
  random (for weak models far more often than the crowd) wins.

Honest people have tastes, and a crowd can have strong ones: the two crowd tests allow them
(adaptive/voter_taste.py). An honest worker's chance of voting for a model is the crowd's share moved by their
own taste, drawn from N(0, v) per pair (a part shared by the worker's pairs with one model, a part per pair);
v is estimated from the crowd (robustly: workers far from everyone, riggers and random clickers, are a
component of their own) and taken at the upper end of its 99% interval, or set (``taste``, the SD). The
e-value is the likelihood of the worker's votes under alternatives (the crowd's odds times e^2 ... e^8, a
share of 0.95 or 0.99, any constant share) over their marginal likelihood under the null, tastes integrated
out: valid for honest workers as the crowd's spread of tastes describes them, not for a worker whose taste is
far beyond the crowd's (their votes are what rigging looks like, and that is what a flag says).

FastChat's ``outlier_detect`` (its monitor's elo_analysis.py) runs a per-voter sequential test too, but
against pair statistics that include the voter, and with 1/alpha for every voter; here every worker is
left out of their own null, and the family-wise error rate over all workers and tests is at most ``alpha``:
Bonferroni over the e-values, threshold (tests x workers) / alpha, times the models for the crowd tests. Where
some worker's e-value reaches 1/alpha (a suspect: what one worker's test alone would call significant), the
tests run again with the suspects out of the crowd (not of the tests), and the flagged ones out of the taste
estimate, up to ROUNDS times, until neither changes: riggers who are a large share of a model's workers are its
crowd until they are left out of it (a group of riggers is left out as a group once each of them is suspect).
An honest crowd without suspects runs once, so its guarantee is the one above (validated by simulation across
tastes of SD 0 to 1.5 logits: tests/test_voter_flags.py, benchmarks/bench_voter_flags.py). The limits: a
model's strength is known only from its own battles, so riggers who are most of the workers on a model's
battles are its crowd and none of them becomes suspect; a per-worker test under a family-wise correction needs
votes, so many riggers of a few votes each are not found, however many votes they add up to; and where honest
tastes are wide, a worker whose every vote goes to one model is what a strong liking looks like, so riggers need
more votes to be told apart.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from parlai_dialeval.adaptive.sequential import wealth_paths
from parlai_dialeval.adaptive.voter_taste import smoothed_share, taste_e_values, taste_variance
from parlai_dialeval.analysis.collection_order import collection_order
from parlai_dialeval.analysis.keys import first_seen_codes
from parlai_dialeval.analysis.pairwise import split_onboarding, with_sections

TESTS = ("position", "against_crowd", "too_fast", "rigging")
CROWD_TESTS = ("against_crowd", "rigging")  # what they bet on changes when suspects leave the crowd
ROUNDS = 4  # at most: the tests again with the suspects out of the crowd, until no suspect changes
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
    # rigging: the SD (logits) of honest workers' tastes for a model over the crowd's; None: estimated from the
    # crowd (adaptive/voter_taste.py)
    taste: float | None = None


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
    taste_sd: float | None = None  # rigging: the SD of honest tastes allowed (logits), where the test ran

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
            null = (f"the other workers' share for it {row.null:.0%}, honest tastes spread SD {self.taste_sd:.2g} "
                    "logits around it" if row.test in CROWD_TESTS else f"honest at most {row.null:.0%}")
            lines.append(f"worker {row.worker_id}: {DESCRIBE[row.test]}{target} on {row.hits} of {row.votes} votes "
                         f"({null}); e-value {row.e_value:.3g} >= {row.threshold:,.0f}")
        return lines

    def summary(self) -> dict:
        return {"alpha": self.alpha, "workers": self.workers, "order": self.order, "tests": self.tests,
                "flagged": self.flagged, "taste_sd": self.taste_sd,
                "error_control": "family-wise over all workers and tests (Bonferroni over e-values)",
                "evidence": self.evidence().to_dict(orient="records")}


DESCRIBE = {"position": "picked one side", "against_crowd": "voted against the other workers' majority, for",
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
    suspects, flagged, memo, tastes = np.zeros(len(workers[1]), bool), np.zeros(len(workers[1]), bool), {}, {}
    for _ in range(ROUNDS):
        crowd = _crowd(pairs, trusted=~suspects[workers[0]])
        # tastes from every worker but the flagged: honest suspects are the crowd's strongest tastes
        key = (flagged.tobytes(), suspects.tobytes())
        if key not in tastes:
            tastes[key] = _taste(crowd, ~flagged[workers[0]][pairs["decided"]], settings.min_other_votes,
                                 settings.taste)
        taste = tastes[key]
        table, tests = _run_tests(workers, pairs["models"], settings, {
            "position": fixed["position"], "against_crowd": _against_crowd(crowd, settings.min_other_votes, taste),
            "too_fast": fixed["too_fast"], "rigging": _rigging(crowd, settings.min_other_votes, taste)}, memo)
        now = np.isin(workers[1], table.loc[table["e_value"] >= 1 / settings.alpha, "worker_id"])
        flagged_now = np.isin(workers[1], table.loc[table["flagged"], "worker_id"])
        if (now == suspects).all() and (flagged_now == flagged).all():
            break
        suspects, flagged = now, flagged_now
    return VoterFlags(table, tests, len(workers[1]), settings.alpha, order, float(np.sqrt(taste[0])))


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
        threshold = base * (len(models) if test in CROWD_TESTS else 1)  # the crowd tests: per model too
        if test in CROWD_TESTS or (test, threshold) not in memo:
            memo[test, threshold] = _evidence(test, result, codes[result[0]], names, models, threshold)
        frames.append(memo[test, threshold])
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=FLAG_COLUMNS)
    table["hits"] = table["hits"].astype(int)
    table["rate"] = table["hits"] / table["votes"]
    table["flagged"] = table["e_value"] >= table["threshold"]
    per_model = table["test"].isin(CROWD_TESTS)  # each worker's strongest model per test is shown
    strongest = table[per_model].sort_values("e_value", ascending=False).drop_duplicates(["worker_id", "test"])
    table = pd.concat([table[~per_model], strongest], ignore_index=True)[FLAG_COLUMNS]
    return table.sort_values(["flagged", "e_value"], ascending=False, ignore_index=True), tests


def _evidence(test: str, result: tuple, worker: np.ndarray, names: np.ndarray, models: np.ndarray,
              threshold: float) -> pd.DataFrame:
    """One row per worker (and target model) of one test's outcomes: votes, hits, null, e-value."""
    _, y, target, hits, null = result[:5]
    key = worker.astype(np.int64) * (len(models) + 1) + (0 if target is None else target + 1)
    group, _ = pd.factorize(key)  # groups numbered in first-seen order
    first = np.unique(group, return_index=True)[1]
    frame = pd.DataFrame({"worker_id": names[worker[first]],
                          "target": "" if target is None else models[target[first]], "test": test,
                          "threshold": threshold, "votes": np.bincount(group)})
    ones = np.bincount(group, weights=hits)
    frame["hits"] = np.maximum(ones, frame["votes"] - ones) if test == "position" else ones
    if test in CROWD_TESTS:  # the others' mean share over the worker's votes; the e-values allow the spread of
        # honest tastes (result[5], their variance: adaptive/voter_taste.py)
        frame["null"] = np.bincount(group, weights=null) / frame["votes"]
        # a group is one worker's votes for one model: half of a pair's taste is the liking for it, shared by
        # the group, half the opponent's, per pair (one group for all of a worker's votes against the crowd
        # flagged 3 of 30 honest studies at taste SD 1.5: a liking for one weak model is not a leaning against
        # every majority)
        frame["e_value"] = taste_e_values(hits, null, group, result[6], result[5], threshold)
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
    pair = first_seen_codes([votes["question"].astype(str).to_numpy(dtype=object), votes["unit"].to_numpy(), low, high])
    decided = _decided(votes)
    low_won = np.where(votes["choice"].astype(str).to_numpy() == "a", a, b)[decided] == low[decided]
    frame = pd.DataFrame({"pair": pair[decided], "worker": pd.factorize(votes["worker_id"].astype(str))[0][decided],
                          "low_won": low_won.astype(float)})
    return {"pair": pair, "low": low, "high": high, "models": np.asarray(models, dtype=object), "decided": decided,
            "a_is_low": a == low, "low_won": frame["low_won"].to_numpy(), "worker": frame["worker"].to_numpy(),
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
            "voiced": others((side != 0).astype(float), side != 0), "share_low": share_low, "trusted": trusted,
            "worker": pairs["worker"], "pair": pair_rows, "block": pairs["worker"] * (n_pairs + 1) + pair_rows}


def _taste(crowd: dict, estimate_from: np.ndarray, min_other: int, taste: float | None) -> tuple[float, str]:
    """(the variance of honest tastes the crowd tests allow, how it was had): ``taste`` squared, or the upper end of
    its interval estimated from the decided votes ``estimate_from`` on pairs with at least ``min_other`` others."""
    if taste is not None:
        return taste ** 2, f"honest tastes SD {taste:g} logits (set)"
    usable = (crowd["workers"] >= min_other) & estimate_from
    share_low = smoothed_share(crowd["share_low"][usable], crowd["workers"][usable])
    variance, upper = taste_variance(crowd["low_won"][usable], share_low, crowd["block"][usable],
                                     crowd["worker"][usable])
    if np.isnan(variance):
        return upper, (f"too few workers with several votes on a pair to tell how tastes differ: tastes up to SD "
                       f"{np.sqrt(upper):.2g} logits allowed")
    return upper, (f"honest tastes estimated from the crowd: SD {np.sqrt(variance):.2g} logits, allowed up to "
                   f"{np.sqrt(upper):.2g} (the upper end of its 99% interval)")


def _against_crowd(crowd: dict, min_other: int, taste: tuple[float, str]):
    """Per vote on a pair whose other workers mostly took one side: y = voted for the other side's model, bet on
    per worker and that model (an honest worker who likes a model the crowd rates low votes against the crowd on
    its pairs, and on those alone: the same taste for it); the other workers' share of votes for it (half a
    worker added each way), with the honest tastes around it."""
    other_n, other_s = crowd["voiced"], crowd["for_low"]
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = other_s / other_n
    usable = (other_n >= min_other) & (rate != 0.5)
    if not usable.any():
        return None, f"not run: no pair has at least {min_other} other workers who took a side on it"
    crowd_low = rate[usable] > 0.5
    y = (crowd["low_won"][usable].astype(bool) != crowd_low).astype(float)
    share_low = smoothed_share(crowd["share_low"][usable], crowd["workers"][usable])
    minority = np.where(crowd_low, 1 - share_low, share_low)
    target = np.where(crowd_low, crowd["high"][usable], crowd["low"][usable])
    return (crowd["rows"][usable], y, target, y, minority, taste[0], crowd["pair"][usable]), (
        f"{int(usable.sum())} decided votes whose pair has at least {min_other} other workers who took a side on it "
        f"(and no even split); honest: the others' share of votes for the side against their majority, with the "
        f"worker's own taste; {taste[1]}")


def _rigging(crowd: dict, min_other: int, taste: tuple[float, str]):
    """Per vote, once for each model of its pair: y = voted for that model m, and the other workers' share of votes
    for m (half a worker added each way), with the honest tastes around it (adaptive/voter_taste.py)."""
    usable = crowd["workers"] >= min_other
    if not usable.any():
        return None, f"not run: no pair has at least {min_other} other workers who voted on it"
    index = np.flatnonzero(usable)
    share_low = smoothed_share(crowd["share_low"][index], crowd["workers"][index])
    share = np.concatenate([share_low, 1 - share_low])
    voted_for = np.concatenate([crowd["low_won"][index], 1 - crowd["low_won"][index]])
    target = np.concatenate([crowd["low"][index], crowd["high"][index]])
    rows = np.concatenate([crowd["rows"][index], crowd["rows"][index]])
    order = np.argsort(rows, kind="stable")  # each worker's votes in collection order
    pair = np.concatenate([crowd["pair"][index], crowd["pair"][index]])
    return (rows[order], voted_for[order], target[order], voted_for[order], share[order], taste[0], pair[order]), (
        f"{len(index)} decided votes whose pair has at least {min_other} other workers who voted on it, each for "
        f"both its models; honest: the others' share of votes for the model, with the worker's own taste; {taste[1]}")


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
