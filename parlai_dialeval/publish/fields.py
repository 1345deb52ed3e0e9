"""How each field of the data model is published: the one place that decides it (docs/publishing.md).

Every field of docs/data_model.md (``FORMS``, a turn's ``TURN_FORMS``, a criterion's ``CRITERION_FORMS``)
has one form:

- ``KEEP``: published as it is (numbers, flags, model and scale names: nothing a participant wrote);
- ``PSEUDONYM``: worker, assignment and HIT ids become keyed pseudonyms (publish/privacy.py);
- ``REFERENCE``: names, published as names: those other records point at (conversation and item ids, study
  names), speakers, models, and the keys of free-text dicts (a persona's speaker, a meta key). A name that is
  one of the study's ids becomes that id's pseudonym (the very one its ``worker_id`` column holds); inside a
  name, the study's ids, unknown Prolific- and MTurk-style ids, listed names, e-mail addresses and phone
  numbers standing alone become keyed pseudonyms of their kind (``Publication.reference``), so names stay
  distinct, the same value reads the same in every field and the references still join;
- ``TEXT``: free text, scrubbed (a string; in a list or dict every string, a key published as a name, a key
  naming an id pseudonymising its value, ``id_field``, a ``speaker`` key's value a name);
- ``TURNS`` and ``CRITERIA``: lists of dicts whose keys have their own forms;
- or a function of the value, for a field published only in a coarse form: declare it here, and the folder, the
  card and the round trip follow.

How answers were made (``provenance``) and answers to check items (``check``) are cut down to their coarse form
before anything else (publish/coarse.py: only each text's pasted share, rounded; check answers left out):
``COARSE`` marks them, published as coarse.py left them.

A field with no form stops the publication (``test_every_field_has_a_published_form`` keeps the table
complete), so no new field leaves the machine before someone has decided how.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from parlai_dialeval.data.parquet import CONFIGS
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.publish.detectors import KnownIds
from parlai_dialeval.publish.privacy import Pseudonymiser, ScrubReport, Scrubbed, Scrubber
from parlai_dialeval.publish.textview import view

KEEP, PSEUDONYM, REFERENCE, TEXT, TURNS, CRITERIA = "keep", "pseudonym", "reference", "text", "turns", "criteria"
COARSE = KEEP  # already in the coarse form publish/coarse.py gives it

_COMMON = {"type": KEEP, "format_version": KEEP, "study": REFERENCE, "meta": TEXT}
_PEOPLE = {"worker_id": PSEUDONYM, "assignment_id": PSEUDONYM, "unverified": KEEP, "duration": KEEP}
FORMS = {
    "study": {**_COMMON, "name": REFERENCE, "criteria": CRITERIA, "qc_models": REFERENCE, "description": TEXT},
    "conversation": {**_COMMON, **_PEOPLE, "id": REFERENCE, "models": REFERENCE, "hit_id": PSEUDONYM, "slot": KEEP,
                     "task": KEEP, "turns": TURNS, "topic": TEXT, "topic_attitude": KEEP, "personas": TEXT,
                     "assignment_duration": KEEP, "status": KEEP, "submission": KEEP, "feedback": TEXT,
                     "provenance": COARSE},
    "rating": {**_COMMON, **_PEOPLE, "conversation_id": REFERENCE, "model": REFERENCE, "criterion": KEEP, "scale": KEEP,
               "scale_min": KEEP, "scale_max": KEEP, "value": KEEP, "turn_index": KEEP, "reference_value": KEEP,
               "provenance": COARSE, "check": COARSE},
    "comparison": {**_COMMON, **_PEOPLE, "item_id": REFERENCE, "model_a": REFERENCE, "model_b": REFERENCE, "choice": KEEP,
                   "turn_index": KEEP, "question": TEXT, "justification": TEXT, "context": TEXT, "response_a": TEXT,
                   "response_b": TEXT, "conversation_a": REFERENCE, "conversation_b": REFERENCE, "automatic": KEEP,
                   "onboarding": KEEP, "draw_probability": KEEP, "draw_pool_size": KEEP, "draw_floor": KEEP,
                   "weight": KEEP, "sampling_probability": KEEP, "tie_kind": KEEP, "anonymity_leak": KEEP,
                   "duplicate_prompt": KEEP, "provenance": COARSE, "check": COARSE},
}
TURN_FORMS = {"speaker": REFERENCE, "text": TEXT, "time": KEEP, "meta": TEXT, "provenance": COARSE}
CRITERION_FORMS = {"name": KEEP, "positive": KEEP, "scale": KEEP, "min": KEEP, "max": KEEP, "question": TEXT,
                   "label": TEXT}
RECORD_KEY = {"study": "name", "conversation": "id", "rating": "conversation_id", "comparison": "item_id"}

# A key of a free-text dict (meta) whose value is an id: it names one of these, last (WorkerId, PROLIFIC_PID,
# mephisto_worker_id, HITId, session_id) or alone; the pseudonym's namespace is the field's.
_ID_WORDS = {"worker": "worker_id", "participant": "worker_id", "pid": "worker_id", "assignment": "assignment_id",
             "submission": "assignment_id", "session": "assignment_id", "hit": "hit_id"}
_KEY_WORDS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SPACING = re.compile(r"[\s._'’-]+")  # between a name's parts (publish/detectors.py, Names)


def fields_with(form: str) -> dict[str, list[str]]:
    """Record type -> its fields published in ``form`` (for the manifest and the card)."""
    return {t: [f for f, how in forms.items() if how == form] for t, forms in FORMS.items()}


def id_field(key) -> str | None:
    """The id field a free-text dict's ``key`` names (``worker_id`` for WorkerId), or None."""
    words = [w.lower() for w in _KEY_WORDS.findall(str(key))]
    named = [w for w in words if w in _ID_WORDS]
    if named and (len(words) == 1 or words[-1] in ("id", "ids", "pid", "name")):
        return _ID_WORDS[named[-1]]
    return None


def study_ids(studies: list[dict], frames: dict[str, pd.DataFrame]) -> dict[str, str]:
    """Every worker, assignment, HIT and participant id the study holds (raw id -> its field): the id
    columns and, in any free-text dict, values under a key naming an id."""
    found: dict[str, str] = {}

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                field = id_field(key)
                for one in (item if isinstance(item, list) else [item]) if field else ():
                    if isinstance(one, str):
                        found.setdefault(one, field)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for record_type, frame in frames.items():
        for name, form in FORMS[record_type].items():
            if name not in frame.columns:
                continue
            if form == PSEUDONYM:
                for value in frame[name].dropna().unique():
                    found.setdefault(str(value), name)
            elif form in (TEXT, TURNS):
                for value in frame[name].dropna():
                    if isinstance(value, (dict, list)):
                        walk(value)
    for study in studies:
        walk(study.get("meta"))
    return found


class Publication:
    """The study's records in their published form: pseudonyms, references rewritten, free text scrubbed
    (each distinct text once), with ``report`` of every replacement."""

    def __init__(self, pseudonymise: Pseudonymiser, scrubber: Scrubber, known: KnownIds):
        self.pseudonymise, self.scrubber, self.known, self.report = pseudonymise, scrubber, known, ScrubReport()
        self._references: dict[str, tuple[str, tuple[str, ...]]] = {}
        self.renamed: dict[str, str] = {}  # every name published otherwise (the card's headline follows it)

    def _name(self, value: str) -> tuple[str, tuple[str, ...]]:
        """A name's published form, and the kinds found in it that are not the study's own ids (reported)."""
        out = self._references.get(value)
        if out is not None:
            return out
        field = self.known.fields.get(value)
        if field is not None:  # the name IS one of the study's ids (a worker as a speaker), however short
            out = (self.pseudonymise(field, value), ())
        else:
            seen, pieces, kinds, end = view(value), [], [], 0
            for start, stop, kind, view_start, view_end in self.scrubber.name_findings(seen):
                found = seen.text[view_start:view_end]
                owner = self.known.owner.get(found.casefold()) if kind == "id" else None
                if owner:
                    replacement = self.pseudonymise(*owner)
                else:  # unknown ids keyed as written; names, addresses and numbers whatever their spacing and case
                    replacement = self.pseudonymise(kind, found if kind == "id" else _SPACING.sub("", found.casefold()))
                    kinds.append(kind)
                pieces += [value[end:start], replacement]
                end = stop
            out = ("".join(pieces) + value[end:], tuple(kinds))
        self._references[value] = out
        if out[0] != value:
            self.renamed[value] = out[0]
        return out

    def reference(self, value: str) -> str:
        """The name ``value`` published: the study's ids as their pseudonyms, other ids, listed names, e-mail
        addresses and phone numbers as keyed pseudonyms of their kind (``id-``, ``name-``, ``email-``, ``phone-``)."""
        return self._name(value)[0]

    def _reference(self, value: str, place: tuple, field: str) -> str:
        """A name at ``place`` (configuration, row, record id), field path ``field``: what was found in it reported."""
        out, kinds = self._name(value)
        if kinds:
            self.report.add({"config": place[0], "row": place[1], "id": place[2], "field": field}, Scrubbed(out, kinds))
        return out

    def _text(self, value, place: tuple, field: str):
        """Free text at ``place`` (configuration, row, record id), field path ``field``."""
        if isinstance(value, str):
            scrubbed = self.scrubber.scrub(value)
            if scrubbed.kinds or scrubbed.left:
                self.report.add({"config": place[0], "row": place[1], "id": place[2], "field": field}, scrubbed)
            return scrubbed.text
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                published = self._reference(key, place, f"{field} (key)") if isinstance(key, str) else key
                path, named = f"{field}.{published}", id_field(key)  # the path names the key as published
                if named and isinstance(item, str):
                    item = self.pseudonymise(named, item)
                elif named and isinstance(item, list):
                    item = [self.pseudonymise(named, i) if isinstance(i, str) else i for i in item]
                elif key == "speaker" and isinstance(item, str):  # a context's turns: the speaker as in turns
                    item = self._reference(item, place, path)
                else:
                    item = self._text(item, place, path)
                out[published] = item
            return out
        if isinstance(value, list):
            return [self._text(item, place, f"{field}[{i}]") for i, item in enumerate(value)]
        return value

    def _items(self, items, forms: dict, place: tuple, field: str):
        """A list of dicts (turns, criteria), each key in its form (an undeclared one as free text)."""
        if not isinstance(items, list):
            return self._text(items, place, field)
        return [{key: self._value(forms.get(key, TEXT), value, place, f"{field}[{i}].{key}")
                 for key, value in item.items()} if isinstance(item, dict)
                else self._text(item, place, f"{field}[{i}]") for i, item in enumerate(items)]

    def _value(self, form, value, place: tuple, field: str):
        """``value`` of the field ``field`` (its path for the report; its name for a pseudonym) in ``form``."""
        if value is None or form == KEEP:
            return value
        if form == PSEUDONYM:
            return self.pseudonymise(field, value) if isinstance(value, str) else value
        if form == REFERENCE:
            if isinstance(value, str):
                return self._reference(value, place, field)
            if isinstance(value, (list, tuple, np.ndarray)):  # models, qc_models
                return [self._reference(v, place, f"{field}[{i}]") if isinstance(v, str) else v
                        for i, v in enumerate(value)]
            return value
        if form == TEXT:
            return self._text(value, place, field)
        if form in (TURNS, CRITERIA):
            return self._items(value, TURN_FORMS if form == TURNS else CRITERION_FORMS, place, field)
        return form(value)

    def _texts(self, values: list, config: str, ids: list, name: str) -> list:
        """A free-text column; a text repeats on every vote of its item: the scrubber's memo scrubs it once."""
        out, scrub, report = [], self.scrubber.scrub, self.report
        for row, value in enumerate(values):
            if isinstance(value, str):
                scrubbed = scrub(value)
                if scrubbed.kinds or scrubbed.left:
                    report.add({"config": config, "row": row, "id": ids[row], "field": name}, scrubbed)
                out.append(scrubbed.text)
            else:
                out.append(self._text(value, (config, row, ids[row]), name))
        return out

    def studies(self, studies: list[dict]) -> list[dict]:
        forms, out = FORMS["study"], []
        for row, study in enumerate(studies):
            _refuse_undeclared("study", study)
            place = (CONFIGS["study"], row, self.reference(study["name"]))
            out.append({key: self._value(forms[key], value, place, key)
                        for key, value in study.items() if not key.startswith("_")})
        return out

    def frame(self, record_type: str, frame: pd.DataFrame) -> pd.DataFrame:
        """The frame's records in their published form (private ``_`` columns left out)."""
        forms, frame, config = FORMS[record_type], frame.reset_index(drop=True), CONFIGS[record_type]
        _refuse_undeclared(record_type, frame.columns)
        ids = [self.reference(v) if isinstance(v, str) else v for v in _objects(frame[RECORD_KEY[record_type]])]
        out = pd.DataFrame(index=frame.index)
        for name in (c for c in frame.columns if not c.startswith("_")):
            form = forms[name]
            if frame[name].isna().all():  # a field no record holds (most of the schema's, in most studies)
                out[name] = pd.Series(None, index=out.index, dtype=object)
            elif form == KEEP:
                out[name] = frame[name]
            elif form == TEXT:  # the common case inline: a million votes' texts
                out[name] = pd.Series(self._texts(_objects(frame[name]), config, ids, name), dtype=object)
            else:
                out[name] = pd.Series([self._value(form, value, (config, row, ids[row]), name)
                                       for row, value in enumerate(_objects(frame[name]))], dtype=object)
        return out


def _refuse_undeclared(record_type: str, names) -> None:
    missing = [n for n in names if not str(n).startswith("_") and n not in FORMS[record_type]]
    if missing:
        raise DialevalError(f"{record_type} field(s) {', '.join(map(str, missing))} have no published form: declare "
                            "each in parlai_dialeval/publish/fields.py (FORMS) before publishing them")


def _objects(column: pd.Series) -> list:
    """A column as a list of Python values, missing ones None (to_numpy: iterating Arrow-backed strings is slow)."""
    values = column.to_numpy(dtype=object, copy=True)
    values[column.isna().to_numpy()] = None
    return values.tolist()
