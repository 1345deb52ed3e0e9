"""Workers who do not vote in good faith, flagged by tests that stay valid however often they are run.

Each test turns a worker's votes, in collection order, into outcomes y in {0, 1} whose mean an honest
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
- ``rigging``: per worker and model, the votes of ``against_crowd`` where that model is the one the others
  mostly vote against: y = voted for it. A worker voting for one target model whatever the opponent (the
  rigging of Min et al., ICML 2025) wins this bet on every vote where the target is the weaker model.

FastChat's ``outlier_detect`` (its monitor's elo_analysis.py) runs a per-voter sequential test too, but
against pair statistics that include the voter, and with 1/alpha for every voter; here every worker is
left out of their own null, and the family-wise error rate over all workers and tests is at most ``alpha``:
Bonferroni over the e-values, threshold (tests x workers) / alpha, times the models for ``rigging``. Where
some are flagged, the tests run again with the flagged workers out of the crowd (not of the tests), up to
ROUNDS times: riggers who are a large share of a model's votes are the crowd of its pairs until the first
of them are found. An honest crowd with no flag is run once, so its guarantee is the one above.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from parlai_dialeval.adaptive.sequential import wealth_paths
from parlai_dialeval.analysis.cluster_robust import collection_order
from parlai_dialeval.analysis.pairwise import split_onboarding, with_sections

TESTS = ("position", "against_crowd", "too_fast", "rigging")
ROUNDS = 4  # at most: the tests again with the flagged workers out of the crowd, until no flag changes
CHUNK = 2 ** 18  # outcomes bet on at once (x 20 bets of the grid): about 40 MB per array
FLAG_COLUMNS = ["worker_id", "test", "target", "votes", "hits", "rate", "null", "e_value", "threshold", "flagged"]


@dataclass(frozen=True)
class VoterSettings:
    """The tests' nulls (docstring of this module); every one is a command-line option."""

    alpha: float = 0.05
    side_share: float = 0.8
    fast_share: float = 0.2
    words_per_second: float = 10.0
    min_seconds: float = 1.0
    min_other_votes: int = 5


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
            "too_fast": "answered faster than reading allows", "rigging": "voted for the weaker model"}


def flag_voters(comparisons: pd.DataFrame, settings: VoterSettings = VoterSettings()) -> VoterFlags:
    """Run the tests on every worker's votes (automatic ties and onboarding left out), in collection order
    (submit times where every vote has one, else file order: analysis.cluster_robust.collection_order)."""
    votes, _ = split_onboarding(comparisons)
    if "automatic" in votes:
        votes = votes[~votes["automatic"].eq(True)]
    position, order = collection_order(votes)
    votes = with_sections(votes.iloc[np.argsort(position, kind="stable")])
    workers = votes["worker_id"].astype(str).to_numpy()
    flagged: set = set()
    for _ in range(ROUNDS):
        table, tests = _run_tests(votes, workers, settings, trusted=~np.isin(workers, sorted(flagged)))
        now = set(table.loc[table["flagged"], "worker_id"])
        if now == flagged:
            break
        flagged = now
    return VoterFlags(table, tests, len(set(workers)), settings.alpha, order)


def _run_tests(votes: pd.DataFrame, workers: np.ndarray, settings: VoterSettings, trusted: np.ndarray):
    """(the evidence table, what each test ran on) with the crowd of ``trusted`` votes' workers."""
    n_workers = len(set(workers))
    outcomes, tests = {}, {}
    position, tests["position"] = _position(votes)
    if position is not None:
        outcomes["position"] = position
    crowd, tests["against_crowd"] = _against_crowd(votes, settings.min_other_votes, trusted)
    if crowd is not None:
        outcomes["against_crowd"] = crowd
        outcomes["rigging"] = crowd
        tests["rigging"] = "the votes of against_crowd, per worker and the model the others vote against"
    else:
        tests["rigging"] = tests["against_crowd"]
    fast, tests["too_fast"] = _too_fast(votes, settings)
    if fast is not None:
        outcomes["too_fast"] = fast
    models = int(pd.unique(votes[["model_a", "model_b"]].astype(str).to_numpy().ravel()).size)
    base = len(outcomes) * max(n_workers, 1) / settings.alpha
    frames = []
    for test, (rows_used, y, extra) in outcomes.items():
        keys = pd.DataFrame({"worker_id": workers[rows_used], "target": extra if test == "rigging" else ""})
        group = keys.groupby(["worker_id", "target"], sort=False).ngroup().to_numpy()
        frame = keys.drop_duplicates().reset_index(drop=True)  # ngroup numbers groups in first-seen order
        null = {"position": settings.side_share, "too_fast": settings.fast_share}.get(test, 0.5)
        frame["test"], frame["null"] = test, null
        frame["threshold"] = base * (models if test == "rigging" else 1)
        frame["votes"] = np.bincount(group)
        ones = np.bincount(group, weights=y)
        frame["hits"] = np.maximum(ones, frame["votes"] - ones) if test == "position" else ones
        frame["e_value"] = _e_values(y, group, null, test == "position", frame["threshold"].iloc[0])
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=FLAG_COLUMNS)
    table["hits"] = table["hits"].astype(int)
    table["rate"] = table["hits"] / table["votes"]
    table["flagged"] = table["e_value"] >= table["threshold"]
    rigging = table["test"] == "rigging"
    strongest = table[rigging].sort_values("e_value", ascending=False).drop_duplicates("worker_id")
    table = pd.concat([table[~rigging], strongest], ignore_index=True)[FLAG_COLUMNS]
    return table.sort_values(["flagged", "e_value"], ascending=False, ignore_index=True), tests


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


def _pair_keys(votes: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per vote: an integer per question, unit and unordered pair, and the pair's lower and higher model."""
    a, b = votes["model_a"].astype(str).to_numpy(dtype=object), votes["model_b"].astype(str).to_numpy(dtype=object)
    low, high = np.where(a < b, a, b), np.where(a < b, b, a)
    codes = [pd.factorize(column)[0] for column in (votes["question"].astype(str).to_numpy(dtype=object),
                                                     votes["unit"].to_numpy(), low, high)]
    return pd.factorize(pd.MultiIndex.from_arrays(codes))[0], low, high


def _position(votes: pd.DataFrame):
    decided = _decided(votes)
    pair, low, _ = _pair_keys(votes)
    a_is_low = votes["model_a"].astype(str).to_numpy() == low
    both = pd.Series(a_is_low).groupby(pair).nunique().to_numpy()[pair] == 2
    rows = np.flatnonzero(decided & both)
    if not len(rows):
        return None, "not run: no pair was shown in both orders, so a side cannot be told from a model"
    y = (votes["choice"].astype(str).to_numpy()[rows] == "a").astype(float)
    return (rows, y, None), f"{len(rows)} decided votes on pairs shown in both orders"


def _against_crowd(votes: pd.DataFrame, min_other: int, trusted: np.ndarray):
    """Leave-one-worker-out: the other (``trusted``) workers' sides on each pair (counts, no refits)."""
    decided = _decided(votes)
    pair, low, high = _pair_keys(votes)
    choice = votes["choice"].astype(str).to_numpy()
    winner = np.where(choice == "a", votes["model_a"].astype(str).to_numpy(), votes["model_b"].astype(str).to_numpy())
    low_won = (winner == low).astype(float)
    worker = pd.factorize(votes["worker_id"].astype(str))[0]
    frame = pd.DataFrame({"pair": pair, "worker": worker, "low_won": low_won})[decided]
    # Each other worker counts once per pair, by the side most of their votes on it took: a few workers
    # with many votes (riggers) cannot become the crowd by volume.
    own = frame.groupby(["pair", "worker"])["low_won"]
    side = np.sign(2 * own.transform("sum").to_numpy() - own.transform("size").to_numpy())
    trusted = trusted[decided]
    first = ~frame.duplicated(["pair", "worker"]).to_numpy() & trusted
    counted = pd.DataFrame({"pair": frame["pair"].to_numpy()[first], "side": side[first]})
    for_low = counted.assign(low=counted["side"] > 0).groupby("pair")["low"].sum()
    voiced = counted.assign(v=counted["side"] != 0).groupby("pair")["v"].sum()
    pair_rows = frame["pair"].to_numpy()
    other_n = voiced.reindex(pair_rows, fill_value=0).to_numpy() - (side != 0) * trusted
    other_s = for_low.reindex(pair_rows, fill_value=0).to_numpy() - (side > 0) * trusted
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = other_s / other_n
    usable = (other_n >= min_other) & (rate != 0.5)
    if not usable.any():
        return None, f"not run: no pair has at least {min_other} other workers who took a side on it"
    rows = np.flatnonzero(decided)[usable]
    crowd_low = rate[usable] > 0.5
    y = (frame["low_won"].to_numpy()[usable].astype(bool) != crowd_low).astype(float)
    weaker = np.where(crowd_low, high[rows], low[rows])  # the model the others mostly vote against
    return (rows, y, weaker), (f"{len(rows)} decided votes whose pair has at least {min_other} other workers who "
                               "took a side on it (and no even split)")


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
    return (rows, y, None), (f"{len(rows)} timed votes; too fast: under max({settings.min_seconds:g} s, words of "
                             f"the two responses / {settings.words_per_second:g} per second)")


def exclude_flagged(comparisons: pd.DataFrame, flags: VoterFlags) -> tuple[pd.DataFrame, int]:
    """The comparisons without the flagged workers' votes, and how many were left out."""
    out = comparisons["worker_id"].astype(str).isin(flags.flagged)
    return comparisons[~out], int(out.sum())
