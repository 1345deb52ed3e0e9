"""Calibration with clustered votes (issue 25): false-claim rates under the null and interval coverage
under alternatives, for `dialeval certify`, the win-rate tests and intervals and the Bradley-Terry
bootstrap of `analyze_pairwise`, the PW-Turn test by conversation, `dialeval plan`'s sequential
medians against certify's rule, workers with a taste for one model (part ``workers``), the power of the
test by prompt against the cluster-robust one (``power``), and analyze_single_model's tests and intervals
with ratings clustered by conversation and worker (``single_model``, studies from
parlai_dialeval.testing.clustered_ratings, also free of project code).

Studies come from parlai_dialeval.testing.clustered_votes (beta-binomial votes per item, no project
code). Every A/B pair is judged on its own 200 prompts, 3 votes per prompt, 20% ties, in random order;
PW-Turn: 200 conversations per pair, 5 turns each. "ICC" is the intraclass correlation of decided votes
within an item. Each row prints the rate, its Monte-Carlo standard error (SE) and the bound it must keep
(alpha + 2 SE for false claims, 1 - alpha - 2 SE for coverage). Reference rows ("per vote") run the same
data through the old rule, every vote independent, to show what clustering does to it.

Usage: .venv/bin/python benchmarks/calibrate_clustered.py [--studies 1000] [--k12-studies 1000]
       [--coverage-studies 200] [--seed 2025]
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import time

import numpy as np
import pandas as pd
from scipy import stats
from tqdm import tqdm

from parlai_dialeval.adaptive import planner
from parlai_dialeval.adaptive.certification import certify, pair_outcomes
from parlai_dialeval.adaptive.sequential import certification_threshold, e_value, wealth_paths
from parlai_dialeval.analysis import pairwise, rankings, single_model
from parlai_dialeval.testing.clustered_ratings import likert_mean, sm_study, wta_rate
from parlai_dialeval.testing.clustered_votes import clustered_study

ALPHA = 0.05
ROWS: list[tuple] = []


def row(what: str, studies: int, rate: float, bound_kind: str, seed: int) -> None:
    se = math.sqrt(max(rate * (1 - rate), 1e-12) / studies)
    if bound_kind == "false claims":
        target = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / studies)
        ok = rate <= target
    elif bound_kind == "coverage":
        target = 1 - ALPHA - 2 * math.sqrt(ALPHA * (1 - ALPHA) / studies)
        ok = rate >= target
    else:  # a reference row: no bound, shown for contrast
        target, ok = float("nan"), None
    ROWS.append((what, studies, seed, rate, se, target, "" if ok is None else ("yes" if ok else "NO")))
    print(f"{what}: {rate:.4f} (SE {se:.4f}) over {studies} studies, seed {seed}", flush=True)


def per_vote_claim(study, models: int) -> bool:
    """The old rule for contrast: every vote one bet, in file order."""
    threshold = certification_threshold(models, ALPHA)
    frame = pairwise.oriented(study)
    y = (frame["score"] + 1) / 2
    return any(max(e_value(part.to_numpy()), e_value(1 - part.to_numpy())) >= threshold
               for _, part in y.groupby([frame["first"], frame["second"]], sort=False))


def certify_null(models: int, icc: float, studies: int, seed: int, reference: bool) -> None:
    rng = np.random.default_rng(seed)
    claims, vote_claims = 0, 0
    bar = tqdm(range(studies), desc=f"certify null K={models} ICC={icc}", mininterval=30)
    for _ in bar:
        study = clustered_study(rng, models=models, items_per_pair=200, votes_per_item=3, icc=icc, tie_rate=0.2)
        claims += certify(study, ALPHA, intervals=False)["certified_winner"].notna().any()
        if reference:
            vote_claims += per_vote_claim(study, models)
        bar.set_postfix(claims=int(claims), per_vote=int(vote_claims), refresh=False)
    row(f"certify, {models} equal models, ICC {icc}: studies with any claim", studies, claims / studies,
        "false claims", seed)
    if reference:
        row("  per vote (old rule), same studies", studies, vote_claims / studies, "reference", seed)


def certify_coverage(studies: int, seed: int) -> None:
    # win rate 0.6 among decided votes, 20% ties: a cluster's mean outcome has mean 0.2 * 0.5 + 0.8 * 0.6
    rng, truth, covered = np.random.default_rng(seed), 0.58, 0
    for _ in tqdm(range(studies), desc="certify coverage", leave=False):
        study = clustered_study(rng, models=2, icc=0.3, tie_rate=0.2, win_rates={(0, 1): 0.6})
        pair = certify(study, ALPHA).iloc[0]
        rate = truth if pair["model_a"] == "m0" else 1 - truth
        covered += pair["cs_low"] <= rate <= pair["cs_high"]
    row("certify interval (valid at every look), win rate 0.6, ICC 0.3: coverage", studies, covered / studies,
        "coverage", seed)


def win_rate_tests(icc: float, studies: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    rejected, vote_rejected = 0, 0
    for _ in tqdm(range(studies), desc=f"win-rate test ICC={icc}", leave=False):
        study = clustered_study(rng, models=2, icc=icc, tie_rate=0.2)
        rates = pairwise.win_rates(study).iloc[0]
        rejected += rates["p_value"] < ALPHA
        vote_rejected += stats.binomtest(int(rates["wins_a"]), int(rates["wins_a"] + rates["wins_b"])).pvalue < ALPHA
    row(f"analyze_pairwise binomial test by prompt, equal models, ICC {icc}: p < 0.05", studies,
        rejected / studies, "false claims", seed)
    row("  per vote (old rule), same studies", studies, vote_rejected / studies, "reference", seed)


def win_rate_coverage(icc: float, studies: int, seed: int) -> None:
    rng, covered, bt_covered = np.random.default_rng(seed), 0, 0
    # Bradley-Terry with two models and ties as half wins: strength of m0 = logit(mean outcome) / 2
    bt_truth = math.log(0.58 / 0.42) / 2
    for _ in tqdm(range(studies), desc=f"win-rate coverage ICC={icc}", leave=False):
        study = pairwise.with_sections(clustered_study(rng, models=2, icc=icc, tie_rate=0.2,
                                                       win_rates={(0, 1): 0.6}))
        rates = pairwise.win_rates(study).iloc[0]
        rate = 0.6 if rates["model_a"] == "m0" else 0.4
        covered += rates["ci_low"] <= rate <= rates["ci_high"]
        ranked = rankings.rankings(study, rounds=200, seed=0).set_index("model")
        bt_covered += ranked.loc["m0", "bt_ci_low"] <= bt_truth <= ranked.loc["m0", "bt_ci_high"]
    row(f"analyze_pairwise Wilson interval, win rate 0.6, ICC {icc}: coverage", studies, covered / studies,
        "coverage", seed)
    row(f"analyze_pairwise Bradley-Terry bootstrap (200 rounds), ICC {icc}: coverage", studies,
        bt_covered / studies, "coverage", seed)


def conversation_test(icc: float, studies: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    rejected, turn_rejected = 0, 0
    for _ in tqdm(range(studies), desc=f"PW-Turn ICC={icc}", leave=False):
        study = clustered_study(rng, models=2, votes_per_item=5, icc=icc, tie_rate=0.2, per_turn=True)
        tests = pairwise.conversation_tests(study).iloc[0]
        rejected += tests["p_conversations"] < ALPHA
        turn_rejected += tests["p_turns"] < ALPHA
    row(f"PW-Turn test by conversation, equal models, ICC {icc}: p < 0.05", studies, rejected / studies,
        "false claims", seed)
    row("  per turn (Smith App. F), same studies", studies, turn_rejected / studies, "reference", seed)


def planner_check(studies: int, seed: int) -> None:
    """`dialeval plan`'s sequential median against certify's rule run on independently generated votes
    (its per-item outcomes, pair_outcomes, and its wealth against K(K-1)/alpha), items arriving whole."""
    for models, rate, votes_per_item, icc in ((2, 0.60, 3, 0.13), (8, 0.65, 3, 0.3)):
        votes = planner.Votes(rate, 0.2, votes_per_item, icc)
        threshold = certification_threshold(models, ALPHA)
        planned = planner.sequential_items(votes, threshold, simulations=1000, seed=seed)
        rng, cap, stops = np.random.default_rng(seed), 3000, []
        for _ in tqdm(range(studies), desc=f"planner K={models}", mininterval=30):
            study = clustered_study(rng, models=2, items_per_pair=cap, votes_per_item=votes_per_item, icc=icc,
                                    tie_rate=0.2, win_rates={(0, 1): rate})
            first_seen = {item: i for i, item in enumerate(pd.unique(study["item_id"]))}
            study = study.iloc[np.argsort(study["item_id"].map(first_seen).to_numpy(), kind="stable")]
            pair = pair_outcomes(study).iloc[0]
            better = pair["outcomes"] if pair["model_a"] == "m0" else 1 - pair["outcomes"]  # m0 is the better
            hits = np.flatnonzero(wealth_paths(better) >= threshold)
            stops.append(hits[0] + 1 if hits.size else cap)
        stops = np.array(stops, dtype=float)
        boot = np.std([np.median(rng.choice(stops, len(stops))) for _ in range(1000)])
        planned_se = 1.2533 * (planned[80] - planned[50]) / 0.8416 / math.sqrt(1000)
        error = math.hypot(boot, planned_se)
        line = (f"plan, K={models}, win rate {rate}, {votes_per_item} votes per item, ICC {icc}: median items "
                f"planned {planned[50]:.0f} (1000 runs) vs certify's rule {np.median(stops):.0f} ({studies} studies), "
                f"difference {planned[50] - np.median(stops):+.0f}, MC error {error:.1f}, seed {seed}")
        PLANNER_LINES.append(line)
        print(line, flush=True)


# (workers, SD of a worker's taste on the logit scale, Zipf exponent of their loads: 0 = equal; 1.5 = 3 of 30 give 57%)
WORKER_TASTES = ((20, 1.0, 0.0), (50, 0.5, 0.0), (30, 1.0, 1.5))


def worker_taste(studies: int, seed: int) -> None:
    """Equal models, 3 votes per prompt at ICC 0.13, every vote from one of a few workers, each with a
    personal taste for one model: certify and analyze_pairwise's by-prompt test hold for the workers who
    judged, not for the worker population; p_two_way (clustered by prompt and worker) is meant to."""
    for step, (workers, sd, zipf) in enumerate(WORKER_TASTES):
        rng, claims, by_prompt, two_way = np.random.default_rng(seed + step), 0, 0, 0
        loads = 1 / np.arange(1, workers + 1) ** zipf if zipf else None  # None: equal loads, drawn as before
        for _ in tqdm(range(studies), desc=f"worker taste {workers} x {sd}", mininterval=30):
            study = clustered_study(rng, models=2, icc=0.13, tie_rate=0.2, workers=workers, worker_sd=sd,
                                    worker_loads=loads)
            claims += certify(study, ALPHA, intervals=False)["certified_winner"].notna().any()
            rates = pairwise.win_rates(study).iloc[0]
            by_prompt += rates["p_value"] < ALPHA
            two_way += rates["p_two_way"] < ALPHA
        where = f"equal models, ICC 0.13, {workers} workers with taste SD {sd}" + (
            f", loads Zipf {zipf} ({loads.sum() ** 2 / (loads ** 2).sum():.1f} effective)" if zipf else "")
        row(f"analyze_pairwise p_two_way (prompt x worker), {where}: p < 0.05", studies, two_way / studies,
            "false claims", seed + step)
        row("  analyze_pairwise p_value (sign test by prompt), same studies", studies, by_prompt / studies,
            "reference", seed + step)
        row("  certify (bets by prompt), same studies: any claim", studies, claims / studies, "reference", seed + step)


def power(studies: int, seed: int) -> None:
    """Power at win rate 0.55, 3 votes per prompt, ICC 0.13, 20% ties, at the prompts `dialeval plan` gives
    the sign test for 80%: the sign test over prompts against the cluster-robust test on all decided votes."""
    items = planner.fixed_items(planner.Votes(0.55, 0.2, 3, 0.13), ALPHA, 0.8)
    rng, sign, robust = np.random.default_rng(seed), 0, 0
    for _ in tqdm(range(studies), desc="power", mininterval=30):
        rates = pairwise.win_rates(clustered_study(rng, models=2, items_per_pair=items, icc=0.13, tie_rate=0.2,
                                                   win_rates={(0, 1): 0.55})).iloc[0]
        sign += rates["p_value"] < ALPHA
        robust += rates["p_two_way"] < ALPHA
    row(f"power, win rate 0.55, ICC 0.13, {items} prompts x 3 votes: sign test by prompt (p_value)", studies,
        sign / studies, "reference", seed)
    row("  same studies: cluster-robust test on votes (p_two_way)", studies, robust / studies, "reference", seed)


def robust_test_items(rate: float, tie_rate: float, votes: int, icc: float, power_wanted: float = 0.8) -> int:
    """Prompts for the cluster-robust test on decided votes (p_two_way, many workers) to reach
    ``power_wanted``, by the normal approximation: the share won r^ = sum W / sum D over prompts (D decided
    votes of a prompt, W won by the better model) has variance Var(W - r D) / (n E[D]^2), with
    Var(W - r D) = E[D] r(1 - r)(1 - icc) + E[D^2] icc r(1 - r) under the beta-binomial model."""
    decided = votes * (1 - tie_rate)
    decided_sq = votes * (1 - tie_rate) * tie_rate + decided ** 2
    spread = decided * rate * (1 - rate) * (1 - icc) + decided_sq * icc * rate * (1 - rate)
    z = stats.norm.isf(ALPHA / 2) + stats.norm.isf(1 - power_wanted)
    return math.ceil(z ** 2 * spread / (decided * (rate - 0.5)) ** 2)


def power_robust(studies: int, seed: int) -> None:
    """How many prompts the cluster-robust test needs (robust_test_items) against the sign test's
    planned prompts, and the power simulated at that size (is the approximation right?)."""
    items = robust_test_items(0.55, 0.2, 3, 0.13)
    sign_items = planner.fixed_items(planner.Votes(0.55, 0.2, 3, 0.13), ALPHA, 0.8)
    rng, robust = np.random.default_rng(seed), 0
    for _ in tqdm(range(studies), desc="power of p_two_way", mininterval=30):
        robust += pairwise.win_rates(clustered_study(rng, models=2, items_per_pair=items, icc=0.13, tie_rate=0.2,
                                                     win_rates={(0, 1): 0.55})).iloc[0]["p_two_way"] < ALPHA
    row(f"power, win rate 0.55, ICC 0.13, {items} prompts x 3 votes (normal approximation for p_two_way; the sign "
        f"test needs {sign_items}): p_two_way", studies, robust / studies, "reference", seed)


SM_NULL = (  # label, sm_study settings: equal models, 60 conversations each, 4 turns
    ("ICC 0.1, one worker per conversation", {"icc": 0.1}),
    ("ICC 0.3, one worker per conversation", {"icc": 0.3}),
    ("ICC 0.3, 20 workers rating both models, worker SD 1", {"icc": 0.3, "workers": 20, "worker_sd": 1.0}),
    ("ICC 0.3, 20 workers each rating one model, worker SD 1",
     {"icc": 0.3, "workers": 20, "worker_sd": 1.0, "worker_per_model": True}),
    ("ICC 0.3, 40 workers each rating one model, worker SD 0.5",
     {"icc": 0.3, "workers": 40, "worker_sd": 0.5, "worker_per_model": True}),
)
SM_TESTS = (("SM-Turn linear", "success"), ("SM-Turn WTA", "wta"), ("SM-Dialog Likert", "value"))


def single_model_scores(ratings: pd.DataFrame) -> dict:
    turn = single_model.sm_turn_ratings(ratings)
    conversations = single_model.per_conversation_success(turn)
    return {"success": conversations, "wta": conversations,
            "value": single_model.per_conversation_likert(single_model.sm_dialog_ratings(ratings))}


def single_model_null(studies: int, seed: int) -> None:
    """analyze_single_model's tests between equal models; "per conversation" rows: the Student t-test
    over conversations (the rule before worker clustering) on the same studies."""
    for step, (label, settings) in enumerate(SM_NULL):
        rng = np.random.default_rng(seed + step)
        rejected = {name: 0 for name, _ in SM_TESTS}
        plain = dict(rejected)
        for _ in tqdm(range(studies), desc=f"single model null {label}", mininterval=30):
            scores = single_model_scores(sm_study(rng, **settings))
            for name, value in SM_TESTS:
                rejected[name] += single_model.ttests(scores[value], [("m0", "m1")], value=value)["p"].iloc[0] < ALPHA
                frame = scores[value]
                plain[name] += stats.ttest_ind(frame.loc[frame["model"] == "m0", value],
                                               frame.loc[frame["model"] == "m1", value]).pvalue < ALPHA
        for name, _ in SM_TESTS:
            row(f"analyze_single_model {name}, equal models, {label}: p < 0.05", studies, rejected[name] / studies,
                "false claims", seed + step)
            if "workers" in settings:
                row("  per conversation (Student t), same studies", studies, plain[name] / studies, "reference",
                    seed + step)


def single_model_coverage(studies: int, seed: int) -> None:
    """Intervals of analyze_single_model where the truth is known in closed form (clustered_ratings):
    rates 0.6 / 0.7, Likert means 3.5 / 4.0 (SD 1), ICC 0.3; the Likert rows also with 20 workers of
    bias SD 1 rating both models (the truth then has SD sqrt(2))."""
    for step, settings in enumerate(({}, {"workers": 20, "worker_sd": 1.0})):
        rng, covered = np.random.default_rng(seed + step), {}
        sd = math.hypot(1.0, settings.get("worker_sd", 0.0))
        likert_truth = {"m0": likert_mean(3.5, sd), "m1": likert_mean(4.0, sd)}
        truths = {"lin": {"m0": 0.6, "m1": 0.7}, "wta": {m: wta_rate(r, 0.3, 4) for m, r in (("m0", 0.6), ("m1", 0.7))}}
        for _ in tqdm(range(studies), desc="single model coverage", mininterval=30):
            ratings = sm_study(rng, rates=(0.6, 0.7), likert_means=(3.5, 4.0), icc=0.3, **settings)
            dialog = single_model.sm_dialog_ratings(ratings)
            likert = single_model.likert_summary(dialog).set_index("model")
            hits = {f"Likert mean of {m}": likert.loc[m, "ci_low"] <= likert_truth[m] <= likert.loc[m, "ci_high"]
                    for m in likert_truth}
            test = single_model.ttests(single_model.per_conversation_likert(dialog), [("m0", "m1")]).iloc[0]
            hits["Likert difference"] = test["ci_low"] <= likert_truth["m0"] - likert_truth["m1"] <= test["ci_high"]
            if not settings:
                rates = single_model.success_rates(single_model.sm_turn_ratings(ratings)).set_index("model")
                for kind, truth in truths.items():
                    hits.update({f"SM-Turn {kind} of {m}": rates.loc[m, f"{kind}_ci_low"] <= truth[m]
                                 <= rates.loc[m, f"{kind}_ci_high"] for m in truth})
            for name, hit in hits.items():
                covered[name] = covered.get(name, 0) + bool(hit)
        where = "ICC 0.3" + (", 20 workers of SD 1 rating both models" if settings else "")
        for name, count in covered.items():
            row(f"analyze_single_model interval, {name}, {where}: coverage", studies, count / studies, "coverage",
                seed + step)


PLANNER_LINES: list[str] = []
PARTS = {
    "certify": lambda args, seed: [certify_null(2, icc, args.studies, seed + step, reference=icc == 0.3)
                                   for step, icc in enumerate((0.0, 0.13, 0.3))],
    "certify12": lambda args, seed: certify_null(12, 0.3, args.k12_studies, seed + 10, reference=True),
    "coverage": lambda args, seed: (certify_coverage(args.coverage_studies, seed + 20),
                                    win_rate_coverage(0.3, args.coverage_studies, seed + 40)),
    "tests": lambda args, seed: [win_rate_tests(icc, args.studies, seed + 30 + step)
                                 for step, icc in enumerate((0.0, 0.13, 0.3))],
    "pw_turn": lambda args, seed: [conversation_test(icc, args.studies, seed + 50 + step)
                                   for step, icc in enumerate((0.1, 0.3))],
    "planner": lambda args, seed: planner_check(args.coverage_studies, seed + 60),
    "workers": lambda args, seed: worker_taste(args.studies, seed + 140),
    "power": lambda args, seed: (power(args.coverage_studies, seed + 150),
                                 power_robust(args.coverage_studies, seed + 160)),
    "single_model": lambda args, seed: (single_model_null(args.studies, seed + 100),
                                        single_model_coverage(args.coverage_studies, seed + 120)),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=1000)
    parser.add_argument("--k12-studies", type=int, default=1000)
    parser.add_argument("--coverage-studies", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated, of {', '.join(PARTS)}")
    args = parser.parse_args()
    start, seed = time.time(), args.seed
    for part in args.parts.split(","):
        PARTS[part](args, seed)
    print(f"\n{platform.machine()}, {os.cpu_count()} CPUs, {time.time() - start:.0f} s; alpha {ALPHA}\n")
    print("| what | studies | seed | rate | SE | bound | within |")
    print("|---|---|---|---|---|---|---|")
    for what, studies, used_seed, rate, se, target, ok in ROWS:
        bound = "" if math.isnan(target) else f"{'<=' if 'coverage' not in what else '>='} {target:.4f}"
        print(f"| {what.strip()} | {studies} | {used_seed} | {rate:.4f} | {se:.4f} | {bound} | {ok} |")
    for line in PLANNER_LINES:
        print(f"\n{line}")


if __name__ == "__main__":
    main()
