"""Style control of the pairwise analyses (analysis/style_control.py): the Bradley-Terry ranking with and without
style covariates counted from the stored texts (and the researcher's own), and what style is worth."""
from __future__ import annotations

from parlai_dialeval.options import option
from parlai_dialeval.results.section import Section

STYLE_HELP = ("auto: rank with and without style covariates counted from the stored texts (reply length in "
              "words, markdown headers, list items, bold, questions, emoji; per bot turn for whole conversations), "
              "side by side, where the data hold the texts; off: skip it")
COVARIATES_HELP = ("CSV of your own style covariates: columns item_id (the comparison's item_id; for live chat the "
                   "conversation id), model (the model whose reply the row describes; pairwise only) and one numeric "
                   "column per covariate")


def given(value) -> bool:
    """Whether an option holding a file's path, or what it holds, was given (an empty path is none)."""
    return value is not None and not (isinstance(value, str) and not value)


def user_covariates(given, keys: tuple[str, ...]):
    """The researcher's covariates from a CSV's path or a DataFrame (checked alike, one line on bad input)."""
    from parlai_dialeval.results.user_files import read_covariates

    return read_covariates(given, keys)


def compute(inputs, config, done: dict):
    """A StyleControlResult, or None where style control is off."""
    from parlai_dialeval.analysis import style_control

    if config.style_control == "off":
        return None
    user = user_covariates(config.style_covariates, ("item_id", "model")) if given(config.style_covariates) else None
    return style_control.pairwise_style_control(inputs.comparisons, inputs.conversation_style, user, config.alpha)


def tables(part) -> dict:
    if part.rankings.empty:
        return {}
    return {"style_control": part.rankings, "style_coefficients": part.coefficients}


SECTION = Section(
    "style", compute, tables=tables,
    summary=lambda part: {"style_control": {"covariates": part.covariates, "left_out": part.left_out,
                                            "sentences": part.sentences}},
    sentences=lambda part: part.sentences, title="Rankings with and without style control",
    config=(("style_control", str, option("auto", STYLE_HELP, choices=("auto", "off"))),
            ("style_covariates", str | None, option(None, COVARIATES_HELP, metavar="F.csv"))))
