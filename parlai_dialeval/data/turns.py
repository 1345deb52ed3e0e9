"""Conversation turns kept in Arrow columns until a caller asks for one dict per turn.

A large live-chat study holds millions of turns; as Python dicts they took about half of the loaded
data's memory (1.1 GB of 2.4 GB on the benchmark) and 1.5 s to build, while its analysis only reads
the worker's texts. The columnar loader keeps plain turns (``{speaker, text}`` strings) here;
``EvalData`` builds the dicts only when its ``conversations`` frame is first read, and ``EvalData.turns()``
gives the long table (one row per turn) straight from these columns.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


class TurnColumns:
    """The turns of each conversation of a frame, in columns over every item (turn): ``text`` (Arrow
    strings, in the reader's chunks) and ``codes`` into ``names`` (the speakers: a few names repeat over
    every turn). Conversation ``i`` holds items ``starts[i]:ends[i]``, or no list at all where
    ``valid[i]`` is false; the items of one conversation come before those of the next. Items of no
    conversation (other record types' turns) may lie between. ``keys`` is the order of the two keys
    in the file, kept in the dicts so that they equal (and serialise as) the parsed records."""

    def __init__(self, text: pa.ChunkedArray, codes: np.ndarray, names: list[str], starts: np.ndarray,
                 ends: np.ndarray, valid: np.ndarray, keys: tuple[str, str] = ("speaker", "text")):
        self.text, self.codes, self.names, self.keys = text, codes, names, keys
        self.starts, self.ends, self.valid = starts, ends, valid

    @classmethod
    def from_list_array(cls, column: pa.ChunkedArray, rows: np.ndarray) -> "TurnColumns":
        """The given rows of a list<struct<speaker, text>> column, chunk by chunk (no copy of the texts;
        other rows, e.g. other record types' null turns, are left out)."""
        texts, speakers, starts, ends, shift = [], [], [], [], 0
        for chunk in column.chunks:
            items = chunk.values  # the chunk's every turn, indexed by its offsets as they stand
            offsets = chunk.offsets.to_numpy().astype(np.int64) + shift
            starts.append(offsets[:-1])
            ends.append(offsets[1:])
            texts.append(items.field("text"))
            speakers.append(items.field("speaker"))
            shift += len(items)
        item_type = column.type.value_type
        speakers = pc.dictionary_encode(pa.chunked_array(speakers, item_type.field("speaker").type))
        speakers = speakers.unify_dictionaries()
        names = speakers.chunk(0).dictionary.to_pylist() if speakers.num_chunks else []
        codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in speakers.chunks] or [[]])
        return cls(pa.chunked_array(texts, item_type.field("text").type), codes.astype(np.int32), names,
                   np.concatenate(starts)[rows], np.concatenate(ends)[rows],
                   column.is_valid().to_numpy(zero_copy_only=False)[rows],
                   tuple(item_type.field(i).name for i in range(2)))

    @property
    def complete(self) -> bool:
        """Every conversation has a turns list (a missing one is an error validation must name)."""
        return bool(self.valid.all())

    def lists(self) -> list:
        """One list of ``{speaker, text}`` dicts per conversation (None where it has no list)."""
        first, second = self.keys
        speakers = np.asarray(self.names, dtype=object)[self.codes].tolist()  # one object per name
        texts = self.text.to_pylist()
        pairs = zip(speakers, texts) if first == "speaker" else zip(texts, speakers)
        turns = [{first: a, second: b} for a, b in pairs]
        return [turns[start:end] if ok else None
                for start, end, ok in zip(self.starts.tolist(), self.ends.tolist(), self.valid.tolist())]

    def table(self, ids: pd.Series, speaker: str | None = None) -> pd.DataFrame:
        """One row per turn (see ``turn_table``), straight from the columns; ``ids`` are the
        conversations'."""
        counts = np.where(self.valid, self.ends - self.starts, 0)
        owner = np.repeat(np.arange(len(counts)), counts)
        turn_index = np.arange(len(owner)) - (np.cumsum(counts) - counts)[owner]
        wanted = np.zeros(len(self.codes), bool)
        wanted[self.starts[owner] + turn_index] = True  # in item order, which is the table's
        if speaker is not None:
            code = self.names.index(speaker) if speaker in self.names else -1
            said = self.codes[wanted] == code
            owner, turn_index = owner[said], turn_index[said]
            wanted &= self.codes == code
        # the columns have no time: all None, as the dicts' table infers it
        speakers = pd.array(self.names, dtype="str").take(self.codes[wanted])
        return _table(ids, owner, turn_index, pd.Series(speakers), self.text.filter(pa.array(wanted)).to_pandas(),
                      pd.Series([None] * len(owner), dtype=object))

    @staticmethod
    def concat(parts: list["TurnColumns"]) -> "TurnColumns | None":
        """The conversations of several frames, in order (their items end to end); None where the
        files wrote the two keys in different orders (one order cannot give both files' dicts)."""
        if len(parts) == 1:
            return parts[0]
        if len({p.keys for p in parts}) > 1:
            return None
        names = list(dict.fromkeys(n for p in parts for n in p.names))
        codes = [np.array([names.index(n) for n in p.names], dtype=np.int32)[p.codes] for p in parts]
        shifts = np.cumsum([0] + [len(p.codes) for p in parts[:-1]])
        return TurnColumns(pa.chunked_array([c for p in parts for c in p.text.chunks], parts[0].text.type),
                           np.concatenate(codes), names,
                           np.concatenate([p.starts + s for p, s in zip(parts, shifts)]),
                           np.concatenate([p.ends + s for p, s in zip(parts, shifts)]),
                           np.concatenate([p.valid for p in parts]), parts[0].keys)


def turn_table(ids: pd.Series, turns: pd.Series, speaker: str | None = None) -> pd.DataFrame:
    """One row per turn, conversations in order (only the ``speaker``'s turns where one is named):
    ``conversation_id`` (categorical over the conversations' ids, so a turn's conversation is its code;
    plain values where ids repeat, which only unvalidated data allows), ``turn_index``, ``speaker``,
    ``text`` and ``time``. ``TurnColumns.table`` gives the same table from columns."""
    rows = [(owner, i, t.get("speaker"), t.get("text"), t.get("time"))
            for owner, conversation in enumerate(turns) if isinstance(conversation, list)
            for i, t in enumerate(conversation) if speaker is None or t.get("speaker") == speaker]
    owner, turn_index, speakers, texts, times = (list(c) for c in zip(*rows)) if rows else ([],) * 5
    return _table(ids, np.asarray(owner, dtype=np.int64), np.asarray(turn_index, dtype=np.int64),
                  pd.Series(speakers, dtype="str"), pd.Series(texts, dtype="str"), pd.Series(times))


def _table(ids: pd.Series, owner: np.ndarray, turn_index: np.ndarray, speaker: pd.Series, text: pd.Series,
           time: pd.Series) -> pd.DataFrame:
    ids = pd.Index(ids)
    if ids.is_unique and not ids.hasnans:
        conversation = pd.Series(pd.Categorical.from_codes(owner, categories=ids))
    else:
        conversation = pd.Series(ids.take(owner))
    return pd.DataFrame({"conversation_id": conversation, "turn_index": turn_index, "speaker": speaker,
                         "text": text, "time": time})
