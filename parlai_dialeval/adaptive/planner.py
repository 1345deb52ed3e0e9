"""What a study costs before it runs: judgments, worker-hours and money per protocol for a chosen power
and alpha (../shared/notes/adaptive_evaluation.md, section 4).

Pairwise designs are planned for the tests the analyses run, on clustered votes (several votes per item,
within-item ICC; parlai_dialeval.analysis.cluster_robust): the fixed design for ``analyze_pairwise``'s exact
two-sided binomial (sign) test over items won and lost, its power computed exactly from the
beta-binomial model of votes; the sequential design for ``dialeval certify``'s rule (one betting outcome
per item, threshold K(K-1)/alpha), whose stopping time has no closed form and is simulated with the same
e-process, reported as median and 80th / 90th percentiles. Single-model sizes come from statsmodels'
power solvers, multiplied by the design effect where judgments cluster in conversations.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special, stats
from statsmodels.stats.power import TTestIndPower
from statsmodels.stats.proportion import samplesize_proportions_2indep_onetail

from parlai_dialeval.adaptive.sequential import certification_threshold, wealth_paths
from parlai_dialeval.analysis.cluster_robust import design_effect

PROTOCOLS = ("pairwise", "sm_turn", "sm_dialog")
PERCENTILES = (50, 80, 90)  # p50 is the median
SEQUENTIAL_CAP = 20000  # items after which a simulated sequential study is left open


@dataclass(frozen=True)
class Costs:
    """What one judgment costs: seconds of work, the share of workers whose work passes quality
    control (the rest is paid and discarded), pay per hour and the platform's fee on top."""

    seconds_per_judgment: float = 67.0  # Smith et al. 2022: PW-Dialog, about 67 s per judgment
    qc_pass_rate: float = 1.0
    hourly_pay: float = 12.0
    fee: float = 0.333  # Prolific's service fee on rewards (a third, as of 2026)

    def table(self, judgments: float) -> dict[str, float]:
        paid = judgments / self.qc_pass_rate
        hours = paid * self.seconds_per_judgment / 3600
        return {"judgments": judgments, "paid_judgments": paid, "worker_hours": hours,
                "money": hours * self.hourly_pay * (1 + self.fee)}


@dataclass(frozen=True)
class Votes:
    """How pairwise votes arise: the better model's win rate among decided votes, the tie share, votes per
    item (workers per prompt, turns per PW-Turn conversation) and the within-item ICC of decided votes."""

    win_rate: float
    tie_rate: float = 0.0
    votes_per_item: int = 1
    icc: float = 0.0

    def beta(self) -> tuple[float, float] | None:
        """Parameters of the items' win probabilities (beta-binomial: icc = 1 / (a + b + 1)); None at icc 0."""
        if self.icc <= 0:
            return None
        concentration = 1 / self.icc - 1
        return self.win_rate * concentration, (1 - self.win_rate) * concentration

    def item_outcomes(self) -> tuple[float, float]:
        """(P(an item is won by the better model), P(it is lost)): more decided votes one way, exactly."""
        m, t, shape = self.votes_per_item, self.tie_rate, self.beta()
        won = lost = 0.0
        for wins in range(m + 1):
            for losses in range(m + 1 - wins):
                if wins == losses:
                    continue
                ways = math.factorial(m) / (math.factorial(wins) * math.factorial(losses)
                                            * math.factorial(m - wins - losses))
                # E[p^wins (1 - p)^losses] over the items' p: a beta function ratio, or plain powers at icc 0
                moment = (self.win_rate ** wins * (1 - self.win_rate) ** losses if shape is None else
                          math.exp(special.betaln(shape[0] + wins, shape[1] + losses) - special.betaln(*shape)))
                chance = ways * t ** (m - wins - losses) * (1 - t) ** (wins + losses) * moment
                won, lost = (won + chance, lost) if wins > losses else (won, lost + chance)
        # shares of one distribution: rounding can take their sum past 1 (1 + 1.3e-15 at one vote an item,
        # icc 0.1), and the decided share's variance 1 - share below 0
        decided = won + lost
        return (won / decided, lost / decided) if decided > 1 else (won, lost)

    def simulate_items(self, rng: np.random.Generator, items: int) -> np.ndarray:
        """Betting outcomes of ``items`` items for the better model: the mean of their votes (1, 1/2, 0)."""
        shape = self.beta()
        p = np.full(items, self.win_rate) if shape is None else rng.beta(*shape, size=items)
        tie = rng.binomial(self.votes_per_item, self.tie_rate, size=items)
        wins = rng.binomial(self.votes_per_item - tie, p)
        return (wins + tie / 2) / self.votes_per_item


def _rejecting_count(decided: np.ndarray, level: float) -> np.ndarray:
    """For each number of decided items D, the largest count k with 2 P(X <= k) <= level under p = 1/2 (it
    rejects, and so does D - k): from the normal approximation, stepped to the exact value."""
    k = np.floor(decided / 2 - stats.norm.isf(level / 2) * np.sqrt(decided) / 2)
    while (up := stats.binom.cdf(k + 1, decided, 0.5) <= level / 2).any():
        k = k + up
    while (down := (stats.binom.cdf(k, decided, 0.5) > level / 2) & (k >= 0)).any():
        k = k - down
    return k


def sign_test_power(items: np.ndarray, won: float, lost: float, level: float) -> np.ndarray:
    """Power of the two-sided exact binomial test at ``level`` over items won vs lost (ties left out), for
    each number of items: averaged over how many items are decided (within 8 SD of the mean: the rest
    weighs less than 1e-14)."""
    items = np.atleast_1d(items)
    decided_share, rate = won + lost, won / (won + lost)
    spans = []  # the numbers of decided items each size's sum weighs
    for n in items:
        spread = 8 * math.sqrt(n * decided_share * (1 - decided_share)) + 1
        spans.append((max(0, int(n * decided_share - spread)), min(n, int(n * decided_share + spread))))
    # critical counts once, for those numbers only: for every number up to a million items it took seconds a call
    first = min(low for low, _ in spans)
    k = _rejecting_count(np.arange(first, max(high for _, high in spans) + 1), level)
    out = []
    for n, (low, high) in zip(items, spans):
        decided = np.arange(low, high + 1)
        critical = k[low - first:high - first + 1]
        power = np.where(critical >= 0, stats.binom.cdf(critical, decided, rate)
                         + stats.binom.sf(decided - critical - 1, decided, rate), 0)
        out.append(float(np.sum(stats.binom.pmf(decided, n, decided_share) * power)))
    return np.array(out)


def fixed_items(votes: Votes, level: float = 0.05, power: float = 0.8, limit: int | None = None) -> int | None:
    """The fewest items whose exact sign test reaches ``power`` (at independent votes without ties: 786
    decided votes at 0.55, where the normal approximation says 782). Exact power is saw-toothed in n, so
    a few larger sizes can fall just short. None where more than ``limit`` items would be needed (the search's
    arrays grow with the items: nearly all ties or one verdict per item asked for billions)."""
    won, lost = votes.item_outcomes()

    def reaches(sizes):
        return sign_test_power(np.asarray(sizes), won, lost, level) >= power

    high = 16
    while not reaches([high])[0]:
        if limit is not None and high > limit:
            return None
        high *= 2
    low = high // 2 if high > 16 else 0  # bisect the (nearly monotone) power curve for a crossing
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if reaches([middle])[0] else (middle, high)
    # the saw-tooth can reach the power a little earlier than the crossing found: look just below it
    window = np.arange(max(1, high - (200 if high < 20000 else 20)), high + 1)
    return int(window[np.flatnonzero(reaches(window))[0]])


def pairwise_decisive_votes(win_rate: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Decisive (non-tie) independent votes for the exact two-sided binomial test of win rate 0.5 to reach
    ``power`` at ``win_rate`` (786 / 200 / 88 at 0.55 / 0.60 / 0.65)."""
    return fixed_items(Votes(win_rate), alpha, power)


def sm_turn_per_model(rate_a: float, rate_b: float, alpha: float = 0.05, power: float = 0.8,
                      turns_per_dialog: int = 1, icc: float = 0.0) -> float:
    """Turn judgments per model to tell SM-Turn success rates apart (1,376 for 0.70 vs 0.65 with
    independent turns), times the design effect of ``turns_per_dialog`` turns per conversation at
    within-conversation ``icc`` (1,927 at ICC 0.1 and 5 turns): the conversation-level test needs it."""
    size = samplesize_proportions_2indep_onetail(abs(rate_a - rate_b), min(rate_a, rate_b), power, alpha=alpha,
                                                 alternative="two-sided")
    return size * design_effect(icc, turns_per_dialog)


def sm_dialog_per_model(mean_a: float, mean_b: float, sd: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """Dialogues per model to tell SM-Dialog Likert means apart (325 for Smith's 4.19 vs 3.97, SD 1)."""
    return TTestIndPower().solve_power(effect_size=abs(mean_a - mean_b) / sd, alpha=alpha, power=power)


def sequential_items(votes: Votes, threshold: float, simulations: int = 400, cap: int = SEQUENTIAL_CAP,
                     seed: int = 0) -> dict[int, tuple[float, bool]]:
    """Percentiles of the items ``certify``'s rule needs to settle a pair: one outcome per item (the mean
    of its votes), the betting e-process looked at after every item, settled at ``threshold``
    (K(K-1)/alpha). Each percentile is (items, above): runs still open at ``cap`` items count as ``cap``,
    so a percentile that reads one of them is only a lower bound (``above`` True), not an estimate."""
    rng = np.random.default_rng(seed)
    stops = np.full(simulations, float(cap))
    settled = np.zeros(simulations, bool)
    for run in range(simulations):
        outcomes, block = np.empty(0), 250
        while len(outcomes) < cap:
            outcomes = np.concatenate([outcomes, votes.simulate_items(rng, min(block, cap - len(outcomes)))])
            hits = np.flatnonzero(wealth_paths(outcomes) >= threshold)
            if hits.size:
                stops[run], settled[run] = hits[0] + 1, True
                break
            block *= 2
    # open runs would settle later: a percentile that moves when they do depends on them
    later = np.where(settled, stops, 2.0 * cap)
    return {q: (float(np.percentile(stops, q)), bool(np.percentile(later, q) > np.percentile(stops, q)))
            for q in PERCENTILES}


def plan_pairwise(win_rates: list[float], tie_rate: float, costs: Costs, alpha: float = 0.05, power: float = 0.8,
                  models: int = 2, simulations: int = 400, votes_per_item: int = 1, icc: float = 0.0) -> pd.DataFrame:
    """Per assumed win rate, per model pair of a study of ``models`` models: the fixed design (exact sign
    test over items at alpha / (K(K-1)/2), Bonferroni over the pairs) and the sequential design
    (certify's threshold K(K-1)/alpha), each as items, votes, expected decisive votes and their cost.
    ``items_is``: "exact" (fixed), "simulated" (a sequential percentile) or "above N" where the simulations
    hit their cap first; those rows give no items or cost, as there is no estimate."""
    if not 0 <= tie_rate < 1:
        raise ValueError(f"tie rate must be in [0, 1), got {tie_rate}")
    if not 0 <= icc < 1:
        raise ValueError(f"ICC must be in [0, 1), got {icc}")
    if models < 2 or votes_per_item < 1:
        raise ValueError(f"need at least two models and one vote per item, got {models} and {votes_per_item}")
    pairs = models * (models - 1) // 2
    rows = []
    for rate in win_rates:
        if not 0.5 < rate < 1:
            raise ValueError(f"win rate must be above 0.5 and below 1, got {rate}")
        votes = Votes(rate, tie_rate, votes_per_item, icc)
        designs = {"fixed": {"n": (fixed_items(votes, alpha / pairs, power), "exact")},
                   "sequential": {f"p{q}": (np.nan, f"above {math.floor(items)}") if above else (items, "simulated")
                                  for q, (items, above) in sequential_items(
                                      votes, certification_threshold(models, alpha), simulations).items()}}
        for design, statistics in designs.items():
            for statistic, (items, items_is) in statistics.items():
                judged = items * votes_per_item
                rows.append({"protocol": "pairwise", "assumption": f"win rate {rate:.2f}", "design": design,
                             "statistic": statistic, "items": items, "items_is": items_is,
                             "votes_per_item": votes_per_item, "icc": icc,
                             "decisive_votes": judged * (1 - tie_rate), **costs.table(judged)})
    return pd.DataFrame(rows)


def plan_per_model(protocol: str, size: float, costs: Costs, assumption: str, judgments_per_unit: int = 1) -> dict:
    """One fixed-n row for a single-model protocol: ``size`` units per model (turns or dialogues)."""
    units = math.ceil(size)
    return {"protocol": protocol, "assumption": assumption, "design": "fixed", "statistic": "n",
            "units_per_model": units, **costs.table(units * judgments_per_unit)}


def assumptions_from_pilot(comparisons: pd.DataFrame, turn_ratings: pd.DataFrame,
                           dialog_ratings: pd.DataFrame) -> dict:
    """Planning assumptions measured on a pilot's export: per model pair the observed win rate of the
    better model among decided votes, the tie share, how votes cluster (median votes per item and median
    within-item ICC over the pairs, the clusters of parlai_dialeval.analysis.cluster_robust), median seconds
    per judgment, and for single-model protocols the two best models' SM-Turn success rates, turns per
    conversation and within-conversation ICC, and SM-Dialog Likert means with the pooled SD.
    Only what the pilot holds is returned; a pilot that cannot tell models apart raises ValueError."""
    found: dict = {}
    if len(comparisons):
        from parlai_dialeval.analysis.collection_order import cluster_outcomes, vote_clusters
        from parlai_dialeval.analysis.pairwise import SECTION, oriented, win_rates, with_sections

        sections = with_sections(comparisons)
        votes = oriented(sections)
        rates = win_rates(sections, by=SECTION)
        decided = rates[rates["wins_a"] + rates["wins_b"] > 0]
        if decided.empty:
            raise ValueError("the pilot's comparisons are all ties: no win rate to plan for")
        better = np.maximum(decided["win_rate_a"], 1 - decided["win_rate_a"]).to_numpy()
        if np.all(better >= 1):
            raise ValueError("every pilot pair was decided unanimously (no variance): a win rate of 1 cannot size "
                             "a study; give --win-rates instead")
        found["win_rates"] = sorted({round(float(r), 3) for r in better if 0.5 < r < 1}) or [0.55]
        found["tie_rate"] = float((votes.loc[~votes["auto"], "score"] == 0).mean())
        clusters = cluster_outcomes(vote_clusters(comparisons)[0])
        found["votes_per_item"] = max(1, int(round(float(clusters["votes"].median()))))
        icc = decided["icc"].dropna()
        if len(icc):
            found["icc"] = float(min(max(icc.median(), 0.0), 0.99))
        if "duration" in votes and votes["duration"].notna().any():
            found["seconds_per_judgment"] = float(votes["duration"].median())
    if len(turn_ratings):
        rates = turn_ratings.groupby("model")["value"].mean().sort_values(ascending=False)
        if len(rates) >= 2 and rates.iloc[0] != rates.iloc[1]:
            found["sm_turn_rates"] = [float(rates.iloc[0]), float(rates.iloc[1])]
            per_conversation = turn_ratings.groupby("conversation_id").size()
            found["turns_per_dialog"] = max(1, int(round(float(per_conversation.median()))))
            from parlai_dialeval.analysis.cluster_robust import icc_oneway

            icc = [icc_oneway(part["value"].to_numpy(), part["conversation_id"].to_numpy())
                   for _, part in turn_ratings.groupby("model")]
            icc = [value for value in icc if np.isfinite(value)]
            if icc:
                found["sm_turn_icc"] = float(min(max(np.median(icc), 0.0), 0.99))
    if len(dialog_ratings):
        means = dialog_ratings.groupby("model")["value"].mean().sort_values(ascending=False)
        sd = float(dialog_ratings.groupby("model")["value"].std().mean())
        if len(means) >= 2:
            if not sd > 0:
                raise ValueError("the pilot's SM-Dialog scores do not vary within a model (SD 0): no study size "
                                 "follows from them; give --sm-dialog-sd instead")
            found["sm_dialog_means"], found["sm_dialog_sd"] = [float(means.iloc[0]), float(means.iloc[1])], sd
    if not found:
        raise ValueError("the pilot holds no comparisons and no SM-Turn or SM-Dialog ratings of two models")
    return found
