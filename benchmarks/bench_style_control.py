"""Style control (issue 43): recovery of known strengths under a length bias, the ChatEval A/B ranking with
and without style control, and the cost on a million votes against the plain Bradley-Terry fit of the
same votes (bradley_terry.bootstrap without rounds: the plain fit) measured in the same run.

    .venv/bin/python benchmarks/bench_style_control.py [--votes 1000000] [--models 200] [--skip-chateval]

Results in benchmarks/README.md ("Style control"). The simulation's generator shares no code with the
estimator: voters add 1.2 x log(length ratio) to the log-odds, a different form from the estimator's
(a - b) / (a + b + 1) feature; the worse a model, the longer it talks.
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from parlai_dialeval.analysis import bradley_terry, style_control  # noqa: E402

WORDS = np.array([" ".join(["word"] * k) for k in range(401)], dtype=object)


def simulate(n_votes: int, n_models: int, seed: int, bias: float = 1.2, form: str = "log ratio"):
    """Votes with a length bias of ``form``: "log ratio" (bias x log(a / b), not the estimator's feature) or
    "lmarena" (3 x bias x (a - b) / (a + b + 1), the estimator's own form: then its model is the truth)."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(1.0, -1.0, n_models)
    mean_words = np.linspace(8, 60, n_models)
    a = rng.integers(0, n_models, n_votes)
    b = (a + rng.integers(1, n_models, n_votes)) % n_models
    len_a = np.clip(rng.normal(mean_words[a], mean_words[a] / 4), 1, 400).astype(int)
    len_b = np.clip(rng.normal(mean_words[b], mean_words[b] / 4), 1, 400).astype(int)
    style = np.log(len_a / len_b) if form == "log ratio" else 3 * (len_a - len_b) / (len_a + len_b + 1)
    p = 1 / (1 + np.exp(-(strength[a] - strength[b] + bias * style)))
    # no ties: a tie counted as half a win shrinks the strengths the fit sees, and the truth must be its scale
    choice = np.where(rng.random(n_votes) < p, "a", "b")
    names = np.array([f"m{k:03d}" for k in range(n_models)], dtype=object)
    votes = pd.DataFrame({"item_id": (np.arange(n_votes) // 3).astype(str), "worker_id": "w", "model_a": names[a],
                          "model_b": names[b], "choice": choice, "response_a": WORDS[len_a],
                          "response_b": WORDS[len_b]})
    return votes, pd.Series(strength - strength.mean(), index=names)


def recovery(sizes=(3000, 30000), seeds=range(5)) -> pd.DataFrame:
    from scipy import stats

    rows = []
    for form, n in ((form, n) for form in ("log ratio", "lmarena") for n in sizes):
        for seed in seeds:
            votes, truth = simulate(n, 8, seed, form=form)
            table = style_control.pairwise_style_control(votes, features=("length",)).rankings.set_index("model")
            table = table.loc[truth.index]
            for kind in ("raw", "style"):
                low, high = table[f"{kind}_ci_low"], table[f"{kind}_ci_high"]
                rows.append({"bias": form, "votes": n, "seed": seed, "fit": kind,
                             "rmse": float(np.sqrt(np.mean((table[f"bt_{kind}"] - truth) ** 2))),
                             "kendall_tau": float(stats.kendalltau(table[f"bt_{kind}"], truth).statistic),
                             "coverage": float(((low <= truth) & (truth <= high)).mean())})
    return pd.DataFrame(rows).groupby(["bias", "votes", "fit"], sort=False)[["rmse", "kendall_tau", "coverage"]].mean().reset_index()


def chateval() -> pd.DataFrame:
    from parlai_dialeval.importers import load
    from parlai_dialeval.shared_data import shared_data_dir

    data = load([shared_data_dir() / "chateval" / "amt_ab_2018"], log=None)
    result = style_control.pairwise_style_control(data.comparisons)
    print(result.coefficients[["covariate", "coefficient", "ci_low", "ci_high", "sentence"]].to_string(index=False))
    return result.rankings


def speed(n_votes: int, n_models: int) -> dict:
    from parlai_dialeval.analysis.pairwise import with_sections

    votes = with_sections(simulate(n_votes, n_models, seed=0)[0])  # analyze_pairwise adds them before either
    started = time.perf_counter()
    bradley_terry.bootstrap(bradley_terry.encode(votes), rounds=0)
    baseline = time.perf_counter() - started
    started = time.perf_counter()
    style_control.pairwise_style_control(votes)
    controlled = time.perf_counter() - started
    return {"votes": n_votes, "models": n_models, "baseline_s": round(baseline, 1), "style_s": round(controlled, 1),
            "ratio": round(controlled / baseline, 1),
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20, 2)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--skip-chateval", action="store_true")
    args = parser.parse_args()
    print(recovery().to_string(index=False, float_format="{:.3f}".format))
    if not args.skip_chateval:
        print(chateval().to_string(index=False, float_format="{:.3f}".format))
    print(speed(args.votes, args.models))


if __name__ == "__main__":
    main()
