"""Importers for ParlAI's own outputs (ParlAI 1.7.2 layouts; mapping in docs/single_model_analysis.md).

- ``parlai-conversations``: Conversations JSON Lines as ``parlai self_chat --outfile X.jsonl`` writes it:
  one conversation per line, ``dialog`` a list of [message, message] exchanges, optional ``context``
  and ``metadata_path`` (the ``.metadata`` file beside it names the model and whether it is a self-chat).
- ``parlai-acute``: ACUTE-Eval pairings (``pairings.jsonl``: ``speakers_to_eval``, ``dialogue_dicts``) and
  ACUTE-Eval results (the analysis script's ``*full*.csv``: one row per judgement).
- ``parlai-model-chat``: model_chat outputs (``*.json`` with ``dialog``, ``workers``,
  ``task_description``), per-message ``problem_data`` annotations and the ``final_rating``.
- ``parlai-per-turn``: turn_annotations_static outputs (``<hit>/<worker>/agent_data.json``).

One module per importer; ``common`` holds the shared readers.
"""
from parlai_dialeval.importers.formats.parlai_formats import acute, conversations, model_chat, per_turn  # noqa: F401
