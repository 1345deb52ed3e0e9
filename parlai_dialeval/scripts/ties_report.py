"""The sections on ties as information (Davidson) and position effects per model in the pairwise reports
(analyze_pairwise, certify); results/sections/ties.py and position.py compute them."""
from __future__ import annotations

TIES_TEXT = ("Davidson's model counts a tie as what it is, a third outcome: P(tie) = nu / (e^(d/2) + e^(-d/2) + nu) for "
             "a strength difference d, so nu is how often people cannot tell two equal models apart (a tie is nu / "
             "(2 + nu) likely between them). Among decided votes it is the plain model, so its log-strengths (mean 0) "
             "stand beside the plain fit's, where a tie is half a win; both are maximum likelihood with cluster-robust "
             "intervals (a model pair's votes on one item as a cluster). 'Both bad' (tie_kind) is a tie in the fit, "
             "its rate given per model. A question with many ties and strengths close together does not separate "
             "the models: that is a result too.")
POSITION_TEXT = ("Each vote records the side its replies were shown on: model_a first (A, left). The Bradley-Terry "
                 "fit below adds a shared effect of being shown first and each model's own (a ridge-penalised "
                 "deviation from the shared one, like a random effect with sd 1 on the log-odds scale), so the "
                 "strengths are net of position; the plain fit, which ignores the side, credits a model that gains "
                 "more from being first with part of that gain. Cluster-robust intervals (a model pair's votes on "
                 "one item as a cluster).")


def _view(report, part, heading: str, text: str, caption: str) -> None:
    """Heading, what it is, a sentence per question (a confounded design as a warning), the sentences that change
    the conclusion on the first screen, the table."""
    if part is None:
        return
    report.heading(heading)
    report.text(text)
    for sentence in part.sentences:
        (report.warn if "confounded" in sentence else report.text)(sentence)
    for sentence in part.verdicts:
        report.verdict(sentence)
    report.table(part.table, caption=caption, floatfmt="{:.3g}")


def ties_view(report, part, result=None, section=None) -> None:
    _view(report, part, "Ties as information (Bradley-Terry-Davidson)", TIES_TEXT,
          "ties.csv: strength_davidson and strength_plain with their intervals; tie_rate and both_bad_rate per model "
          "(its worker votes)")


def position_view(report, part, result=None, section=None) -> None:
    _view(report, part, "Position effects per model", POSITION_TEXT,
          "position.csv: strength_net_of_position (with its interval) and strength_plain; position_effect: the "
          "log-odds a model gains when shown first (shared + its own), with its interval; shown_first_share of its "
          "votes")
