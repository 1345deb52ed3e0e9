"""analyze_pairwise's report, a view of a PairwiseResult (results/pairwise_result.py): each section in order, by
its view in ``VIEWS`` or, for a section without one, its heading, sentences and tables. Statistics are the
result's; this module only says them (and draws the figures)."""
from __future__ import annotations

import hashlib

from parlai_dialeval.analysis.multiple_testing import describe
from parlai_dialeval.analysis.pairwise_tables import WIN_RATE_COLUMNS, sections
from parlai_dialeval.lazy import lazy_module
from parlai_dialeval.options import turns_text
from parlai_dialeval.report import Report
from parlai_dialeval.scripts import (categories_report, evidence_report, fragility_report, groups_report, judge_option,
                                     style_report, ties_report, voters_report)

pairwise_plots = lazy_module("parlai_dialeval.analysis.pairwise_plots")
pairwise, rankings = (lazy_module(f"parlai_dialeval.analysis.{name}") for name in ("pairwise", "rankings"))


def build(result, out) -> Report:
    """The report of ``result`` (a PairwiseResult), to be written into ``out``."""
    inputs, config = result.inputs, result.config
    report = Report("Pairwise analysis", out, "pairwise.html", tie_policy=pairwise.TIE_POLICY,
                    ranking_tie_policy=rankings.TIE_POLICY, comparisons=len(inputs.comparisons),
                    automatic=inputs.automatic, onboarding=inputs.onboarding, alpha=config.alpha,
                    confidence=f"{100 * (1 - config.alpha):g}%")
    for section in result.sections:
        for message in result.library_warnings.get(section.name, []):
            report.warn(message)
        part = result.parts.get(section.name)
        VIEWS.get(section.name, default_view)(report, part, result, section)
    return report


def default_view(report: Report, part, result, section) -> None:
    """A section without a view of its own: its heading, what it says, its tables."""
    if part is None:
        return
    report.heading(section.title or section.name)
    for sentence in section.sentences(part):
        report.text(sentence)
    for name, frame in section.tables(part).items():
        report.table(frame, caption=f"{name}.csv", floatfmt="{:.4g}")


def _core(report: Report, core, result, section) -> None:
    config, inputs = result.config, result.inputs
    for message in core.warnings:
        report.warn(message)
    for reason, count in inputs.left_out.items():
        report.warn(f"Left out {count} {reason}: partial work is kept in the data, not counted here.")
    for reason, count in inputs.voided.items():
        report.warn(f"Left out {count} {reason}: kept in the data, not counted here.")
    if inputs.worker_checks is not None:
        inputs.worker_checks.add_to(report)
    tables = core.tables
    rates = tables["win_rates"]
    report.heading("Win rates per question and model pair")
    report.text(describe(config.correction, int(rates["p_value"].notna().sum())))
    report.table(rates[WIN_RATE_COLUMNS + ["automatic_ties"]],
                 caption="win_rate_a = wins_a / (wins_a + wins_b) (= WMT major score) with "
                         f"{100 * (1 - config.alpha):g}% Wilson interval over the effective number of votes "
                         "(decided votes / design_effect); two-sided binomial test over clusters won and lost "
                         "(clusters_won_a vs clusters_won_b), ties excluded")
    report.text("Unit of independence: votes on the same item (an A/B prompt, an ACUTE / PW-Dialog conversation "
                "pair, a PW-Turn conversation) move together, so they form one cluster. icc is the intraclass "
                "correlation of decided votes within clusters, design_effect = 1 + (m - 1) x icc with m the "
                "size-weighted votes per cluster (sum of squared cluster sizes / votes, Kish: votes_per_cluster "
                "where clusters are alike) "
                "(at least 1) how many times clustering inflates the variance of a win rate; the interval is "
                "widened by it, the test counts clusters, and the Bradley-Terry bootstrap resamples whole "
                "clusters. Where every cluster is one vote these are the plain per-vote statistics. "
                "Workers: p_value holds for the items, given the workers who judged (their personal tastes are "
                "taken as they are); p_two_way, clustered by item and by worker, holds for the population of "
                "workers too, where one worker's taste for a model moves their votes on many items together; "
                "effective_workers is the number of equal workers the votes count as (a few who gave most votes "
                "count as few), and p_two_way is approximate where it is below about 5. "
                "docs/pairwise_analysis.md, \"Workers\".")
    _agreement(report, tables)
    _rankings(report, tables, config)
    if tables["conversation_win_rates"] is not None:
        _conversations(report, tables, config)
    _annotators(report, tables, core.summary)


def _agreement(report: Report, tables: dict) -> None:
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


def _rankings(report: Report, tables: dict, config) -> None:
    rough = tables["rankings"]["bt_note"].loc[lambda notes: notes.str.startswith("rough interval: ")]
    if len(rough):  # too few --bootstrap-rounds: every interval of the report is rough alike, said once
        report.warn(f"The Bradley-Terry intervals are not to be read as intervals: "
                    f"{rough.iloc[0].removeprefix('rough interval: ')} (--bootstrap-rounds).")
    for question, unit, section in sections(tables["rankings"]):
        report.heading(f"Rankings: {question} ({unit})")
        parts = section["component"].nunique()
        if parts > 1:
            report.warn(f"'{question}' ({unit}): the comparison graph has {parts} disconnected parts; models are "
                        "ranked within each part (column component), never across parts.")
        unvaried = section[section["bt_note"].str.startswith("no interval")]
        # each part has its own reason (one-sided votes, a single round, ...): say the one bt_note gives
        for note, models in unvaried.groupby("bt_note", sort=False)["model"]:
            report.warn(f"'{question}' ({unit}): no Bradley-Terry interval for {', '.join(models)}: "
                        f"{note.removeprefix('no interval: ')}.")
        report.table(section.drop(columns=["question", "unit"]), caption=f"Bradley-Terry log-strengths (mean 0 "
                     f"within each connected part) with bootstrap {100 * (1 - config.alpha):g}% intervals; models "
                     "whose strengths differ by less than 1e-6 share a rank; TrueSkill mu/sigma; system win count "
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


def _conversations(report: Report, tables: dict, config) -> None:
    report.heading("Per-conversation win rates (Smith et al. 4.2)")
    report.table(tables["conversation_win_rates"],
                 caption=f"turns {turns_text(config.turns)}: linear, squared and winner-takes-all")
    tests = tables["conversation_tests"]
    report.heading("Tests by conversation (turns of one conversation are not independent)")
    report.text("Smith et al.'s per-turn binomial test (p_turns) counts every turn as an independent vote. "
                "Turns of one conversation share a partner, a topic and a worker; the test by conversation "
                "(p_conversations: conversations won vs lost, two-sided sign test; p_conversations_adjusted "
                "with the same correction as the win rates) does not assume it. icc_within_conversation is the "
                "intraclass correlation of turn outcomes within conversations; design_effect how many times it "
                "inflates the variance of a win rate.")
    doubtful = tests[tests["per_turn_test_doubtful"]]
    if len(doubtful):
        report.warn(f"{len(doubtful)} PW-Turn pair(s) have turns that move together within conversations "
                    "(intraclass correlation above 0.05): their per-turn binomial p-values are too small; "
                    "read p_conversations in conversation_tests.csv instead.")
    report.table(tests, floatfmt="{:.4g}")
    report.heading("Win rate per turn")
    report.table(tables["win_rate_by_turn"])
    report.figure(pairwise_plots.turn_plot(tables["win_rate_by_turn"]), "win_rate_by_turn",
                  "Share of decided votes the first model of each pair won, per Bot Speaker turn")


def _annotators(report: Report, tables: dict, summary: dict) -> None:
    report.heading("Annotators and prompts")
    flagged = summary["annotators"]["negatively_correlated"]
    report.text(f"{flagged} of {summary['annotators']['with_correlation']} annotator correlations are negative "
                "(annotators.csv, column negative).", note=bool(flagged))
    values = tables["annotators"]["spearman"].dropna()
    if len(values):
        report.figure(pairwise_plots.histogram(values, "Spearman rho with the other annotators", "annotators"),
                      "annotators", "Annotator correlation with the others (Lee Figure 1)")
    valid = tables["items"]["item_total_r"].dropna()
    if len(valid):
        report.figure(pairwise_plots.histogram(valid, "item-total correlation", "prompts"), "items",
                      "Prompt validity: item-total correlation per prompt (Lee 5.2); items.csv lists them")
    if tables["responses"] is not None:
        report.heading("Responses (Lee 5.4)")
        report.table(tables["responses"], caption="distinct-n = unique n-grams / tokens; mean length in tokens")


def _verdict(report: Report, paragraphs, result, section) -> None:
    for paragraph in paragraphs:
        report.verdict(paragraph)


def _provisional(report: Report, table, result, section) -> None:
    marked = table[table["provisional"]]
    report.heading("Provisional results")
    report.text("A model's place is provisional while it has fewer worker votes than --provisional-votes, or when it "
                "is one of several variants of a family (--variants, --variant-pattern) tested against the same "
                "opponents: the best of several tries scores too high (the Leaderboard Illusion, arXiv 2504.20879). "
                "provisional.csv lists every model.")
    sentence = section.sentences(table)[0]
    if len(marked):
        report.warn(sentence)
        report.table(marked.drop(columns=["provisional"]))
    else:
        report.text(sentence)


def _ppi(report: Report, judged, result, section) -> None:
    """PPI++ win rates (ties 1/2) and Bradley-Terry scores with the judge, next to the human-only ones."""
    if judged is None:
        return
    judge_option.report_ppi(report, judged.win_rates, "win rates", "vote share",
                            "model_a's vote share with ties as 1/2 (not win_rate_a above, which leaves ties out), "
                            "human-only and PPI++ on the same votes")
    unjudged = int(judged.win_rates["human_unjudged"].sum())
    if unjudged:
        report.warn(f"{unjudged} human vote(s) are on items the judge did not answer: they are in every table "
                    "above but not in the PPI estimates (ppi_win_rates.csv, human_unjudged).")
    report.heading("Bradley-Terry with the LLM judge (PPI++ logistic model on pair indicators)", level=3)
    report.table(judged.bradley_terry, caption="log-strengths with mean 0, human-only and PPI++ (ties as half a "
                 "win), clustered by item; t intervals from the clustered sandwich variance, unlike the bootstrap "
                 "above", floatfmt="{:.4g}")


def _name(stem: str, question: str, unit: str) -> str:
    """A file name per section that does not depend on what the question says (it may hold anything)."""
    return f"{stem}_{unit}_{hashlib.sha1(str(question).encode()).hexdigest()[:8]}"


def _both_bad(report: Report, counts, result, section) -> None:
    if counts is None:
        return
    report.heading(section.title)
    for sentence in section.sentences(counts):
        report.text(sentence)
    report.table(counts)


VIEWS = {"core": _core, "both_bad": _both_bad, "verdict": _verdict, "voters": voters_report.view,
         "provisional": _provisional, "style": style_report.pairwise_view, "categories": categories_report.pairwise_view,
         "fragility": fragility_report.view, "ppi": _ppi, "evidence": evidence_report.view,
         "ties": ties_report.ties_view, "position": ties_report.position_view,
         "groups": groups_report.view}
