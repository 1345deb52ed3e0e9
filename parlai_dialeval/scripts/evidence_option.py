"""The evidence table (analysis/evidence.py) in every analysis command: the options ``--exclude-flagged`` (where
the command's config does not declare it) and ``--llm-text-model``, building the table from the loaded data,
leaving the flagged workers out under the one rule. A thin layer: the table itself is the pure analysis/evidence.py,
its section results/sections/evidence.py (``evidence.csv``), its view scripts/evidence_report.py."""
from __future__ import annotations

import dataclasses

import pandas as pd

EXCLUDE_HELP = ("leave out every record of the workers the evidence table flags (analysis/evidence.py: a decisive "
                "signal, such as failed attention checks or a voter test, or two others together; "
                "docs/data_model.md, \"Evidence about participants\"); they are reported either way")
LLM_HELP = ("a local Hugging Face causal LM folder (e.g. the tests' .real-model/model) scoring how machine-written each "
            "worker's texts read (perplexity and burstiness, metrics/llm_text.py); never flags alone; off by default")


def add_args(group, config_class) -> None:
    names = {f.name for f in dataclasses.fields(config_class)} if dataclasses.is_dataclass(config_class) else set()
    if "exclude_flagged" not in names:
        group.add_argument("--exclude-flagged", type="bool", default=False, metavar="BOOL", help=EXCLUDE_HELP)
    group.add_argument("--llm-text-model", default=None, metavar="PATH", help=LLM_HELP)


def build(data, opt, config=None, quality: pd.DataFrame | None = None, log=print, llm=None):
    """The Evidence of ``data`` (its ``checks``: the answers to check items ``load_data`` set aside); voter tests
    on the comparisons where there are any (with the command's --alpha, --side-share, --words-per-second where it
    has them); the LLM-text score with --llm-text-model (or ``llm``, scored before). ``evidence.voters`` keeps the
    voter flags for the report, ``evidence.llm`` the LLM-text scores."""
    from parlai_dialeval.analysis import evidence

    comparisons = data.comparisons
    voters = None
    if len(comparisons) and "choice" in comparisons.columns:
        from parlai_dialeval.adaptive.voter_flags import VoterSettings, flag_voters

        settings = {k: getattr(config, k) for k in ("alpha", "side_share", "words_per_second") if hasattr(config, k)}
        voters = flag_voters(comparisons, VoterSettings(**settings))
    texts = texts_of(data)
    if llm is None and opt.get("llm_text_model"):
        from parlai_dialeval.metrics.llm_text import score_workers

        llm = score_workers(texts, opt["llm_text_model"]) if len(texts) else None
    checks = data.checks
    check_frames = [f for f in ((checks.ratings, checks.comparisons) if checks is not None else ()) if len(f)]
    found = evidence.evidence_table(data.conversation_fields(), data.ratings, comparisons,
                                    pd.concat(check_frames, ignore_index=True) if check_frames else None,
                                    data.studies, voters, quality, llm=llm, texts=texts)
    found.voters, found.llm = voters, llm
    if log is not None:
        # the rule is too long for one line, so the line points to where it is written out
        log(f"evidence about participants: {len(found.flagged)} of {len(found.table)} "
            f"worker{'' if len(found.table) == 1 else 's'} flagged (rule: docs/data_model.md, "
            "\"Evidence about participants\"; evidence.csv)")
    return found


def texts_of(data) -> pd.DataFrame:
    """The workers' free texts (analysis/answer_signals.py ``free_texts``); where the loader kept the turns in
    columns (plain turns of an old export: no records in them) from those, without building a dict per turn."""
    from parlai_dialeval.analysis import answer_signals

    if getattr(data, "_turns", None) is None:
        return answer_signals.free_texts(data.conversations, data.comparisons)
    fields = data.conversation_fields()
    human = data.turns(speaker="human")
    owner = fields.set_index("id")[["worker_id", "assignment_id"] if "assignment_id" in fields else ["worker_id"]]
    owner = owner.reindex(human["conversation_id"].astype(str))
    messages = pd.DataFrame({"worker_id": owner["worker_id"].to_numpy(),
                             "assignment_id": owner["assignment_id"].to_numpy() if "assignment_id" in owner else None,
                             "source": "message", "text": human["text"].to_numpy(), "record": None})
    messages = messages[messages["worker_id"].notna()]
    others = answer_signals.free_texts(fields.assign(turns=[[]] * len(fields)), data.comparisons)
    return pd.concat([messages, others], ignore_index=True)


def exclude(data, found, log=print):
    """``data`` without the records of the workers ``found`` flags (one rule: analysis/evidence.py ``excluded``)."""
    from parlai_dialeval.analysis.evidence import excluded
    from parlai_dialeval.data import EvalData

    out = excluded(found)
    if not out:
        return data
    keep = {t: ~data.frame(t)["worker_id"].astype(str).isin(out) if "worker_id" in data.frame(t) else None
            for t in ("conversation", "rating", "comparison")}
    left = EvalData(data.studies, *(data.frame(t)[keep[t]] if keep[t] is not None else data.frame(t)
                                    for t in ("conversation", "rating", "comparison")))
    left.checks = data.checks
    if log is not None:
        log(f"--exclude-flagged: left out the records of {len(out)} flagged worker(s): {', '.join(sorted(out)[:10])}"
            + (" ..." if len(out) > 10 else ""))
    return left


def quality_of(checks) -> pd.DataFrame | None:
    """The Smith et al. worker checks (scripts/worker_check_option.WorkerChecks) as the table's quality test."""
    if checks is None or not len(checks.table):
        return None
    return pd.DataFrame({"worker_id": checks.table["worker_id"].astype(str), "passed": ~checks.table["flagged"]})
