"""Benchmark: what an LLM judge buys through PPI++ on the real ChatEval A/B votes (issue 30).

Simulated judges of known quality (agreement with each prompt's majority vote 50%, 65%, 80%, 90%,
and a position-biased judge; parlai_dialeval.adaptive.ppi_simulation says how they are drawn) on the
20 ChatEval 2018 comparisons (../shared/data/chateval/amt_ab_2018, 3 real votes per prompt). For
each judge:
  coverage  share of --repetitions studies (people judge as many prompts as the comparison has, drawn
            with replacement, or half as many; the judge alone judges --pool times as many) whose 95%
            PPI++ interval, clustered by prompt, holds the comparison's vote share (target >= 0.94),
            next to the human-only interval's on the same studies;
  needed    prompts people must judge for the mean PPI interval to be as narrow as the mean
            human-only interval of a full study (all the comparison's prompts), as a share of that
            full study; the median over the 20 comparisons (targets: <= 0.5 at 80%, <= 1.05 useless).
The same run prints, per comparison, the best share any judge could reach (a judge that knew each
prompt's true preference, endless pool): the baseline the simulated judges are measured against.
Usage: .venv/bin/python benchmarks/bench_ppi.py [--repetitions 1000] [--width-repetitions 40] [--pool 5]
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np
from tqdm import tqdm

from parlai_dialeval.adaptive import ppi_simulation as sim
from parlai_dialeval.importers import load
from parlai_dialeval.shared_data import shared_data_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=1000)
    parser.add_argument("--width-repetitions", type=int, default=30)
    parser.add_argument("--pool", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.time()
    comparisons = sim.comparisons_from(load([shared_data_dir() / "chateval" / "amt_ab_2018"]).comparisons)
    shares = np.round(np.arange(0.3, 1.31, 0.1), 2)
    best = [sim.best_possible_share(c) for c in comparisons]
    print(f"{len(comparisons)} ChatEval comparisons, {sum(len(c.votes) for c in comparisons)} prompts; "
          f"judge pool {args.pool:g}x the full study; machine: {platform.machine()}, {os.cpu_count()} cores")
    print(f"best share any judge could reach (perfect knowledge of each prompt): median {np.median(best):.2f} "
          f"[{min(best):.2f}-{max(best):.2f}]")
    print(f"{'':16} {'full-size study':^26} {'half-size study':^26}")
    print(f"{'judge':16} {'coverage':>8} {'human-only':>10} {'weight':>6} {'coverage':>8} {'human-only':>10} "
          f"{'weight':>6} {'needed (median)':>16} {'[min-max]':>12}")
    for i, (name, judge) in enumerate(sim.JUDGES.items()):
        full = sim.coverage(comparisons, judge, args.repetitions, 1.0, args.pool, args.seed + i)
        half = sim.coverage(comparisons, judge, args.repetitions, 0.5, args.pool, args.seed + 50 + i)
        rng = np.random.default_rng(args.seed + 100 + i)
        needed = [sim.human_share_needed(c, judge, shares, args.width_repetitions, args.pool, rng)
                  for c in tqdm(comparisons, desc=name, leave=False)]
        print(f"{name:16} " + " ".join(f"{c['coverage']:8.3f} {c['human_coverage']:10.3f} {c['median_weight']:6.2f}"
                                        for c in (full, half))
              + f" {np.nanmedian(needed):15.2f}x {np.nanmin(needed):5.2f}-{np.nanmax(needed):.2f}"
              + (f" ({int(np.isnan(needed).sum())} beyond {shares[-1]}x)" if np.isnan(needed).any() else ""))
    print(f"{args.repetitions} coverage repetitions per judge (Monte-Carlo SE near 0.95: "
          f"{np.sqrt(0.95 * 0.05 / args.repetitions):.3f}); {args.width_repetitions} studies per grid point; "
          f"{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
