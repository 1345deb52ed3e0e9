"""The live-chat analysis as one object: analysis.live_chat's result (quality control, system scores,
significance, agreement) with the sections computed on it in ``parts`` (results/section.py): the verdict, the
scores with and without style adjustment, rankings per topic, scores per group of the people who judged
(--participants, --by), the evidence about participants. ``parlai_dialeval.results.live_chat`` builds it for
a notebook; scripts/analyze_live_chat.py writes its tables, summary.json and report."""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from parlai_dialeval.options import option
from parlai_dialeval.results import section as sections_api
from parlai_dialeval.results.sections import (evidence, live_chat_categories, live_chat_groups, live_chat_style,
                                              live_chat_verdict)

SECTIONS = [live_chat_verdict.SECTION, live_chat_style.SECTION, live_chat_categories.SECTION, live_chat_groups.SECTION,
            evidence.SECTION]


def _options() -> type:
    from parlai_dialeval.analysis.live_chat import LiveChatConfig

    report = (("sig_plot_threshold", float, option(0.1, "heatmap colours cells with p below this (the paper's "
                                                        "Figure 3: 0.1)", kind="probability")),)
    return sections_api.config_class("LiveChatOptions", report, SECTIONS, __name__, bases=(LiveChatConfig,),
                                     check=True)  # every option checked, the analysis's own (LiveChatConfig's) too


LiveChatOptions = _options()  # the analysis's settings (Ji et al.'s defaults), the report's and every section's


@dataclass
class LiveChatInputs:
    data: Any  # the loaded EvalData (None: the sections that read texts or topics do not apply)
    core: Any  # analysis.live_chat's LiveChatResult
    evidence: Any = None  # analysis/evidence.py's Evidence (None: no evidence section)
    evidence_excluded: bool = False  # whether its flagged workers were left out of ``core``


def analysis_config(options):
    """The analysis's own settings (analysis.live_chat.LiveChatConfig) of a LiveChatOptions."""
    from parlai_dialeval.analysis.live_chat import LiveChatConfig

    return LiveChatConfig(**{f.name: getattr(options, f.name) for f in fields(LiveChatConfig)})


def complete(core, data, options, evidence=None, evidence_excluded: bool = False) -> Any:
    """``core`` (analysis.live_chat's LiveChatResult) with every section not computed yet in ``core.parts``."""
    missing = [s for s in SECTIONS if core.parts.get(s.name) is None]
    done = sections_api.run(missing, LiveChatInputs(data, core, evidence, evidence_excluded),
                            options if options is not None else LiveChatOptions())
    core.parts.update(done.parts)
    core.library_warnings.update(done.warnings)
    return core


def analyse(data, options=None, evidence=None, evidence_excluded: bool = False):
    """The live-chat analysis of ``data`` (an EvalData) with every section (``evidence``: the evidence about
    participants, analysis/evidence.py, or None; ``evidence_excluded``: whether its flagged workers' records were
    left out of ``data``)."""
    from parlai_dialeval.analysis import live_chat

    options = options if options is not None else LiveChatOptions()
    return complete(live_chat.analyze(data, analysis_config(options)), data, options, evidence, evidence_excluded)


def tables(core) -> dict:
    return sections_api.tables(SECTIONS, core.parts)


def summary(core) -> dict:
    return sections_api.summary(SECTIONS, core.parts)
