"""dialeval analyze_pairwise: win rates, rankings and agreement of pairwise (A/B) human judgements, per
question and per unit of judgement (turn, dialog, response).

CLI glue only: analysis/pairwise_result.py computes the results (from analysis.{pairwise,rankings,agreement})
and this command writes them; the figures in analysis.pairwise_plots, the report's prose in
templates/pairwise.html. See docs/pairwise_analysis.md.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from parlai.core.script import register_script

from parlai_dialeval.analysis import pairwise
from parlai_dialeval.analysis.completeness import finished_only
from parlai_dialeval.analysis.pairwise_result import WIN_RATE_COLUMNS, sections
from parlai_dialeval.analysis.significance_loss import significance_loss
from parlai_dialeval.analysis.multiple_testing import CORRECTIONS, DEFAULT_CORRECTION, HELP, describe
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.lazy import lazy_module
from parlai_dialeval.options import option, turn_range, turns_text
from parlai_dialeval import verdict
from parlai_dialeval.report import Report
from parlai_dialeval.scripts.analysis_command import AnalysisCommand, Outputs
from parlai_dialeval.scripts.judge_option import HELP as JUDGE_HELP
from parlai_dialeval.scripts import style_option, voter_option

# Loaded on first use, so --help and option errors do not wait for scipy and matplotlib.
pairwise_plots, pairwise_result, rankings = (lazy_module(f"parlai_dialeval.analysis.{name}") for name in
                                             ("pairwise_plots", "pairwise_result", "rankings"))

SECTION = pairwise.SECTION
# Fewer decided votes than this in a pair: the report warns that its interval is wide.
SMALL_PAIR = 10


@dataclass
class PairwiseConfig:
    turns: tuple[int, int] | None = option(
        None, "restrict per-conversation win rates (linear, squared, winner-takes-all) to these 1-based Bot "
              "Speaker turns, e.g. 2-6 (PW-Turn data); default all", parse=turn_range, metavar="FIRST-LAST")
    bootstrap_rounds: int = option(1000, "bootstrap rounds for Bradley-Terry intervals (>= 1)", kind="positive_int")
    seed: int = option(0, "random seed of the bootstrap", kind="int")
    alpha: float = option(0.05, "significance level; intervals are 1 - alpha (0 < alpha < 1)", kind="probability")
    correction: str = option(DEFAULT_CORRECTION, HELP, choices=CORRECTIONS)
    min_annotator_items: int = option(5, "items an annotator must share with others to get a correlation",
                                      kind="positive_int")
    judge: str | None = option(None, JUDGE_HELP, metavar="F.jsonl")
    style_control: str = option("auto", style_option.STYLE_HELP, choices=("auto", "off"))
    style_covariates: str | None = option(None, style_option.COVARIATES_HELP, metavar="F.csv")
    categories: str | None = option(None, style_option.CATEGORIES_HELP, metavar="F.yaml")
    exclude_flagged: bool = voter_option.exclude_flagged_field()
    side_share: float = voter_option.side_share_field()
    words_per_second: float = voter_option.words_per_second_field()
    # Provisional results (issue 43): analysis/provisional.py says why each default.
    provisional_votes: int = option(100, "a model with fewer worker votes than this is marked provisional",
                                    kind="positive_int")
    variants: str | None = option(None, "JSON file {family: [model, ...]}: models of one family tested against the "
                                        "same opponents are marked provisional", metavar="F.json")
    variant_pattern: str | None = option(None, "regular expression whose first group is a model's family, e.g. "
                                               "'(.+)-exp-\\d+' (an alternative to --variants)", metavar="REGEX")


def analyze(comparisons: pd.DataFrame, out: Path, config: PairwiseConfig = PairwiseConfig(), log=print,
            worker_checks=None, left_out: dict[str, int] | None = None, judge: pd.DataFrame | None = None,
            conversation_style: pd.DataFrame | None = None) -> dict:
    """Compute everything per question and unit, write the CSV/JSON outputs and report.html into ``out``;
    returns the tables. ``worker_checks``: a WorkerChecks (already applied to the data) or None;
    ``left_out``: counts of judgments the caller left out, and why (shown in the report); ``judge``: an
    LLM judge's comparisons (``dialeval judge`` output) for the PPI++ section, or None; ``conversation_style``:
    style_features.conversation_features of the conversations ACUTE / PW-Dialog votes compare (style control)."""
    if comparisons.empty:
        raise DialevalError("no comparison records in the data (analyze_pairwise needs pairwise votes)")
    comparisons, onboarding = pairwise.split_onboarding(comparisons)
    automatic = int(comparisons["automatic"].eq(True).sum()) if "automatic" in comparisons else 0
    log(f"{len(comparisons)} comparisons ({automatic} automatic ties); {onboarding} onboarding excluded")
    if comparisons.empty:
        raise DialevalError(f"all {onboarding} comparisons are onboarding items (onboarding: true); nothing to analyse")
    comparisons = pairwise.with_sections(comparisons)
    comparisons, voters, voters_left_out = voter_option.flag_and_exclude(comparisons, config, log)
    report = Report("Pairwise analysis", out, "pairwise.html", tie_policy=pairwise.TIE_POLICY,
                    ranking_tie_policy=rankings.TIE_POLICY, comparisons=len(comparisons), automatic=automatic,
                    onboarding=onboarding, alpha=config.alpha, confidence=f"{100 * (1 - config.alpha):g}%")
    with report.library_warnings():
        result = pairwise_result.analyse(comparisons, config, automatic, onboarding)
    _warn_small(result.tables["win_rates"], config, report)
    tables, summary = result.tables, result.summary
    tables["fragility_significance"] = significance_loss(comparisons, tables["win_rates"], config.alpha,
                                                         config.correction)
    if worker_checks is not None:
        summary["worker_checks"] = worker_checks.summary()
        tables["worker_checks"] = worker_checks.table
    for reason, count in (left_out or {}).items():
        report.warn(f"Left out {count} {reason}: partial work is kept in the data, not counted here.")
    summary["left_out"] = left_out or {}
    tables["provisional"] = _provisional(comparisons, config)
    _report(report, tables, summary, config, worker_checks)
    style_option.pairwise_section(report, comparisons, config, conversation_style, tables, summary)
    voter_option.add_voter_flags(report, voters, voters_left_out, config.exclude_flagged, tables, summary)
    voter_option.add_fragility(report, comparisons, tables, summary)
    _report_provisional(report, tables["provisional"])
    if judge is not None:
        _judge_section(comparisons, judge, tables, summary, config, report)
    written = Outputs(tables, {"agreement": summary}, report).write(out)
    return {**tables, "summary": summary, "written": written}


def _warn_small(rates: pd.DataFrame, config: PairwiseConfig, report: Report) -> None:
    decided = rates["wins_a"] + rates["wins_b"]
    small = rates[decided < SMALL_PAIR]
    if len(small):
        report.warn(f"{len(small)} of {len(rates)} model pair(s) have fewer than {SMALL_PAIR} decided votes "
                    "(ties excluded): their Wilson intervals are wide and their tests weak.")
    # The test counts items (clusters) won and lost, not votes: with n of them its smallest two-sided p is
    # 2 * 0.5^n, however many votes each holds; below it nothing can be significant.
    items = (rates["clusters_won_a"] + rates["clusters_won_b"]).astype(float)
    hopeless = rates[(2 * 0.5 ** items) >= config.alpha]
    if len(hopeless):
        report.warn(f"{len(hopeless)} pair(s) have too few decided votes on different items for any result to reach "
                    f"p < {config.alpha:g}: the test counts items won and lost (clusters_won_a, clusters_won_b), and "
                    "its smallest possible two-sided p with n of them is 2 x 0.5^n.")
    if rates["question"].nunique() > 1 or rates["unit"].nunique() > 1:
        report.warn(f"The data hold {rates[SECTION].drop_duplicates().shape[0]} questions or units of judgement; "
                    "every result below is per question and unit, never pooled.")


def _report(report: Report, tables: dict, summary: dict, config: PairwiseConfig, worker_checks) -> None:
    rates, ranks = tables["win_rates"], tables["rankings"]
    for paragraph in verdict.pairwise(rates, config.alpha, tables["fragility_significance"]):
        report.verdict(paragraph)
    if worker_checks is not None:
        worker_checks.add_to(report)
    report.heading("Win rates per question and model pair")
    report.text(describe(config.correction, int(rates["p_value"].notna().sum())))
    report.table(rates[WIN_RATE_COLUMNS + ["automatic_ties"]],
                 caption="win_rate_a = wins_a / (wins_a + wins_b) (= WMT major score) with "
                         f"{100 * (1 - config.alpha):g}% Wilson interval over the effective number of votes "
                         "(decided votes / design_effect); two-sided binomial test over clusters won and lost "
                         "(clusters_won_a vs clusters_won_b), ties excluded")
    report.text("Unit of independence: votes on the same item (an A/B prompt, an ACUTE / PW-Dialog conversation "
                "pair, a PW-Turn conversation) move together, so they form one cluster. icc is the intraclass "
                "correlation of decided votes within clusters, design_effect = 1 + (votes_per_cluster - 1) x icc "
                "(at least 1) how many times clustering inflates the variance of a win rate; the interval is "
                "widened by it, the test counts clusters, and the Bradley-Terry bootstrap resamples whole "
                "clusters. Where every cluster is one vote these are the plain per-vote statistics. "
                "Workers: p_value holds for the items, given the workers who judged (their personal tastes are "
                "taken as they are); p_two_way, clustered by item and by worker, holds for the population of "
                "workers too, where one worker's taste for a model moves their votes on many items together "
                "(approximate with fewer than about 20 workers). docs/pairwise_analysis.md, \"Workers\".")
    if tables["win_rates_by_study"] is not None:
        report.heading("Per comparison (study): counts, win rate and agreement")
        report.table(tables["win_rates_by_study"].drop(columns=["distinct_a", "distinct_b"]))
    report.heading("Agreement per question")
    report.table(tables["agreement"], caption="items and votes per item; Fleiss' kappa over the items with the "
                 "most common number of votes (kappa_items, kappa_votes_per_item); Krippendorff's alpha (nominal) over "
                 "all items; Lee et al.'s weak agreement: allagree + onedis + alldis = weak_items, A/Bdis is part "
                 "of onedis")
    two_votes = tables["agreement"][tables["agreement"]["kappa_votes_per_item"] == 2]
    for row in two_votes.itertuples():
        report.warn(f"Fleiss' kappa for '{row.question}' ({row.unit}) rests on items with only two votes each.")
    by_study = tables["win_rates_by_study"]
    if by_study is not None and (by_study["kappa_votes_per_item"] == 2).any():
        studies = by_study.loc[by_study["kappa_votes_per_item"] == 2, "study"].fillna("(no study)").astype(str)
        report.warn(f"Per-study Fleiss' kappa rests on items with only two votes each in {len(studies)} "
                    f"stud{'y' if len(studies) == 1 else 'ies'}: {', '.join(studies)} (win_rates_by_study.csv, "
                    "columns votes_per_item and kappa_votes_per_item).")
    for question, unit, section in sections(ranks):
        report.heading(f"Rankings: {question} ({unit})")
        parts = section["component"].nunique()
        if parts > 1:
            report.warn(f"'{question}' ({unit}): the comparison graph has {parts} disconnected parts; models are "
                        "ranked within each part (column component), never across parts.")
        unvaried = section[section["bt_note"].str.startswith("no interval")]
        if len(unvaried):
            report.warn(f"'{question}' ({unit}): no Bradley-Terry interval for {', '.join(unvaried['model'])}: "
                        "the bootstrap cannot vary (a single vote or a one-sided pair).")
        report.table(section, caption=f"Bradley-Terry log-strengths (mean 0 within each connected part) with "
                     f"bootstrap {100 * (1 - config.alpha):g}% intervals; TrueSkill mu/sigma; system win count "
                     "(opponents beaten, Lee 2.2)")
        if len(section):
            report.figure(pairwise_plots.rank_plot(section), _name("rankings", question, unit),
                          f"{question} ({unit}): Bradley-Terry strength with bootstrap interval")
        wmt = tables["wmt_scores"]
        wmt = wmt[(wmt["question"] == question) & (wmt["unit"] == unit)]
        if wmt["major_win"].notna().any():
            order = list(pairwise.system_win_counts(wmt).index)
            report.figure(pairwise_plots.heatmap(wmt, order), _name("heatmap", question, unit),
                          f"{question} ({unit}): rows win against columns; colour = major score, cell value = "
                          "distinct score (Lee et al. 2.2); models ordered by system win count")
        else:
            report.text("No WMT heatmap: no pair has a decided vote (only ties).")
    if tables["conversation_win_rates"] is not None:
        report.heading("Per-conversation win rates (Smith et al. 4.2)")
        report.table(tables["conversation_win_rates"],
                     caption=f"turns {turns_text(config.turns)}: linear, squared and winner-takes-all")
        tests = tables["conversation_tests"]
        report.heading("Tests by conversation (turns of one conversation are not independent)")
        report.text("Smith et al.'s per-turn binomial test (p_turns) counts every turn as an independent vote. "
                    "Turns of one conversation share a partner, a topic and a worker; the test by conversation "
                    "(p_conversations: conversations won vs lost, two-sided sign test; p_conversations_adjusted "
                    "with the same correction as the win rates) does not assume it. icc_within_conversation is the intraclass correlation of turn outcomes "
                    "within conversations; design_effect how many times it inflates the variance of a win rate.")
        doubtful = tests[tests["per_turn_test_doubtful"]]
        if len(doubtful):
            report.warn(f"{len(doubtful)} PW-Turn pair(s) have turns that move together within conversations "
                        "(intraclass correlation above 0.05): their per-turn binomial p-values are too small; "
                        "read p_conversations in conversation_tests.csv instead.")
        report.table(tests, floatfmt="{:.4g}")
        report.heading("Win rate per turn")
        report.table(tables["win_rate_by_turn"])
        report.figure(pairwise_plots.turn_plot(tables["win_rate_by_turn"]), "win_rate_by_turn",
                      "Win rate of model_a per Bot Speaker turn")
    _report_annotators(report, tables, summary)


def _report_annotators(report: Report, tables: dict, summary: dict) -> None:
    report.heading("Annotators and prompts")
    flagged = summary["annotators"]["negatively_correlated"]
    report.text(f"{flagged} of {summary['annotators']['with_correlation']} annotator correlations are negative "
                "(annotators.csv, column negative).", note=bool(flagged))
    values = tables["annotators"]["spearman"].dropna()
    if len(values):
        report.figure(pairwise_plots.histogram(values, "Spearman rho with the other annotators"), "annotators",
                      "Annotator correlation with the others (Lee Figure 1)")
    valid = tables["items"]["item_total_r"].dropna()
    if len(valid):
        report.figure(pairwise_plots.histogram(valid, "item-total correlation"), "items",
                      "Prompt validity: item-total correlation per prompt (Lee 5.2); items.csv lists them")
    if tables["responses"] is not None:
        report.heading("Responses (Lee 5.4)")
        report.table(tables["responses"], caption="distinct-n = unique n-grams / tokens; mean length in tokens")


def _judge_section(comparisons, judge, tables: dict, summary: dict, config: PairwiseConfig, report: Report) -> None:
    """PPI++ win rates (ties 1/2) and Bradley-Terry scores with the judge, next to the human-only ones."""
    from parlai_dialeval.adaptive import ppi_pairwise
    from parlai_dialeval.scripts.judge_option import report_ppi

    with report.library_warnings():
        rates = ppi_pairwise.win_rates(comparisons, judge, config.alpha)
        scores = ppi_pairwise.bradley_terry(comparisons, judge, config.alpha)
    tables["ppi_win_rates"], tables["ppi_bradley_terry"] = rates, scores
    summary["judge"] = {"file": config.judge, "judge_records": int(len(judge)),
                        "win_rates": report_ppi(report, rates, "win rates", "vote share",
                                                "model_a's vote share with ties as 1/2 (not win_rate_a above, "
                                                "which leaves ties out), human-only and PPI++ on the same votes"),
                        "human_unjudged": int(rates["human_unjudged"].sum())}
    if summary["judge"]["human_unjudged"]:
        report.warn(f"{summary['judge']['human_unjudged']} human vote(s) are on items the judge did not answer: "
                    "they are in every table above but not in the PPI estimates (ppi_win_rates.csv, "
                    "human_unjudged).")
    report.heading("Bradley-Terry with the LLM judge (PPI++ logistic model on pair indicators)", level=3)
    report.table(scores, caption="log-strengths with mean 0, human-only and PPI++ (ties as half a win), "
                 "clustered by item; t intervals from the clustered sandwich variance, unlike the bootstrap above",
                 floatfmt="{:.4g}")


def _provisional(comparisons: pd.DataFrame, config: PairwiseConfig) -> pd.DataFrame:
    """analysis.provisional per question and unit, with the variants file read."""
    from parlai_dialeval.analysis import provisional

    variants = _read_variants(config.variants) if config.variants else None
    parts = [pairwise_result._keyed(provisional.from_comparisons(part, config.provisional_votes, variants,
                                                                 config.variant_pattern), question, unit)
             for question, unit, part in sections(comparisons)]
    return pd.concat(parts, ignore_index=True)


def _read_variants(path: str) -> dict[str, str]:
    """--variants: {family: [model, ...]} -> {model: family}."""
    import json

    from parlai_dialeval.errors import DataError

    try:
        families = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(path, f"unreadable ({error})", expected='a JSON object {"family": ["model", ...]}') from None
    if not isinstance(families, dict):
        raise DataError(path, "not an object", expected='{"family": ["model", ...]}', got=families)
    out = {}
    for family, models in families.items():
        if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
            raise DataError(path, "not a list of model names", field=family, expected='["model", ...]', got=models)
        out.update({model: family for model in models})
    return out


def _report_provisional(report: Report, table: pd.DataFrame) -> None:
    marked = table[table["provisional"]]
    report.heading("Provisional results")
    report.text("A model's place is provisional while it has fewer worker votes than --provisional-votes, or when it "
                "is one of several variants of a family (--variants, --variant-pattern) tested against the same "
                "opponents: the best of several tries scores too high (the Leaderboard Illusion, arXiv 2504.20879). "
                "provisional.csv lists every model.")
    if len(marked):
        report.warn(f"{len(marked)} model(s) are provisional: " + "; ".join(
            f"{row.model} ({row.reason})" for row in marked.head(10).itertuples())
            + ("; ..." if len(marked) > 10 else ""))
        report.table(marked.drop(columns=["provisional"]))
    else:
        report.text("No model is provisional.")


def _name(stem: str, question: str, unit: str) -> str:
    """A file name per section that does not depend on what the question says (it may hold anything)."""
    return f"{stem}_{unit}_{hashlib.sha1(str(question).encode()).hexdigest()[:8]}"


@register_script("analyze_pairwise")
class AnalyzePairwise(AnalysisCommand):
    description = ("Win rates, rankings and agreement of pairwise (A/B, PW-Turn, PW-Dialog/ACUTE-Eval) judgements, "
                   "per question")
    options_title = "Pairwise analysis"
    config_class = PairwiseConfig
    worker_checks = True

    def analyse(self, data, config, checks, out):
        _, comparisons, left_out = finished_only(data.ratings.iloc[:0], data.comparisons, data.conversations)
        for reason, count in left_out.items():
            print(f"left out {count} {reason}")
        judge = None
        if config.judge:
            from parlai_dialeval.judge.output import load_judge

            judge = load_judge(config.judge, "comparisons")
        style = None
        if config.style_control != "off" and comparisons.get("conversation_a", pd.Series(dtype=object)).notna().any():
            from parlai_dialeval.metrics.style_features import conversation_features

            style = conversation_features(data.turns())
        return analyze(comparisons, out, config, worker_checks=checks, left_out=left_out, judge=judge,
                       conversation_style=style)
