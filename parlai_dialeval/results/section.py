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
import numbers
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

from parlai_dialeval.errors import DialevalError
from parlai_dialeval.options import checked, names
from parlai_dialeval.report import caught_warnings

INTEGER_KINDS = ("positive_int", "non_negative_int", "int")


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


def config_class(name: str, fields: tuple, sections: list[Section], module: str, bases: tuple = (),
                 check: bool = False) -> type:
    """A config dataclass of ``fields`` ((name, type, options.option(...)) each) and every section's own (a
    field two sections share, such as the live chat's style options, once), on ``bases``; with ``check`` each
    instance's fields are checked as the command line checks them (``check_options``)."""
    every = {}
    for entry in (*fields, *(f for section in sections for f in section.config)):
        every.setdefault(entry[0], entry)
    namespace = {"__module__": module, **({"__post_init__": check_options} if check else {})}
    return dataclasses.make_dataclass(name, list(every.values()), bases=bases, namespace=namespace)


def _hint_parts(hint) -> tuple[type, bool]:
    """(the type a value of ``hint`` has, whether None is allowed): (str, True) for ``str | None``."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        base = next(a for a in args if a is not type(None))
        return typing.get_origin(base) or base, type(None) in args
    return typing.get_origin(hint) or hint, False


def check_options(config) -> None:
    """Every option field of ``config`` checked as the command line checks its option, from the field's metadata
    (options.option), so a library call fails as the command does, in one line naming the option, not in a
    statistics library sections later: a number of its ``kind`` (a real int or float: no text, no bool), one of
    its ``choices``, a value its ``parse`` takes (text or its parsed form: stored parsed), a real bool, text; a
    file's option (its metavar a file name) may hold what the file holds, checked where it is read
    (results/user_files.py)."""
    hints = typing.get_type_hints(type(config))
    for f in dataclasses.fields(config):
        meta, value, flag = f.metadata, getattr(config, f.name), "--" + f.name.replace("_", "-")
        if "help" not in meta:  # not an option (a base class's own field)
            continue
        base, optional = _hint_parts(hints[f.name])
        if value is None and optional:
            continue
        if meta.get("parse"):
            value = meta["parse"](value, flag)
        elif meta.get("kind") or base in (int, float):
            kind = meta.get("kind") or base.__name__
            whole = kind in INTEGER_KINDS
            if isinstance(value, bool) or not isinstance(value, numbers.Integral if whole else numbers.Real):
                raise DialevalError(f"{flag} {value!r}: expected {'an integer' if whole else 'a number'}, not "
                                    f"{type(value).__name__}")
            value = checked(flag, kind)(value)
        elif base is bool and not isinstance(value, bool):
            raise DialevalError(f"{flag} {value!r}: expected True or False")
        elif base in (list, tuple):
            if not (isinstance(value, str) or isinstance(value, (list, tuple))
                    and all(isinstance(v, str) for v in value)):
                raise DialevalError(f"{flag} {value!r}: expected comma-separated names or a list of names (text)")
            value = names(value)
        elif base is str and not isinstance(value, str) and not re.search(r"\.\w+$", meta.get("metavar") or ""):
            raise DialevalError(f"{flag} {value!r}: expected text, not {type(value).__name__}")
        if meta.get("choices") and value not in meta["choices"]:
            raise DialevalError(f"{flag} {value!r}: expected one of {', '.join(map(str, meta['choices']))}")
        setattr(config, f.name, value)


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
