"""dialeval certify: which model beats which, with evidence that stays valid however often it is run
during collection (betting e-processes on direct head-to-head votes; docs/adaptive_evaluation.md).

CLI glue only: the statistics live in parlai_dialeval.adaptive.{sequential,certification}.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from parlai.core.script import register_script

from parlai_dialeval.options import option
from parlai_dialeval.results.sections import voters as voter_tests
from parlai_dialeval.results.sections.position import POSITION_HELP
from parlai_dialeval.results.sections.ties import TIES_HELP
from parlai_dialeval.scripts.analysis_command import AnalysisCommand, Outputs
from parlai_dialeval.scripts.judge_option import HELP as JUDGE_HELP

TABLE_COLUMNS = ["question", "unit", "model_a", "model_b", "unit_of_independence", "units", "votes", "icc",
                 "design_effect", "order", "win_rate_a", "cs_low", "cs_high",
                 "e_a_beats_b", "e_b_beats_a", "threshold", "certified_winner", "verdict"]


@dataclass
class CertifyConfig:
    alpha: float = option(0.05, "family-wise error rate over every claim of every pair, at every look (0 < alpha < 1)",
                          kind="probability")
    judge: str | None = option(None, JUDGE_HELP + "; here also claims certified with the judge, valid at every "
                               "look when people's items are drawn at random from the judge's (ppi_certified.csv)",
                               metavar="F.jsonl")
    exclude_flagged: bool = voter_tests.exclude_flagged_field()
    side_share: float = voter_tests.side_share_field()
    words_per_second: float = voter_tests.words_per_second_field()
    ties: str = option("auto", TIES_HELP, choices=("auto", "off"))
    position_effects: str = option("auto", POSITION_HELP, choices=("auto", "off"))


def analyze(comparisons, out: Path, config: CertifyConfig = CertifyConfig(), judge=None, evidence=None) -> dict:
    """Certify every pair; write pairs.csv, certified.json and report.html into ``out``; ``judge``: an
    LLM judge's comparisons for the PPI sections (claims certified with the judge, anytime-valid, and
    fixed-look PPI++ intervals) or None; ``evidence``: the evidence about participants (scripts/evidence_option.py),
    whose rule --exclude-flagged applies, or None (the voter tests alone)."""
    from parlai_dialeval.adaptive.certification import certified_order, certify
    from parlai_dialeval.adaptive.certification_plots import interval_plot
    from parlai_dialeval.analysis.pairwise import split_onboarding, split_voided, with_sections
    from parlai_dialeval.errors import DialevalError
    from parlai_dialeval.report import Report
    from parlai_dialeval.results.sections import evidence as evidence_section
    from parlai_dialeval.results.sections import fragility, position, ties
    from parlai_dialeval.scripts import evidence_report, fragility_report, ties_report, voters_report

    if comparisons.empty:
        raise DialevalError("no comparisons in the data: certify needs pairwise (A/B, PW-Turn, ACUTE) votes")
    comparisons, voided = split_voided(comparisons)
    comparisons, voters, left_out, workers_out = voter_tests.flag_and_exclude(comparisons, config, evidence)
    pairs = certify(comparisons, config.alpha)
    if pairs.empty:
        raise DialevalError("no comparison has two different models: nothing to certify")
    sections = []
    report = Report("Certified model orders", out)
    report.text(f"A claim \"A beats B\" is settled when its evidence (an e-value from A's and B's direct "
                f"head-to-head votes) reaches K(K-1)/alpha for K models: then the chance that any settled claim "
                f"is wrong is at most alpha = {config.alpha}, however often this command was run while the "
                "votes came in. Ties count as half a win (ties decided without a worker, identical responses, not at "
                "all). Votes on one item are not independent, so each cluster of them counts as one outcome, their "
                "mean: the votes of several workers on one prompt (A/B) or conversation pair (ACUTE), or the per-turn "
                "votes of one conversation (PW-Turn); the table gives each pair's unit of independence, the "
                "intraclass correlation (ICC) of its votes within clusters and the design effect. Clusters are bet "
                "on in the order their first vote was collected: " + ", ".join(sorted(set(pairs["order"])))
                + ". The interval is A's win rate (mean cluster outcome), valid at every look. Workers: the "
                "guarantee is for the workers who judged (their personal tastes taken as they are, items the "
                "random draw); where a few workers give most votes and have their own taste for a model, a claim "
                "about the population of workers is not covered (analyze_pairwise's p_two_way allows for it; "
                "docs/adaptive_evaluation.md, \"Workers\").")
    for reason, count in voided.items():
        report.warn(f"Left out {count} {reason}: kept in the data, not counted here.")
    for (question, unit), part in pairs.groupby(["question", "unit"], sort=False):
        order = certified_order(part)
        settled, open_pairs = part[part["certified_winner"].notna()], part[part["certified_winner"].isna()]
        # an open verdict names only the favoured model, so the pair is named here as the report does
        sections.append({"question": question, "unit": unit, "tiers": order, "settled": settled["verdict"].tolist(),
                         "needs_more_data": [f"{row.model_a} vs {row.model_b}: {row.verdict}"
                                             for row in open_pairs.itertuples(index=False)]})
        report.heading(f"{question} ({unit})")
        report.text(f"{len(settled)} of {len(part)} pairs settled. Tiers, best first (each tier separated from the "
                    "next by at least one settled claim): " + " > ".join("{" + ", ".join(t) + "}" for t in order))
        for line in settled["verdict"]:
            report.text(line)
        for row in open_pairs.itertuples(index=False):
            report.text(f"{row.model_a} vs {row.model_b}: {row.verdict}; win rate of {row.model_a} "
                        f"{row.win_rate_a:.3f}, interval [{row.cs_low:.3f}, {row.cs_high:.3f}]", note=True)
        report.figure(interval_plot(part), f"intervals_{len(sections)}",
                      "Win rate of the first model per pair, with its interval valid at every look; "
                      "settled pairs in blue")
        report.table(part[TABLE_COLUMNS[2:]], floatfmt="{:.4g}")
    tables, robustness = {"pairs": pairs[TABLE_COLUMNS]}, {}
    flagged = voter_tests.Voters(voters, left_out, bool(config.exclude_flagged), None, evidence is not None,
                                 workers_out)
    inputs = SimpleNamespace(comparisons=with_sections(split_onboarding(comparisons)[0]))
    described = [(voter_tests.SECTION, flagged, voters_report.view),
                 (fragility.SECTION, fragility.of(inputs.comparisons), fragility_report.view),
                 (ties.SECTION, ties.compute(inputs, config, {}), ties_report.ties_view),
                 (position.SECTION, position.compute(inputs, config, {}), ties_report.position_view)]
    if evidence is not None:
        described.append((evidence_section.SECTION, evidence_section.Participants(evidence, flagged.excluded),
                          evidence_report.view))
    for section, part, view in described:
        if part is None:
            continue
        tables.update(section.tables(part))
        robustness.update(section.summary(part))
        view(report, part)
    if judge is not None:
        tables["ppi_certified"] = _judge_certification(comparisons, judge, config, report)
        tables["ppi_win_rates"] = _judge_section(comparisons, judge, config, report)
    outputs = Outputs(tables=tables, documents={"certified": {"alpha": config.alpha, "sections": sections,
                                                              "voided": voided, **robustness}},
                      report=report)
    return {"pairs": pairs, "sections": sections, "written": outputs.write(out), **tables}


def _judge_section(comparisons, judge, config: CertifyConfig, report):
    """PPI++ win rates with the judge, for this one look; the certification above does not use them."""
    from parlai_dialeval.adaptive import ppi_pairwise
    from parlai_dialeval.scripts.judge_option import report_ppi

    with report.library_warnings():
        rates = ppi_pairwise.win_rates(comparisons, judge, config.alpha)
    report_ppi(report, rates, "win rates", "vote share",
               f"model_a's vote share (ties 1/2), human-only and PPI++, {100 * (1 - config.alpha):g}% intervals "
               "clustered by item")
    report.text("These intervals hold for one look at the data as it stands, not at every look: they do not "
                "settle claims (the claims certified with the judge are in the section before).", note=True)
    return rates


def _judge_certification(comparisons, judge, config: CertifyConfig, report):
    """Claims certified by the anytime-valid PPI e-process (adaptive/ppi_certification.py)."""
    from parlai_dialeval.adaptive.ppi_certification import certify_with_judge
    from parlai_dialeval.analysis.pairwise import split_onboarding

    table = certify_with_judge(split_onboarding(comparisons)[0], judge, config.alpha)
    report.heading("Certified with the LLM judge (valid at every look)")
    report.text(
        "The judge answered a pool of items, so the mean of its answers over the pool is known; each cluster of "
        "people's votes enters as the judge's pool mean plus the people's correction on that item, "
        "lam * pool mean + (people - lam * judge), whose mean is the people's win rate over the pool whatever the "
        "judge's quality, and whose spread is small when the judge tracks people. Half the evidence bets on it "
        "(weight lam and bets chosen from earlier clusters only), half bets as the human-only claims above do, "
        "so a useless judge costs little; a claim is settled at the same threshold as above, valid however often "
        "this command is run (docs/ppi.md). It assumes people's items were drawn at random from the judge's "
        "pool: uniformly, or with the probabilities an adaptive launch with the judge recorded on each judgment "
        "(then each judgment is one draw, weighted by them). A claim here is a separate family from the "
        "human-only claims above: decide before collection which of the two you will rely on.")
    report.table(table, caption="Claims with the judge: e-values of the PPI e-process, per pair", floatfmt="{:.4g}")
    settled = table["certified_winner"].notna()
    unjudged = int(table["human_unjudged"].sum())
    if unjudged:
        report.warn(f"{unjudged} cluster(s) of people's votes are on items the judge did not answer: they are not "
                    "evidence in the judge's e-process.")
    report.text(f"In plain words: with the judge, {int(settled.sum())} of {len(table)} pairs are settled "
                f"(median weight on the judge {table['judge_weight'].median():.2f}; 0 = the judge was set aside "
                "and the evidence is people's alone).")
    return table


@register_script("certify")
class Certify(AnalysisCommand):
    description = "Certify which model beats which, valid however often it is run while votes come in"
    options_title = "Certification"
    config_class = CertifyConfig
    evidence_applies = True
    excludes_itself = True  # after its voter section (results/sections/voters.py flag_and_exclude)

    def analyse(self, data, config, checks, out):
        judge = None
        if config.judge:
            from parlai_dialeval.judge.output import load_judge

            judge = load_judge(config.judge, "comparisons")
        return analyze(data.comparisons, out, config, judge, self.evidence)
