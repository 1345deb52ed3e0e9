"""The one pattern of every ``dialeval analyze_*`` command: read --data, check the options, run the
worker checks where they apply, analyse, then write tables, JSON, plots and report atomically.

A command is a subclass of ``AnalysisCommand`` naming its config dataclass (whose fields, declared
with ``options.option``, are the command's options with their help text; for the analyses with sections, the
result's config: results/section.py) and implementing ``analyse(data, config, checks, out)``, returning what it
wrote (``written``); ``load`` may be overridden (analyze_live_chat imports its libraries beside it). The
module-level ``analyze`` function of each script stays the programmatic entry point (tests call it; notebooks
call ``parlai_dialeval.results``); the command only glues.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript

from parlai_dialeval.atomic import make_folder
from parlai_dialeval.report import Report
from parlai_dialeval.scripts.command_line import (add_config_args, add_data_args, config_from_opt, load_data,
                                                  write_csv, write_json)
from parlai_dialeval.scripts import evidence_option
from parlai_dialeval.scripts.worker_check_option import add_worker_checks_arg, run_worker_checks


@dataclass
class Outputs:
    """What an analysis writes: CSV tables and JSON documents by file stem, and its report."""

    tables: dict[str, pd.DataFrame | None] = field(default_factory=dict)
    documents: dict[str, object] = field(default_factory=dict)
    report: Report | None = None

    def write(self, out: Path) -> list[str]:
        """Write every output atomically into ``out`` (made owner-only when missing, as every file in it is;
        parlai_dialeval/atomic.py); returns the file names written."""
        make_folder(out)
        written = []
        for name, frame in self.tables.items():
            if frame is not None:
                write_csv(frame, out / f"{name}.csv")
                written.append(f"{name}.csv")
        for name, document in self.documents.items():
            write_json(document, out / f"{name}.json")
            written.append(f"{name}.json")
        if self.report is not None:
            for name in written:
                self.report.file(name)
            self.report.write()
            written.append("report.html")
        return written


class AnalysisCommand(ParlaiScript):
    """Base of the analysis commands (see the module docstring)."""

    description = ""
    options_title = "Analysis"
    config_class: type = None
    worker_checks = False  # whether --worker-checks (Smith App. B) applies to this analysis
    # whether the command leaves flagged workers out itself (the pairwise ones: after their voter section);
    # else run() does, before analyse (scripts/evidence_option.py)
    excludes_itself = False
    evidence_applies = False  # whether the evidence about participants applies (crowd data: a report section, --exclude-flagged)

    @classmethod
    def setup_args(cls):
        parser = ParlaiParser(False, False, cls.description)
        add_data_args(parser)
        group = parser.add_argument_group(cls.options_title)
        add_config_args(group, cls.config_class)
        if cls.worker_checks:
            add_worker_checks_arg(group)
        if cls.evidence_applies:
            evidence_option.add_args(group, cls.config_class)
        return parser

    def load(self, opt):
        return load_data(opt)

    def analyse(self, data, config, checks, out: Path):
        raise NotImplementedError

    def build_evidence(self, data, config, checks):
        """The evidence about every participant in ``data`` (scripts/evidence_option.py), the worker checks as its
        quality test; a command whose quality test is its own analysis's builds it there (None here)."""
        return evidence_option.build(data, self.opt, config, evidence_option.quality_of(checks))

    def run(self):
        config = config_from_opt(self.opt, self.config_class)
        data = self.load(self.opt)
        checks = None
        everyone = data
        if self.worker_checks:
            data, checks = run_worker_checks(data, self.opt["worker_checks"])
            if checks is not None:
                print(checks.text())
        # the evidence about every participant (analysis/evidence.py), before anyone is left out
        self.evidence, self.excluded = None, bool(self.opt.get("exclude_flagged"))
        if self.evidence_applies:
            self.evidence = self.build_evidence(everyone, config, checks)
            if self.excluded and not self.excludes_itself:
                data = evidence_option.exclude(data, self.evidence)
        out = Path(self.opt["out"])
        result = self.analyse(data, config, checks, out)
        print(f"wrote {', '.join(result.get('written', []))} to {out}")
        return result
