"""``--style-control``, ``--style-covariates F.csv`` and ``--categories F.yaml`` of analyze_pairwise and
analyze_live_chat: reading the user's files (one clear line on bad input) and the reports' sections. CLI glue
only: the statistics live in analysis/style_control.py and analysis/categories.py (docs/pairwise_analysis.md,
"Style control" and "Categories")."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from parlai_dialeval.errors import DataError

STYLE_HELP = ("auto: rank with and without style covariates counted from the stored texts (reply length in "
              "words, markdown headers, list items, bold, questions, emoji; per bot turn for whole conversations), "
              "side by side, where the data hold the texts; off: skip it")
COVARIATES_HELP = ("CSV of your own style covariates: columns item_id (the comparison's item_id; for live chat the "
                   "conversation id), model (the model whose reply the row describes; pairwise only) and one numeric "
                   "column per covariate")
CATEGORIES_HELP = ("YAML rule file, category: [regular expressions] matched (case-insensitive) against each prompt "
                   "(pairwise) or opening topic (live chat): one ranking per category, intervals corrected for the "
                   "number of categories (Bonferroni). Without it: the comparisons' meta.category labels, or live-chat "
                   "topics when there are at most 10")
MAX_TOPICS = 10  # more distinct live-chat topics than this: per-topic rankings need a rule file grouping them


def read_covariates(path: str | Path, keys: tuple[str, ...]) -> pd.DataFrame:
    """The user's covariates: ``keys`` as strings, every other column numeric and finite."""
    try:
        frame = pd.read_csv(path, dtype={key: str for key in keys}, keep_default_na=False, na_values=[""])
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise DataError(path, f"cannot read the covariates CSV: {error}") from None
    for key in keys:
        if key not in frame:
            raise DataError(path, "missing column", 1, key, f"a header with {', '.join(keys)} and covariate columns")
    names = [c for c in frame.columns if c not in keys]
    if not names:
        raise DataError(path, "no covariate column", 1, expected="at least one numeric column besides "
                        + ", ".join(keys))
    for name in names:
        values = pd.to_numeric(frame[name], errors="coerce")
        bad = np.flatnonzero(~np.isfinite(values.to_numpy(float)))
        if len(bad):
            raise DataError(path, "not a finite number", f"row {bad[0] + 2}", name, "a number",
                            frame[name].iloc[bad[0]])
        frame[name] = values.astype(float)
    duplicated = np.flatnonzero(frame.duplicated(list(keys)).to_numpy())
    if len(duplicated):
        raise DataError(path, "the same key twice", f"row {duplicated[0] + 2}", ", ".join(keys), "one row per key")
    return frame


def read_rules(path: str | Path) -> dict[str, list[str]]:
    """Category -> regular expressions from a YAML mapping (a single expression may stand alone)."""
    import yaml

    try:
        rules = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise DataError(path, f"cannot read the category rules: {error}") from None
    if not isinstance(rules, dict) or not rules:
        raise DataError(path, "not a mapping of categories", expected="category: [regular expression, ...]")
    out = {}
    for name, patterns in rules.items():
        patterns = [patterns] if isinstance(patterns, str) else patterns
        if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p for p in patterns):
            raise DataError(path, "not a list of regular expressions", field=str(name), expected="[text, ...]",
                            got=patterns)
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise DataError(path, f"not a regular expression: {error}", field=str(name), got=pattern) from None
        out[str(name)] = patterns
    return out


def _style_text(report, described: dict[str, str], unit: str) -> None:
    report.text(f"Style control (LMArena's, for dialogue): each {unit} is fitted again with the style differences of "
                "the two sides as covariates (count features as (a - b) / (a + b + 1), your own as a - b, each divided "
                "by its standard deviation; a worker tie is half a win). Covariates: "
                + "; ".join(f"{name}: {what}" for name, what in described.items())
                + ". The raw and the style-controlled ranking come from the same logistic Bradley-Terry fit on the "
                "same votes (log-strengths with mean 0), with cluster-robust intervals clustered as the rankings "
                "above (a model pair's votes on one item; t with clusters - 1 degrees of freedom). rank_change > 0: "
                "the model rises once style is held equal.")


def pairwise_section(report, comparisons: pd.DataFrame, config, conversation_style, tables: dict,
                     summary: dict) -> None:
    """Style control and categories in analyze_pairwise's report and outputs."""
    from parlai_dialeval.analysis import categories, style_control

    if config.style_control != "off":
        user = read_covariates(config.style_covariates, ("item_id", "model")) if config.style_covariates else None
        with report.library_warnings():
            result = style_control.pairwise_style_control(comparisons, conversation_style, user, config.alpha)
        left = sum(result.left_out.values())
        summary["style_control"] = {"covariates": result.covariates, "left_out": result.left_out,
                                    "sentences": result.sentences}
        if result.rankings.empty:
            report.text(f"No style control: none of the {len(comparisons)} votes has the texts of both sides "
                        "(response_a and response_b, or the conversations of an ACUTE pair).", note=True)
        else:
            tables["style_control"], tables["style_coefficients"] = result.rankings, result.coefficients
            report.context["style_control"] = ", ".join(sorted(set(result.coefficients["covariate"])))
            report.heading("Rankings with and without style control")
            _style_text(report, result.covariates, "question and unit's Bradley-Terry model")
            if left:
                report.warn(f"Style control left out {left} vote(s) without the texts (or your covariates) of both "
                            "sides; its raw ranking uses the same votes as its controlled one.")
            for sentence in result.sentences:
                report.text(sentence)
            report.table(result.rankings, caption="bt_raw / bt_style: log-strengths without and with the style "
                         f"covariates, {100 * (1 - config.alpha):g}% cluster-robust intervals, ranks and rank_change",
                         floatfmt="{:.3g}")
            report.table(result.coefficients.drop(columns=["contrast"]), caption="Style coefficients (log-odds per "
                         "standard deviation of the difference) and the share of votes the contrast wins at equal "
                         "quality", floatfmt="{:.3g}")
    membership, source = _pairwise_membership(comparisons, config)
    if membership is not None:
        with report.library_warnings():
            ranked = categories.pairwise_rankings(comparisons, membership, config.alpha)
        _category_section(report, ranked, membership, source, config.alpha, tables, summary)


def _pairwise_membership(comparisons: pd.DataFrame, config):
    from parlai_dialeval.analysis import categories

    if config.categories:
        texts = categories.prompt_texts(comparisons)
        return categories.rule_membership(texts, read_rules(config.categories)), f"the rules of {config.categories}"
    labels = categories.meta_labels(comparisons)
    if labels is None:
        return None, ""
    return categories.label_membership(labels), "the category label in each comparison's meta"


def _category_section(report, ranked: pd.DataFrame, membership: pd.DataFrame, source: str, alpha: float,
                      tables: dict, summary: dict) -> None:
    from parlai_dialeval.analysis.categories import category_alpha

    k = membership.shape[1]
    counts = {name: int(membership[name].sum()) for name in membership.columns}
    summary["categories"] = {"source": source, "members": counts, "interval_level": 1 - category_alpha(alpha, k)}
    tables["category_rankings"] = ranked
    report.heading("Rankings per category")
    report.text(f"{k} categories from {source} ("
                + ", ".join(f"{name}: {n}" for name, n in counts.items())
                + f"); one may hold another's items. Each interval is at {100 * (1 - category_alpha(alpha, k)):.4g}% "
                f"(Bonferroni: {100 * (1 - alpha):g}% over all {k} categories together).")
    empty = [name for name, n in counts.items() if n == 0]
    if empty:
        report.warn(f"{len(empty)} categor{'y' if len(empty) == 1 else 'ies'} matched nothing: {', '.join(empty)}.")
    report.table(ranked, floatfmt="{:.3g}")


def live_chat_section(report, result, data, opt: dict, alpha: float = 0.05) -> tuple[dict, dict]:
    """Style-adjusted scores and per-topic rankings in analyze_live_chat's report; returns (tables, summary)."""
    from parlai_dialeval.analysis import categories

    conv = result.conversations
    conv = conv[conv["passed"] & ~conv["qc"]].rename(columns={"overall_z": "score"})
    conv = conv.assign(conversation_id=conv["conversation_id"].astype(str))
    tables, summary = {}, {}
    if opt.get("style_control", "auto") != "off":
        _live_chat_style(report, conv, data, opt, alpha, tables, summary)
    topics = data.conversation_fields()
    topics = topics.assign(id=topics["id"].astype(str)).set_index("id")["topic"] if "topic" in topics else None
    if topics is not None:
        topic = conv["conversation_id"].map(topics)
        if opt.get("categories"):
            membership = categories.rule_membership(topic, read_rules(opt["categories"]))
            source = f"the rules of {opt['categories']} matched against the opening topic"
        elif 2 <= topic.nunique() <= MAX_TOPICS:
            membership, source = categories.label_membership(topic), "the opening topics"
        else:
            membership = None
            if topic.nunique() > MAX_TOPICS:
                report.text(f"No ranking per topic: {topic.nunique()} distinct opening topics (more than "
                            f"{MAX_TOPICS}); group them with --categories RULES.yaml.", note=True)
        if membership is not None:
            membership.index = conv.index
            with report.library_warnings():
                ranked = categories.live_chat_rankings(conv, membership, alpha)
            _category_section(report, ranked, membership, source, alpha, tables, summary)
    return tables, summary


def _live_chat_style(report, conv: pd.DataFrame, data, opt: dict, alpha: float, tables: dict, summary: dict) -> None:
    from parlai_dialeval.analysis import style_control
    from parlai_dialeval.metrics.style_features import conversation_features

    style = conversation_features(data.turns())
    if opt.get("style_covariates"):
        user = read_covariates(opt["style_covariates"], ("item_id",)).set_index("item_id")
        style = style.join(user, how="inner")
    parameters = conv["model"].nunique() + style.shape[1]
    # a panel rating every conversation (FED) makes the conversation the independent unit, not its first rater
    panel = "raters" in conv and conv["raters"].gt(1).any()
    cluster, clusters = ("conversation_id", "conversations") if panel else ("worker_id", "workers")
    if conv[cluster].nunique() < 2 or len(conv) <= parameters:
        report.text(f"No style adjustment: {len(conv)} passing conversation(s) in {conv[cluster].nunique()} "
                    f"cluster(s) ({clusters}); a clustered fit needs two clusters and more conversations than its "
                    f"{parameters} parameters.", note=True)
        return
    with report.library_warnings():
        scores, effects = style_control.live_chat_style_control(conv, style, alpha, cluster)
    used = list(effects["covariate"])
    left = [name for name in style.columns if name not in used]
    tables["style_control"], tables["style_coefficients"] = scores, effects
    report.context["style_control"] = ", ".join(used)
    summary["style_control"] = {"covariates": used, "left_out": left, "clustered_by": clusters,
                                "conversations": int(scores["conversations"].sum()),
                                "sentences": effects.loc[effects["p_value"] < alpha, "sentence"].tolist()}
    report.heading("Scores with and without style adjustment")
    report.text("Each model's mean per-conversation overall z, without and with the conversation's style as "
                "covariates (the mean per bot turn of: " + ", ".join(used)
                + (f"; left out, the same in all but fewer than {style_control.MIN_UNUSUAL} conversations: "
                   + ", ".join(left) if left else "") + "; centred and divided by "
                "their standard deviation): a regression with model fixed effects, its intervals clustered by "
                + ("conversation, since a panel of workers rated each one and conversations, not raters, are the "
                   "independent units" if panel else "worker")
                + f" ({100 * (1 - alpha):g}%, t with {clusters} - 1 degrees of freedom). rank_change > 0: the "
                "model rises once style is held at the average of all conversations.")
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
