"""The anytime-valid PPI e-process (parlai_dialeval/adaptive/ppi_sequential.py): its rectified outcome is
unbiased for the people's pool win rate whatever the judge and the draw probabilities, its false-claim
rate stays within alpha under clustered nulls at every look, and a judge that tracks people settles a
pair with fewer human draws. The generator below is numpy only (beta items, 3 votes each, judges from
each item's true preference) and shares no code with the estimator; the full study is
benchmarks/bench_ppi_sequential.py."""
from __future__ import annotations

import numpy as np
import pytest

from parlai_dialeval.adaptive.ppi_sequential import (RectifiedBetting, draws_to_settle, e_values,
                                                     selection_probabilities)

VOTES = 3


def pool(rng, n, win_rate, icc, mirrored=False):
    """Items' probabilities that people prefer A; ``mirrored``: items in pairs h, 1 - h (win rate exactly 1/2)."""
    c = 1 / icc - 1
    h = rng.beta(win_rate * c, (1 - win_rate) * c, n // 2 if mirrored else n)
    return np.concatenate([h, 1 - h]) if mirrored else h


def judge(rng, h, kind):
    """The judge's mean answer over the two orders: "good" flips (1/2) on 30% and is right on 93% of the
    rest; "useless" the same with random sides; "position" says A on 70% of items whatever they hold."""
    right = (h > 0.5).astype(float)
    if kind == "position":
        return np.where(rng.random(len(h)) < 0.7, 1.0, right)
    side = np.where(rng.random(len(h)) < 0.93, right, 1 - right) if kind == "good" else (rng.random(len(h)) < 0.5)
    return np.where(rng.random(len(h)) < 0.3, 0.5, side * 1.0)


def draws(rng, h, f, p, count):
    items = rng.choice(len(h), count, p=p)
    y = (rng.random((count, VOTES)) < h[items, None]).mean(axis=1)
    return y, f[items], len(h) * p[items]


def test_selection_probabilities_keep_the_floor_and_favour_uncertain_items():
    f = np.array([1.0, 0.0, 0.5, 0.5, 1.0, 0.75, 0.0, 1.0])
    p = selection_probabilities(f, floor=0.6)
    assert p.sum() == pytest.approx(1.0)
    assert (len(f) * p).min() == pytest.approx(0.6)  # the sure items: exactly the floor
    # uncertainty 1 - |2f - 1|: 1 for the two flips, 1/2 for f = 0.75; 0.4 of the mass shared in that ratio
    assert p[2] == pytest.approx(0.6 / 8 + 0.4 * 1 / 2.5)
    assert p[5] == pytest.approx(0.6 / 8 + 0.4 * 0.5 / 2.5)
    assert np.allclose(selection_probabilities(np.array([1.0, 0.0, 1.0])), 1 / 3)
    with pytest.raises(ValueError):
        selection_probabilities(f, floor=0)


def test_rectified_outcome_averages_to_the_people_pool_mean_under_active_draws():
    rng = np.random.default_rng(1)
    h = pool(rng, 400, 0.62, 0.5)
    f = judge(rng, h, "position")  # a biased judge: the correction must remove its bias
    p = selection_probabilities(f, floor=0.5)
    y, fi, scaled = draws(rng, h, f, p, 20000)
    process = RectifiedBetting(pool_mean=float(f.mean()), min_scaled=float((len(h) * p).min()))
    z = np.array([process.add(*v) for v in zip(y, fi, scaled)])
    assert process.lam > 0.1  # the judge was used
    # the target is the pool's mean preference, computed here from the generator's h
    assert z.mean() == pytest.approx(h.mean(), abs=4 * z.std() / np.sqrt(len(z)))
    assert abs(fi.mean() - h.mean()) > 0.05  # unlike the judge's answers on the drawn items


@pytest.mark.parametrize("kind", ["good", "position"])
@pytest.mark.parametrize("active", [False, True])
def test_false_claims_stay_within_alpha_under_clustered_nulls(kind, active):
    rng = np.random.default_rng(7)
    runs, alpha = 200, 0.05
    claims = 0
    for _ in range(runs):
        h = pool(rng, 600, 0.5, 0.5, mirrored=True)
        f = judge(rng, h, kind)
        p = selection_probabilities(f, floor=0.5) if active else np.full(len(h), 1 / len(h))
        y, fi, scaled = draws(rng, h, f, p, 300)
        process = e_values(y, fi, f.mean(), scaled, float((len(h) * p).min()))
        claims += process.best_above >= 1 / alpha  # "A beats B" ever claimed, at any of the 300 looks
    assert claims / runs <= alpha + 2 * np.sqrt(alpha * (1 - alpha) / runs)


def test_a_judge_that_tracks_people_settles_sooner_and_a_useless_one_costs_little():
    rng = np.random.default_rng(3)
    found = {"good": [], "useless": [], "people only": []}
    for _ in range(40):
        h = pool(rng, 2000, 0.6, 0.8)  # people agree a lot within an item (ICC 0.8)
        items_f = {kind: judge(rng, h, kind) for kind in ("good", "useless")}
        items = rng.choice(len(h), 3000)  # the same human draws for every method
        y = (rng.random((3000, VOTES)) < h[items, None]).mean(axis=1)
        for kind, f in items_f.items():
            found[kind].append(draws_to_settle(y, f[items], f.mean(), 240) or 3000)
        found["people only"].append(draws_to_settle(y, np.zeros(3000), 0.0, 240, use_judge=False) or 3000)
    median = {k: np.median(v) for k, v in found.items()}
    assert median["good"] < 0.8 * median["people only"]
    assert median["useless"] <= 1.1 * median["people only"]  # people only: certify's own bets (1.06 here)


def test_the_bets_are_waudby_smith_and_ramdas_agrapa_by_hand():
    """y = 1, 1, 0 without a judge. Draw 1: no past, edge 0, no bet. Draw 2: past mean 1, variance 0, shrunk by
    one pseudo-draw (1/2, 1/4) to 0.75 and 0.125: bet 0.25 / (0.125 + 0.0625) = 4/3, capped at half the largest
    safe bet 0.5 / (1/2 - 0) = 1: wealth 1 + 1 * (1 - 1/2) = 1.5. Draw 3: mean (0.5 + 2) / 3, variance 0.25 / 3,
    bet capped at 1 again: wealth 1.5 * (1 + (0 - 1/2)) = 0.75. "Below" never bets (its edge is negative)."""
    process = e_values(np.array([1.0, 1.0, 0.0]), np.zeros(3), 0.0, judge_share=1.0)  # the judge's bets alone
    assert process.best_above == pytest.approx(1.5)
    assert np.exp(process.log_above) == pytest.approx(0.75)
    assert process.best_below == 1.0 and process.log_below == 0.0


def test_a_draws_bets_in_floats_are_the_vectorised_bets_bit_for_bit():
    """RectifiedBetting.add bets in floats (agrapa_bet_pair), the paths in arrays (agrapa_bets): the same numbers,
    to the last bit, including a null at the range's end (no cap on that side) and no past at all."""
    from parlai_dialeval.adaptive.ppi_sequential import agrapa_bet_pair, agrapa_bets

    rng = np.random.default_rng(4)
    n = np.concatenate([[0, 0, 3], rng.integers(0, 500, 200)])
    mean, var = rng.random(len(n)), rng.random(len(n)) / 4
    low = np.concatenate([[0.5, 0.0, -1.3], -rng.random(len(n) - 3)])
    high = np.concatenate([[1.0, 0.5, 2.1], 1 + rng.random(len(n) - 3)])
    above, below = agrapa_bets(n, mean, var, low, high)
    pairs = [agrapa_bet_pair(int(k), float(m), float(v), float(lo), float(hi))
             for k, m, v, lo, hi in zip(n, mean, var, low, high)]
    assert [a for a, _ in pairs] == above.tolist() and [b for _, b in pairs] == below.tolist()
    assert all(isinstance(a, float) and isinstance(b, float) for a, b in pairs)


def test_without_a_judge_it_is_certify_and_a_judge_without_spread_gets_half_of_it():
    """use_judge=False on uniform draws is certify's e-process (adaptive/sequential.py's vectorised paths, a
    separate implementation); a judge without spread gets lam 0, so the mixture is half aGRAPA on people's
    outcomes (the judge's part at lam 0) and half certify's bets."""
    from parlai_dialeval.adaptive.sequential import agrapa_paths, e_value, wealth_paths

    rng = np.random.default_rng(5)
    y = rng.integers(0, 4, 200) / 3
    alone = e_values(y, np.zeros(200), 0.0, use_judge=False)
    assert alone.best_above == pytest.approx(e_value(y))
    assert alone.best_below == pytest.approx(e_value(1 - y))
    with_judge = e_values(y, np.full(200, 0.7), 0.7)
    assert with_judge.lam == 0.0
    half = 0.5 * agrapa_paths(y, sign=-1) + 0.5 * wealth_paths(y, sign=-1)
    assert with_judge.best_below == pytest.approx(max(1.0, half.max()))
    # the saved state resumes the same process
    resumed = RectifiedBetting.from_json(e_values(y[:100], np.full(100, 0.7), 0.7).to_json())
    for value in y[100:]:
        resumed.add(value, 0.7)
    assert resumed.best_above == pytest.approx(with_judge.best_above)
    assert resumed.best_below == pytest.approx(with_judge.best_below)
    # a launch saved before the mixture existed goes on with the judge's bets alone, as it began
    saved = {k: v for k, v in e_values(y[:100], np.full(100, 0.7), 0.7).to_json().items()
             if k not in ("log_grid_above", "log_grid_below", "log_people_above", "log_people_below", "judge_share")}
    assert RectifiedBetting.from_json(saved).judge_share == 1.0


def test_a_state_saved_before_the_centring_resumes_uncentred():
    """Under active draws (where centring changes Z) a launch saved without the centring's fields goes on
    exactly as the uncentred process that saw every draw."""
    rng = np.random.default_rng(4)
    h = pool(rng, 400, 0.6, 0.3)
    f = judge(rng, h, "good")
    p = selection_probabilities(f, floor=0.5)
    y, fi, scaled = draws(rng, h, f, p, 200)
    q = float((len(h) * p).min())
    whole = e_values(y, fi, f.mean(), scaled, q, centred=False)
    saved = {k: v for k, v in e_values(y[:100], fi[:100], f.mean(), scaled[:100], q, centred=False).to_json().items()
             if k not in ("centred", "s_w", "s_ww", "s_wwy", "s_wwf")}
    resumed = RectifiedBetting.from_json(saved)
    for values in zip(y[100:], fi[100:], scaled[100:]):
        resumed.add(*values)
    assert resumed.centred is False
    assert (resumed.best_above, resumed.best_below) == pytest.approx((whole.best_above, whole.best_below))
    assert whole.best_above != pytest.approx(e_values(y, fi, f.mean(), scaled, q).best_above)  # centring mattered


def test_a_draw_below_the_declared_floor_is_refused():
    process = RectifiedBetting(pool_mean=0.5, min_scaled=0.5)
    with pytest.raises(ValueError):
        process.add(1.0, 1.0, 0.25)


def test_the_centred_outcome_is_the_null_plus_weighted_deviations_and_stays_in_its_range():
    """Z = 1/2 + w ((y - 1/2) - lam (f - fbar)) (c = 1/2 - lam fbar), recomputed here from each draw's
    recorded lam; its range, by enumerating the corners y, f in {0, 1} and w in {1/q, 1/Q} (Q = max N p),
    holds every corner and reaches the smallest and largest of them."""
    rng = np.random.default_rng(2)
    h = pool(rng, 500, 0.6, 0.3)
    f = judge(rng, h, "good")
    p = selection_probabilities(f, floor=0.5)
    y, fi, scaled = draws(rng, h, f, p, 300)
    q, fbar = float((len(h) * p).min()), float(f.mean())
    process = RectifiedBetting(pool_mean=fbar, min_scaled=q)
    for values in zip(y, fi, scaled):
        z = process.add(*values)
        expected = 0.5 + ((values[0] - 0.5) - process.lam * (values[1] - fbar)) / values[2]
        assert z == pytest.approx(expected, abs=1e-12)
    assert process.lam > 0.1
    corners = [process.lam * fbar + (0.5 - process.lam * fbar) + w * (yy - process.lam * ff - 0.5 + process.lam * fbar)
               for yy in (0, 1) for ff in (0, 1) for w in (1 / q, 1 / float((len(h) * p).max()))]
    low, high = process._range(process.lam)
    assert low == pytest.approx(min(corners)) and high == pytest.approx(max(corners))


def test_centring_saves_draws_with_a_useless_judge_under_active_draws():
    """A useless judge, floor 0.5 (items the judge is sure of weigh 2, its flips about 0.46), people's win
    rate 0.6: uncentred, the weight multiplies the whole of y (mean 0.6) and the bets pay for that spread;
    centred it multiplies only y - 1/2. On the same seeded draws the centred process settles sooner
    (medians 282 against 428 draws when this test was written)."""
    rng = np.random.default_rng(11)
    found = []
    for _ in range(30):
        h = pool(rng, 1000, 0.6, 0.5)
        f = judge(rng, h, "useless")
        p = selection_probabilities(f, floor=0.5)
        y, fi, scaled = draws(rng, h, f, p, 3000)
        q = float((len(h) * p).min())
        found.append([draws_to_settle(y, fi, f.mean(), 240, scaled, q, centred=centred) or 3000
                      for centred in (False, True)])
    uncentred, centred = np.median(found, axis=0)
    assert centred < 0.8 * uncentred
