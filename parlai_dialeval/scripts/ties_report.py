"""The sections on ties as information (Davidson) and position effects per model in the pairwise reports
(analyze_pairwise, certify); results/sections/ties.py and position.py compute them."""
from __future__ import annotations


def ties_view(report, part, result=None, section=None) -> None:
    """The section in a report (analyze_pairwise, certify)."""
    if part is None:
        return
    report.heading("Ties as information (Bradley-Terry-Davidson)")
    report.text("Davidson's model counts a tie as what it is, a third outcome: P(tie) = nu / (e^(d/2) + e^(-d/2) + "
                "nu) for a strength difference d, so nu is how often people cannot tell two equal models apart "
                "(a tie is nu / (2 + nu) likely between them). Among decided votes it is the plain model, so its "
                "log-strengths (mean 0) stand beside the plain fit's, where a tie is half a win; both are maximum "
                "likelihood with cluster-robust intervals (a model pair's votes on one item as a cluster). 'Both "
                "bad' (tie_kind) is a tie in the fit, its rate given per model. A question with many ties and "
                "strengths close together does not separate the models: that is a result too.")
    for sentence in part.sentences:
        report.text(sentence)
    for sentence in part.verdicts:
        report.verdict(sentence)
    report.table(part.table, caption="ties.csv: strength_davidson and strength_plain with their intervals; "
                 "tie_rate and both_bad_rate per model (its worker votes)", floatfmt="{:.3g}")


def position_view(report, part, result=None, section=None) -> None:
    """The section in a report (analyze_pairwise, certify)."""
    if part is None:
        return
    report.heading("Position effects per model")
    report.text("Each vote records the side its replies were shown on: model_a first (A, left). The Bradley-Terry "
                "fit below adds a shared effect of being shown first and each model's own (a ridge-penalised "
                "deviation from the shared one, like a random effect with sd 1 on the log-odds scale), so the "
                "strengths are net of position; the plain fit, which ignores the side, credits a model that gains "
                "more from being first with about half that gain. Cluster-robust intervals (a model pair's votes on "
                "one item as a cluster).")
    for sentence in part.sentences:
        (report.warn if "confounded" in sentence else report.text)(sentence)
    for sentence in part.verdicts:
        report.verdict(sentence)
    report.table(part.table, caption="position.csv: strength_net_of_position (with its interval) and "
                 "strength_plain; position_effect: the log-odds a model gains when shown first (shared + its own), "
                 "with its interval; shown_first_share of its votes", floatfmt="{:.3g}")
