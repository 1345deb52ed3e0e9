"""Analyses as objects: each analysis's result holds every section it computes (results/section.py), and the
commands write their files and reports from it (docs/architecture.md). Between the adaptive layer (PPI, voter
tests) and the commands.

Library calls, for a notebook (docs/library.md):

    from parlai_dialeval import results
    result = results.pairwise(comparisons, bootstrap_rounds=200)   # a PairwiseResult
    result.tables["rankings"], result.style.coefficients, result.fragility.rankings, result.verdict
"""
from __future__ import annotations


def pairwise(comparisons, *, judge=None, conversation_style=None, worker_checks=None, left_out=None, evidence=None,
             config=None, **options):
    """The pairwise analysis of canonical comparison records (a DataFrame, e.g. ``importers.load(paths)
    .comparisons``) as a PairwiseResult. ``options``: any field of PairwiseConfig (the command's options:
    ``alpha``, ``bootstrap_rounds``, ``style_covariates`` (a CSV's path or a DataFrame), ``categories`` (a YAML
    file's path or {category: [regular expression, ...]}), ``exclude_flagged`` ...), or ``config`` whole;
    ``judge``: an LLM judge's comparisons for the PPI++ section; ``conversation_style``:
    metrics.style_features.conversation_features of the conversations ACUTE / PW-Dialog votes compare;
    ``evidence``: the evidence about participants (analysis/evidence.py; scripts/evidence_option.build makes it
    from the loaded data), whose rule ``exclude_flagged`` then applies."""
    from parlai_dialeval.results import pairwise_result

    config = config if config is not None else pairwise_result.PairwiseConfig(**options)
    inputs = pairwise_result.prepare(comparisons, judge=judge, conversation_style=conversation_style,
                                     worker_checks=worker_checks, left_out=dict(left_out or {}), evidence=evidence)
    return pairwise_result.analyse(inputs, config)


def live_chat(data, *, evidence=None, **options):
    """The live-chat analysis (Ji et al. 2022) of ``data`` (an EvalData: ``importers.load(paths)``) with every
    section: analysis.live_chat's LiveChatResult whose ``parts`` hold the verdict, the style adjustment, the
    rankings per topic and the evidence about participants (``evidence``, analysis/evidence.py, where given).
    ``options``: any field of results.live_chat_result.LiveChatOptions (the command's)."""
    from parlai_dialeval.results import live_chat_result

    return live_chat_result.analyse(data, live_chat_result.LiveChatOptions(**options), evidence)


def single_model(data, *, judge=None, worker_checks=None, evidence=None, **options):
    """The SM-Turn / SM-Dialog analysis (Smith et al. 2022) of ``data`` (an EvalData) as a SingleModelResult;
    ``options``: any field of results.single_model_result.SingleModelConfig; ``judge``: an LLM judge's ratings;
    ``evidence``: the evidence about participants (analysis/evidence.py) for its section."""
    from parlai_dialeval.results import single_model_result

    config = single_model_result.SingleModelConfig(**options)
    return single_model_result.analyse(single_model_result.prepare(data, config, judge, worker_checks, evidence),
                                       config)
