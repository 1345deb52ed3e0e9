"""The canonical data model (see docs/data_model.md).

Importing it keeps pandas' text columns in Python strings (``mode.string_storage = "python"``), not pandas 3's
default Arrow: the analyses index, group and factorise small text columns many times over, and each pass converted
between Python and Arrow (small pairwise analyses 1.34x faster with Python strings: benchmarks/README.md, "The test
suite"). Set for the whole process, so that no frame joins a column of the other storage (a merge of the two gives
object keys).
"""
import pandas as pd
from parlai_dialeval.data.dataset import EvalData, from_records, read_jsonl, write_jsonl
from parlai_dialeval.data.schema import FORMAT_VERSION

pd.set_option("mode.string_storage", "python")

__all__ = ["EvalData", "FORMAT_VERSION", "from_records", "read_jsonl", "write_jsonl"]
