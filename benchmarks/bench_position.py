"""Position effects per model (issue 54): on simulated studies whose models gain differently from being shown
first, the per-model effects are recovered and the strengths net of position are unbiased, where the plain
fit (which ignores the side) is biased; both printed, with the fit's cost against the plain fit's in the same run.

    .venv/bin/python benchmarks/bench_position.py [--studies 100] [--votes 6000] [--models 8]

Results in benchmarks/README.md ("Position effects per model"). The generator shares no code with the estimator:
each item is a pair shown in a random order to three workers; on half the items the three copy one draw (the
item decides), on the others they vote independently: votes are clustered by item as in real studies, while each
vote's probability stays the model's (an item effect on the log-odds would shrink the truth itself).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from parlai_dialeval.analysis import bradley_terry, position  # noqa: E402


def study(n_votes: int, strengths: np.ndarray, own: np.ndarray, shared: float, seed: int) -> bradley_terry.Votes:
    rng = np.random.default_rng(seed)
    m, items = len(strengths), n_votes // 3
    pairs = np.argsort(rng.random((items, m)), axis=1)[:, :2]  # random pair, random order
    first, second, item = np.repeat(pairs[:, 0], 3), np.repeat(pairs[:, 1], 3), np.repeat(np.arange(items), 3)
    logit = strengths[first] - strengths[second] + shared + own[first]
    draw = np.where(np.repeat(rng.random(items) < 0.5, 3), np.repeat(rng.random(items), 3), rng.random(len(first)))
    won = (draw < 1 / (1 + np.exp(-logit))).astype(float)
    # clusters as bradley_terry.cluster_codes numbers them: a model pair's votes on one item
    return bradley_terry.Votes([f"m{k}" for k in range(m)], first, second, won, item)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=100)
    parser.add_argument("--votes", type=int, default=6000)
    parser.add_argument("--models", type=int, default=8)
    args = parser.parse_args(argv)
    m = args.models
    strengths = np.linspace(0.8, -0.8, m)
    own = np.resize([0.8, -0.6, 0.4, -0.2, 0.0, 0.6, -0.8, 0.2], m)  # each model's extra gain when shown first
    shared, truth = 0.3, strengths - strengths.mean()
    net, plain, covered, effects, effect_covered, plain_s, net_s = [], [], [], [], [], 0.0, 0.0
    for seed in range(args.studies):
        votes = study(args.votes, strengths, own, shared, seed)
        start = time.process_time()
        bradley_terry.fit(votes)
        plain_s += time.process_time() - start
        start = time.process_time()
        fit = position.position_fit(votes)
        net_s += time.process_time() - start
        net.append(fit.strengths)
        plain.append(fit.plain)
        covered.append((fit.strength_low <= truth) & (truth <= fit.strength_high))
        effects.append(fit.effects)
        effect_covered.append((fit.effect_low <= shared + own) & (shared + own <= fit.effect_high))
    net, plain, effects = np.array(net), np.array(plain), np.array(effects)
    print(f"{args.studies} studies x {args.votes} votes (items of 3 clustered votes), {m} models, shared effect "
          f"{shared}, own effects {own.tolist()}")
    print("model  true   plain_bias  net_bias  net_coverage  effect_true  effect_est  effect_coverage")
    for k in range(m):
        print(f"m{k}    {truth[k]:+.2f}  {np.mean(plain[:, k]) - truth[k]:+.3f}       "
              f"{np.mean(net[:, k]) - truth[k]:+.3f}    {np.mean(np.array(covered)[:, k]):.2f}          "
              f"{shared + own[k]:+.2f}        {np.mean(effects[:, k]):+.3f}      "
              f"{np.mean(np.array(effect_covered)[:, k]):.2f}")
    print(f"largest |bias|: plain {np.max(np.abs(plain.mean(0) - truth)):.3f}, net of position "
          f"{np.max(np.abs(net.mean(0) - truth)):.3f}; RMSE plain {np.sqrt(np.mean((plain - truth) ** 2)):.3f}, "
          f"net {np.sqrt(np.mean((net - truth) ** 2)):.3f}; coverage of the net strengths' 95% intervals "
          f"{np.mean(covered):.3f}, of the position effects' {np.mean(effect_covered):.3f}")
    print(f"CPU: position fit {net_s:.2f} s (with its plain fit), plain fit {plain_s:.2f} s: "
          f"ratio {net_s / plain_s:.1f}")


if __name__ == "__main__":
    main()
