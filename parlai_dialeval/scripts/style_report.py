"""The style-control sections of the pairwise and live-chat reports (results/sections/style.py and
live_chat_style.py compute them)."""
from __future__ import annotations


def _style_text(report, described: dict[str, str], unit: str) -> None:
    report.text(f"Style control (LMArena's, for dialogue): each {unit} is fitted again with the style differences of "
                "the two sides as covariates (count features as (a - b) / (a + b + 1), your own as a - b, each divided "
                "by its standard deviation; a worker tie is half a win). Covariates: "
                + "; ".join(f"{name}: {what}" for name, what in described.items())
                + ". The raw and the style-controlled ranking come from the same logistic Bradley-Terry fit on the "
                "same votes (log-strengths with mean 0), with cluster-robust intervals clustered as the rankings "
                "above (a model pair's votes on one item; t with clusters - 1 degrees of freedom). rank_change > 0: "
                "the model rises once style is held equal.")


def pairwise_view(report, part, result, section=None) -> None:
    """Style control in analyze_pairwise's report."""
    if part is None:
        return
    alpha = result.config.alpha
    if part.rankings.empty:
        report.text(f"No style control: none of the {len(result.inputs.comparisons)} votes has the texts of both "
                    "sides (response_a and response_b, or the conversations of an ACUTE pair).", note=True)
        return
    report.context["style_control"] = ", ".join(sorted(set(part.coefficients["covariate"])))
    report.heading("Rankings with and without style control")
    _style_text(report, part.covariates, "question and unit's Bradley-Terry model")
    left = sum(part.left_out.values())
    if left:
        report.warn(f"Style control left out {left} vote(s) without the texts (or your covariates) of both "
                    "sides; its raw ranking uses the same votes as its controlled one.")
    for sentence in part.sentences:
        report.text(sentence)
    report.table(part.rankings, caption="bt_raw / bt_style: log-strengths without and with the style "
                 f"covariates, {100 * (1 - alpha):g}% cluster-robust intervals, ranks and rank_change", floatfmt="{:.3g}")
    report.table(part.coefficients.drop(columns=["contrast"]), caption="Style coefficients (log-odds per "
                 "standard deviation of the difference) and the share of votes the contrast wins at equal "
                 "quality", floatfmt="{:.3g}")


def live_chat_view(report, part, alpha: float) -> None:
    """Style-adjusted scores in analyze_live_chat's report."""
    from parlai_dialeval.analysis.style_control import MIN_UNUSUAL

    if part is None:
        return
    if part.scores is None:
        report.text(part.reason, note=True)
        return
    scores, effects, used, left = part.scores, part.effects, part.used, part.unused
    report.context["style_control"] = ", ".join(used)
    report.heading("Scores with and without style adjustment")
    report.text("Each model's mean per-conversation overall z, without and with the conversation's style as "
                "covariates (the mean per bot turn of: " + ", ".join(used)
                + (f"; left out, the same in all but fewer than {MIN_UNUSUAL} conversations: "
                   + ", ".join(left) if left else "") + "; centred and divided by "
                "their standard deviation): a regression with model fixed effects, its intervals clustered by "
                + ("conversation, since a panel of workers rated each one and conversations, not raters, are the "
                   "independent units" if part.panel else "worker")
                + f" ({100 * (1 - alpha):g}%, t with {part.clustered_by} - 1 degrees of freedom). rank_change > 0: "
                "the model rises once style is held at the average of all conversations.")
    significant = effects.loc[effects["p_value"] < alpha, "sentence"]
    for sentence in significant:
        report.text(sentence)
    if significant.empty:
        report.text(f"No style covariate has a significant effect on the scores at {alpha:g}"
                    + ("; no model changes rank once style is held equal." if scores["rank_change"].eq(0).all()
                       else "."))
    report.table(scores, floatfmt="{:.3g}")
    report.table(effects.drop(columns=["sentence"]), caption="Style effects on the overall z, per standard "
                 "deviation (per_sd, in the covariate's own unit)", floatfmt="{:.3g}")
