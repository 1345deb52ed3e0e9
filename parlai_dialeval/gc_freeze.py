"""The cyclic garbage collector kept off objects that live on (the standard library's gc.freeze).

A long analysis holds millions of loaded records, and statsmodels' Holm correction runs a full collection on
every call: each scan of the heap costs time and finds nothing. A launch serves inside one (scripts/launch.py):
a full collection scanning what start-up loaded held every participant's reply. Blocks nest: the outermost one
unfreezes.
"""
from __future__ import annotations

import contextlib
import gc


@contextlib.contextmanager
def frozen_heap():
    """Objects that exist when the block starts are left out of garbage collections until it ends."""
    outermost = gc.get_freeze_count() == 0
    gc.freeze()
    try:
        yield
    finally:
        if outermost:
            gc.unfreeze()
