"""Style adjustment of the live-chat scores (analysis/style_control.live_chat_style_control): each model's mean
per-conversation overall z without and with the conversations' style as covariates."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from parlai_dialeval.results.section import Section
from parlai_dialeval.results.sections import style

ALPHA = 0.05  # the live-chat report's intervals and tests are at 95%


@dataclass
class LiveChatStyle:
    scores: pd.DataFrame | None  # None: no adjustment possible (``reason``)
    effects: pd.DataFrame | None
    used: list[str]
    unused: list[str]
    clustered_by: str  # workers, or conversations where a panel rated each one
    panel: bool
    conversations: int
    reason: str = ""


def passing(core) -> pd.DataFrame:
    """The passing workers' genuine-model conversations with their overall z as ``score``."""
    conv = core.conversations
    conv = conv[conv["passed"] & ~conv["qc"]].rename(columns={"overall_z": "score"})
    return conv.assign(conversation_id=conv["conversation_id"].astype(str))


def compute(inputs, config, done: dict) -> LiveChatStyle | None:
    from parlai_dialeval.analysis import style_control
    from parlai_dialeval.metrics.style_features import conversation_features

    if config.style_control == "off" or inputs.data is None:
        return None
    conv = passing(inputs.core)
    features = conversation_features(inputs.data.turns())
    if style.given(config.style_covariates):
        features = features.join(style.user_covariates(config.style_covariates, ("item_id",)).set_index("item_id"),
                                 how="inner")
    parameters = conv["model"].nunique() + features.shape[1]
    # a panel rating every conversation (FED) makes the conversation the independent unit, not its first rater
    panel = bool("raters" in conv and conv["raters"].gt(1).any())
    cluster, clusters = ("conversation_id", "conversations") if panel else ("worker_id", "workers")
    if conv[cluster].nunique() < 2 or len(conv) <= parameters:
        return LiveChatStyle(None, None, [], list(features.columns), clusters, panel, len(conv),
                             f"No style adjustment: {len(conv)} passing conversation(s) in {conv[cluster].nunique()} "
                             f"cluster(s) ({clusters}); a clustered fit needs two clusters and more conversations than "
                             f"its {parameters} parameters.")
    scores, effects = style_control.live_chat_style_control(conv, features, ALPHA, cluster)
    used = list(effects["covariate"])
    return LiveChatStyle(scores, effects, used, [name for name in features.columns if name not in used], clusters,
                         panel, int(scores["conversations"].sum()))


def tables(part: LiveChatStyle) -> dict:
    return {} if part.scores is None else {"style_control": part.scores, "style_coefficients": part.effects}


def summary(part: LiveChatStyle) -> dict:
    if part.scores is None:
        return {}
    return {"style_control": {"covariates": part.used, "left_out": part.unused, "clustered_by": part.clustered_by,
                              "conversations": part.conversations, "sentences": sentences(part)}}


def sentences(part: LiveChatStyle) -> list[str]:
    if part.scores is None:
        return [part.reason]
    return part.effects.loc[part.effects["p_value"] < ALPHA, "sentence"].tolist()


SECTION = Section("style", compute, tables=tables, summary=summary, sentences=sentences,
                  title="Scores with and without style adjustment", config=style.SECTION.config)
