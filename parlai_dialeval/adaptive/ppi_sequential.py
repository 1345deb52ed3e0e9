"""Anytime-valid prediction-powered tests of "model A beats model B": an e-process on the judge-rectified
outcome, valid at every look, with items for people drawn uniformly or actively (docs/ppi.md).

Setting: an LLM judge has answered every item of a pool of N items of one model pair (``f_i`` in [0, 1],
the judge's outcome for model A, its two orders averaged), so the pool mean ``fbar`` of its answers is
KNOWN. People judge items drawn with replacement from the pool, item i with probability ``p_i`` (uniform:
1/N; active: growing with the judge's uncertainty, never below ``floor``/N); a draw's outcome ``y`` is the
mean of its votes (one cluster, the rule of analysis/cluster_robust.py). The estimand is the pool's human win
rate mu = mean_i E[y_i]. With w = 1 / (N p_i), a weight ``lam`` and a constant ``c`` fixed before the draw,

    Z = c + lam * fbar + w * (y - lam * f_i - c)

has conditional mean mu whatever the judge (E_p[w g_i] is the pool mean of g; Zrnic and Candes, "Active
statistical inference", ICML 2024: the judge and the constant are control variates whose means are
known). ``c`` = 1/2 - lam fbar centres it (Z = 1/2 + w ((y - 1/2) - lam (f - fbar))), so the weight
multiplies only the deviations from the null, not the whole of y: without it, under active draws, the
spread of w times y's mean of about 0.6 is noise that the bets pay for. Z lies in
[lam fbar - lam / q + c (1 - 1/q), lam fbar + 1 / q + c (1 - 1/q)] for q = min_i N p_i (c in [-lam, 1]), and
under uniform draws (w = 1) it is lam fbar + y - lam f whatever c: variance Var(y - lam f), small when the
judge tracks people. Under H0: mu <= 1/2 the wealth
prod(1 + b_t (Z_t - 1/2)) with b_t in [0, 1 / (1/2 - low_t)] chosen from the past is a nonnegative
supermartingale, so by Ville's inequality it ever reaches 1/alpha with probability at most alpha
(the betting construction of Waudby-Smith and Ramdas, JRSS-B 2024; its aGRAPA bet, truncated at
``TRUNCATION`` of the largest safe bet, which adapts to Z's variance). ``lam_t`` is PPI++'s
variance-minimising weight (Angelopoulos, Duchi and Zrnic 2023) estimated from the past draws only,
clipped to [0, 1], 0 for the first ``WARMUP``.

The wealth is a mixture (an average of e-processes on one filtration is one): a share ``JUDGE_SHARE`` on
those judge bets, the rest on certify's human-only bets (parlai_dialeval.adaptive.sequential: half a grid
of fixed bets, half aGRAPA) on the judge-free outcome z0 = 1/2 + w (y - 1/2) (lam = 0, c = 1/2: its range
[1/2 - 1/(2q), 1/2 + 1/(2q)] is symmetric about the null; y itself under uniform draws). A useless judge then costs about
what today's certification needs (benchmarks/README.md, issue 30), a good one at most the halved start;
with uniform draws and ``use_judge=False`` the process is certify's own. Hand-written: no maintained
package bets on a rectified outcome (ppi_py's intervals hold for one look; confseq has no Python 3.11 wheel).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import cache

import numpy as np

NULL = 0.5
WARMUP = 10  # outcomes with lam = 0 before the weight is estimated (a slope from fewer is noise)
TRUNCATION = 0.5  # share of the largest safe bet the aGRAPA bet may take (Waudby-Smith and Ramdas' choice)
# active selection: every item's draw probability is at least FLOOR / N (lower floors cap the safe bets; docs/ppi.md)
FLOOR = 0.9
# share of the starting wealth on the judge's bets; the rest on certify's human-only bets (docs/ppi.md chose it)
JUDGE_SHARE = 0.5


@cache
def _certify_bets():
    """certify's grid of fixed bets and its wealth of grid and aGRAPA together (imported late:
    adaptive.sequential imports agrapa_bets)."""
    from parlai_dialeval.adaptive.sequential import BETS, combined_wealth

    return np.asarray(BETS, dtype=float), combined_wealth


def judge_uncertainty(f: np.ndarray) -> np.ndarray:
    """0 where the judge is sure (always A or always B), 1 where its answers split evenly (a flip across
    the two orders, a tie): 1 - |2 f - 1|."""
    return 1 - np.abs(2 * np.asarray(f, dtype=float) - 1)


def selection_probabilities(f: np.ndarray, floor: float = FLOOR) -> np.ndarray:
    """Draw probabilities over the pool (summing to 1): a share ``floor`` uniform, the rest in proportion
    to the judge's uncertainty, so N p_i >= floor for every item; uniform where the judge is sure of all."""
    if not 0 < floor <= 1:
        raise ValueError(f"floor={floor}: expected a share in (0, 1]")
    u = judge_uncertainty(f)
    n = len(u)
    if u.sum() <= 0:
        return np.full(n, 1 / n)
    return floor / n + (1 - floor) * u / u.sum()


def agrapa_bets(n, mean, var, low=0.0, high=1.0, null=NULL):
    """aGRAPA's bets on "mean above ``null``" and "below" after ``n`` past outcomes in [low, high] with that
    ``mean`` and ``var``iance (arrays broadcast): the edge over the variance, both shrunk towards (null, 1/4)
    by one pseudo-outcome, truncated at ``TRUNCATION`` of the largest bet that keeps wealth positive."""
    n, null = np.asarray(n, dtype=float), np.asarray(null, dtype=float)
    bet = _shrunk_bet(n, np.asarray(mean, dtype=float), np.asarray(var, dtype=float), null)
    with np.errstate(divide="ignore"):  # a null at the range's end: no cap on that side (inf)
        return (np.clip(bet, 0.0, TRUNCATION / (null - low)), np.clip(-bet, 0.0, TRUNCATION / (high - null)))


def agrapa_bet_pair(n: int, mean: float, var: float, low: float = 0.0, high: float = 1.0,
                    null: float = NULL) -> tuple[float, float]:
    """``agrapa_bets`` for one process, in floats: the same operations, so the same bits (a bet per draw in
    numpy took three quarters of ``RectifiedBetting.add``)."""
    bet = _shrunk_bet(n, mean, var, null)
    return min(max(bet, 0.0), _cap(null - low)), min(max(-bet, 0.0), _cap(high - null))


def _shrunk_bet(n, mean, var, null):
    """The edge over the variance, both shrunk towards (null, 1/4) by one pseudo-outcome (floats or arrays)."""
    mean = (null + n * mean) / (n + 1)
    var = (0.25 + n * var) / (n + 1)
    edge = mean - null
    return edge / (var + edge * edge)  # var >= 0.25 / (n + 1) > 0


def _cap(room: float) -> float:
    """TRUNCATION / room, infinite (of room's sign) where room is 0, as numpy divides."""
    return TRUNCATION / room if room else math.copysign(math.inf, room)


@dataclass
class RectifiedBetting:
    """The running e-processes of one pair for "A beats B" (mean above 1/2) and "B beats A" (below),
    fed one draw at a time: ``add(y, f, scaled)``, ``scaled`` = N p_i of the drawn item (1: uniform).
    ``pool_mean``: fbar; ``min_scaled``: min_i N p_i (1 for uniform draws). ``use_judge=False`` is the
    human-only process (certify's bets on z0); ``judge_share``: the wealth on the judge's bets;
    ``centred``: the constant control variate (False: c = 0, the process before 2026-11-25)."""

    pool_mean: float = 0.5
    min_scaled: float = 1.0
    use_judge: bool = True
    judge_share: float = JUDGE_SHARE
    centred: bool = True
    n: int = 0
    # sums over past draws of w y, w f, w^2 y^2, w^2 f y, w^2 f^2 (w = 1 / scaled)
    s_y: float = 0.0
    s_f: float = 0.0
    s_yy: float = 0.0
    s_fy: float = 0.0
    s_ff: float = 0.0
    # and of w, w^2, w^2 y, w^2 f: the centring constant's part of Z's moments
    s_w: float = 0.0
    s_ww: float = 0.0
    s_wwy: float = 0.0
    s_wwf: float = 0.0
    log_above: float = 0.0
    log_below: float = 0.0
    best_above: float = 1.0
    best_below: float = 1.0
    lam: float = 0.0
    # the human-only part: log-wealths of certify's grid bets and of aGRAPA, on w y
    log_grid_above: list = field(default_factory=list)
    log_grid_below: list = field(default_factory=list)
    log_people_above: float = 0.0
    log_people_below: float = 0.0

    def weight(self) -> float:
        """PPI++'s lam from the past: argmin Var(w (y - lam f)) with E[w f] = fbar known, in [0, 1]."""
        if not self.use_judge or self.n < WARMUP:
            return 0.0
        n, fbar = self.n, self.pool_mean
        var_f = self.s_ff / n - fbar ** 2
        if var_f <= 1e-12:
            return 0.0
        return min(max((self.s_fy / n - self.s_y / n * fbar) / var_f, 0.0), 1.0)

    def centre(self, lam: float) -> float:
        """The constant c of Z at weight lam: 1/2 - lam fbar (Z centred on the null), 0 uncentred."""
        return NULL - lam * self.pool_mean if self.centred else 0.0

    def _range(self, lam: float) -> tuple[float, float]:
        """Z's range at weight lam: w (y - lam f - c) spans [-(lam + c) / q, (1 - c) / q] for c in [-lam, 1]."""
        c, q = self.centre(lam), self.min_scaled
        shift = lam * self.pool_mean + c * (1 - 1 / q)  # written so that q = 1 gives the uncentred range exactly
        return shift - lam / q, shift + 1 / q

    def _moments(self, lam: float) -> tuple[float, float]:
        """Mean and variance of Z at weight lam over the past draws (0, 0 before any): those of
        lam fbar + w (y - lam f) + c (1 - w), the c terms written so that w = 1 leaves them exactly 0."""
        if self.n == 0:
            return 0.0, 0.0
        n, fbar, c = self.n, self.pool_mean, self.centre(lam)
        residual = (self.s_y - lam * self.s_f) / n
        var = (self.s_yy - 2 * lam * self.s_fy + lam ** 2 * self.s_ff) / n - residual ** 2
        if c:
            mean_w = self.s_w / n
            covariance = (self.s_wwy - lam * self.s_wwf) / n - residual * mean_w
            var += -2 * c * covariance + c * c * (self.s_ww / n - mean_w ** 2)
            residual += c * (1 - mean_w)
        return lam * fbar + residual, max(var, 0.0)

    def add(self, y: float, f: float, scaled: float = 1.0) -> float:
        """Bet on one draw (its outcome y, the judge's answer f, N p of its item); returns its Z."""
        if scaled < self.min_scaled - 1e-12:
            raise ValueError(f"a draw with N p = {scaled} below the declared minimum {self.min_scaled}")
        lam = self.weight()
        (low, high), (low0, high0) = self._range(lam), self._range(0.0)
        # one call for both processes' aGRAPA bets: the judge's (at lam) and people's (lam = 0, on z0)
        (mean, var), (mean0, var0) = self._moments(lam), self._moments(0.0)
        bet_above, bet_below = agrapa_bet_pair(self.n, mean, var, low, high)
        people_above, people_below = agrapa_bet_pair(self.n, mean0, var0, low0, high0)
        w = 1 / scaled
        z = lam * self.pool_mean + w * (y - lam * f) + (1 - w) * self.centre(lam)  # w = 1: exactly the uncentred Z
        self.log_above += math.log1p(bet_above * (z - NULL))
        self.log_below += math.log1p(-bet_below * (z - NULL))
        self._bet_people(w * y + (1 - w) * self.centre(0.0), low0, high0, people_above, people_below)
        self.best_above = max(self.best_above, self._wealth(self.log_above, self.log_grid_above, self.log_people_above))
        self.best_below = max(self.best_below, self._wealth(self.log_below, self.log_grid_below, self.log_people_below))
        self.n += 1
        self.s_y += w * y
        self.s_f += w * f
        self.s_yy += w * w * y * y
        self.s_fy += w * w * f * y
        self.s_ff += w * w * f * f
        self.s_w += w
        self.s_ww += w * w
        self.s_wwy += w * w * y
        self.s_wwf += w * w * f
        self.lam = lam
        return z

    def _bet_people(self, z0: float, low0: float, high0: float, people_above: float, people_below: float) -> None:
        """certify's human-only bets on the judge-free outcome z0 in [low0, high0] ([0, 1] under uniform
        draws): the grid (each side's bets capped where the range beyond [0, 1] would make them unsafe) and aGRAPA."""
        bets, _ = _certify_bets()
        if not self.log_grid_above:
            self.log_grid_above, self.log_grid_below = [0.0] * len(bets), [0.0] * len(bets)
        above = np.minimum(bets, TRUNCATION / (NULL - low0))
        below = np.minimum(bets, TRUNCATION / (high0 - NULL))
        self.log_grid_above = (np.log1p(above * (z0 - NULL)) + self.log_grid_above).tolist()
        self.log_grid_below = (np.log1p(-below * (z0 - NULL)) + self.log_grid_below).tolist()
        self.log_people_above += math.log1p(people_above * (z0 - NULL))
        self.log_people_below += math.log1p(-people_below * (z0 - NULL))

    def _wealth(self, log_judge: float, log_grid: list, log_people: float) -> float:
        """The mixture's wealth, each part capped below float overflow (far beyond any threshold)."""
        _, combined_wealth = _certify_bets()
        people = combined_wealth(np.asarray(log_grid), log_people)
        share = self.judge_share if self.use_judge else 0.0
        return share * math.exp(min(log_judge, 700.0)) + (1 - share) * people

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, state: dict) -> "RectifiedBetting":
        if state.get("n") and "log_grid_above" not in state:  # saved before the mixture: it goes on as it began
            state = {**state, "judge_share": 1.0}
        if state.get("n") and "centred" not in state:  # saved before the centring: it goes on uncentred
            state = {**state, "centred": False}
        return cls(**state)


def e_values(y: np.ndarray, f: np.ndarray, pool_mean: float, scaled: np.ndarray | None = None,
             min_scaled: float = 1.0, use_judge: bool = True, **options) -> RectifiedBetting:
    """The process after the draws (``y``, ``f``, ``scaled`` = N p per draw, in collection order); its
    ``best_above`` / ``best_below`` are the largest wealths of "mean above 1/2" and "below"; ``options``:
    RectifiedBetting's other fields (``judge_share``)."""
    process = RectifiedBetting(pool_mean=float(pool_mean), min_scaled=min_scaled, use_judge=use_judge, **options)
    scaled = np.ones(len(y)) if scaled is None else np.asarray(scaled, dtype=float)
    for values in zip(np.asarray(y, dtype=float).tolist(), np.asarray(f, dtype=float).tolist(), scaled.tolist()):
        process.add(*values)
    return process


def draws_to_settle(y: np.ndarray, f: np.ndarray, pool_mean: float, threshold: float,
                    scaled: np.ndarray | None = None, min_scaled: float = 1.0, use_judge: bool = True,
                    **options) -> int | None:
    """Draws until either direction's wealth reaches ``threshold`` (None: not within the draws given)."""
    process = RectifiedBetting(pool_mean=float(pool_mean), min_scaled=min_scaled, use_judge=use_judge, **options)
    scaled = np.ones(len(y)) if scaled is None else np.asarray(scaled, dtype=float)
    for t, values in enumerate(zip(np.asarray(y, dtype=float).tolist(), np.asarray(f, dtype=float).tolist(),
                                   scaled.tolist()), start=1):
        process.add(*values)
        if max(process.best_above, process.best_below) >= threshold:
            return t
    return None
