"""The one interface of a statistic in an analysis's result: a ``Section``.

A section is one module under results/sections/ declaring ``SECTION = Section(...)``: its name, the options it
adds to its analysis's config (dataclass fields made with options.option), ``compute`` (the pure statistics:
the analysis's inputs, its config and the parts computed before it in, its part out, or None where it does not
apply), and what a reader or a file gets from the part: ``tables`` (CSV files by stem), ``summary`` (keys of the
analysis's JSON document) and ``sentences`` (what it says in words). Adding a statistic is that module and one
line in its analysis's list (results/pairwise_result.py ``SECTIONS``, ...); the command's report shows any
section (heading, sentences, tables) and may give it a view of its own (scripts/pairwise_report.py ``VIEWS``).
docs/architecture.md, "A new statistic".
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from parlai_dialeval.report import caught_warnings


def _no_tables(part) -> dict:
    return {}


def _no_summary(part) -> dict:
    return {}


def _no_sentences(part) -> list[str]:
    return []


@dataclass(frozen=True)
class Section:
    name: str
    compute: Callable[[Any, Any, dict], Any]
    tables: Callable[[Any], dict] = _no_tables
    summary: Callable[[Any], dict] = _no_summary
    sentences: Callable[[Any], list[str]] = _no_sentences
    title: str = ""  # the report's heading where the command gives the section no view of its own
    config: tuple = ()  # (name, type, options.option(...)) of each option it adds
    # True where the part replaces the inputs every later section sees (``part.inputs``): the voter tests
    # with --exclude-flagged leave flagged workers' votes out of everything after them
    filters: bool = False


def config_class(name: str, fields: tuple, sections: list[Section], module: str, bases: tuple = ()) -> type:
    """A config dataclass of ``fields`` ((name, type, options.option(...)) each) and every section's own (a
    field two sections share, such as the live chat's style options, once), on ``bases``."""
    every = {}
    for entry in (*fields, *(f for section in sections for f in section.config)):
        every.setdefault(entry[0], entry)
    return dataclasses.make_dataclass(name, list(every.values()), bases=bases, namespace={"__module__": module})


@dataclass
class Parts:
    """The parts of one run, by section name (None where a section did not apply), the library warnings each
    computation raised, and the inputs as the last filtering section left them."""

    inputs: Any
    parts: dict = field(default_factory=dict)
    warnings: dict = field(default_factory=dict)


def run(sections: list[Section], inputs, config) -> Parts:
    """Every section's part in order; each sees the parts before it."""
    done = Parts(inputs)
    for section in sections:
        with caught_warnings() as caught:
            part = section.compute(done.inputs, config, done.parts)
        done.parts[section.name], done.warnings[section.name] = part, list(caught)
        if section.filters and part is not None:
            done.inputs = part.inputs
    return done


def tables(sections: list[Section], parts: dict) -> dict:
    """Every section's tables, in section order (None: a table the data have none of)."""
    return {name: frame for s in sections if parts.get(s.name) is not None for name, frame in s.tables(parts[s.name]).items()}


def summary(sections: list[Section], parts: dict) -> dict:
    return {key: value for s in sections if parts.get(s.name) is not None for key, value in s.summary(parts[s.name]).items()}


def sentences(sections: list[Section], parts: dict) -> dict[str, list[str]]:
    return {s.name: s.sentences(parts[s.name]) for s in sections if parts.get(s.name) is not None}


class Sectioned:
    """What a result with ``parts`` (section name -> part) and ``sections`` (in order) offers: each part as an
    attribute (``result.style``), every table, the JSON summary, what each section says."""

    def __getattr__(self, name: str):
        parts = self.__dict__.get("parts", {})
        if name in parts:
            return parts[name]
        raise AttributeError(name)

    @property
    def tables(self) -> dict:
        """Every table the command writes, by file stem (None: a table the data have none of)."""
        return tables(self.sections, self.parts)

    @property
    def summary(self) -> dict:
        """The analysis's JSON document: each section's summary."""
        return summary(self.sections, self.parts)

    def sentences(self) -> dict[str, list[str]]:
        """What each section says in words."""
        return sentences(self.sections, self.parts)
