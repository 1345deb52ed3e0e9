"""The canonical data model (see docs/data_model.md)."""
from parlai_dialeval.data.dataset import EvalData, from_records, read_jsonl, write_jsonl
from parlai_dialeval.data.schema import FORMAT_VERSION

__all__ = ["EvalData", "FORMAT_VERSION", "from_records", "read_jsonl", "write_jsonl"]
