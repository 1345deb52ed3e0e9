"""Fuzzing the canonical loader: any input either loads or fails with a DataError, never a crash."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parlai_dialeval.data import read_jsonl
from parlai_dialeval.errors import DataError

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10)

FIELD_NAMES = ["type", "id", "models", "turns", "speaker", "text", "conversation_id", "worker_id", "model",
               "criterion", "scale", "value", "scale_min", "scale_max", "turn_index", "item_id", "model_a",
               "model_b", "choice", "name", "criteria", "format_version", "meta", "context"]
records = st.dictionaries(
    st.sampled_from(FIELD_NAMES), json_values, max_size=10).map(
    lambda r: r | {"type": r.get("type") if isinstance(r.get("type"), str) else "rating"})
typed = st.fixed_dictionaries({"type": st.sampled_from(["study", "conversation", "rating", "comparison"])},
                              optional={k: json_values for k in FIELD_NAMES[1:]})


def _load_or_data_error(path):
    try:
        read_jsonl([path])
    except DataError as error:
        assert str(path) in str(error)


@SETTINGS
@given(st.binary(max_size=300))
def test_arbitrary_bytes(tmp_path, blob):
    path = tmp_path / "f.jsonl"
    path.write_bytes(blob)
    _load_or_data_error(path)


@SETTINGS
@given(st.lists(records | typed, min_size=1, max_size=5))
def test_arbitrary_records(tmp_path, items):
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in items))
    _load_or_data_error(path)
