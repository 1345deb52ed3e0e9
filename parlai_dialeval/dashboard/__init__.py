"""The researcher's dashboard of a running study (``dialeval dashboard TASK``, ``dialeval launch --dashboard``):
``summary`` (pure figures from the export's records), ``source`` (reading the task's data, review actions
through the Prolific review code), ``adaptive_view``, ``app`` (the Flask pages) and ``server``."""
