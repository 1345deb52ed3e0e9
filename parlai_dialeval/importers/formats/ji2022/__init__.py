"""Importers for Ji et al. (2022) live-chat direct assessment data (TianboJi/Dialogue-Eval).

Two formats, one canonical result (docs/live_chat_analysis.md, "Importing Ji et al. 2022"):

``ji2022-mturk``
    The raw MTurk batch CSVs, ``raw_mturk_csv/<run>/Combined_Batches_*.csv``: one row per assignment,
    the worker's six conversations and ratings inside the ``Answer.taskAnswers`` JSON. A folder or the
    CSV files may be given. This is the complete source: empty submissions, durations, seeds.
``ji2022-dialogues``
    The released per-dialogue JSON, ``dialogue_data/{pass,fail}_free(runN).json``. It lacks the empty
    submissions, durations and seeds, and its robotic and repetitive scores are already reversed
    (100 - x): the importer undoes that, so ratings always hold what the worker entered.

Canonical mapping (shared with this project's own live-chat task): one ``study`` per run, named
``ji2022-<run>`` (e.g. ``ji2022-FreeTopicRound1``), declaring the seven statements and
``qc_models: ["qc"]``; one ``conversation`` per slot (id ``<AssignmentId>_<slot>``, task
``live_chat_da``); seven raw ``rating`` records per conversation. Models keep the ParlAI names the
study used, with ``_p`` for the persona variant (seed <= 500), e.g. ``biencoder_p``; the paper's labels
(``Ap``) are in the study's ``meta.model_labels``. Empty submissions are skipped, reported, and listed
in the study's ``meta.empty_submissions`` so analyses can count their workers and assignments.

Modules: ``study`` (constants, study record, report), ``mturk`` and ``release`` (one importer each).
"""
from __future__ import annotations

from parlai_dialeval.importers.formats.ji2022.mturk import import_mturk
from parlai_dialeval.importers.formats.ji2022.release import import_dialogues
from parlai_dialeval.importers.formats.ji2022.study import (CRITERIA, DIALOGUES, MODELS, MTURK, QC_MODEL, TASK,
                                                            model_descriptions, model_labels, study_name,
                                                            study_record)

__all__ = ["CRITERIA", "DIALOGUES", "MODELS", "MTURK", "QC_MODEL", "TASK", "import_dialogues", "import_mturk",
           "model_descriptions", "model_labels", "study_name", "study_record"]
