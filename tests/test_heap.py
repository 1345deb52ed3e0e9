"""parlai_dialeval/gc_freeze.py: the heap kept out of garbage collections, and the Holm correction that runs one."""
from __future__ import annotations

import gc

import numpy as np
from statsmodels.stats.multitest import multipletests

from parlai_dialeval.analysis.multiple_testing import adjust
from parlai_dialeval.gc_freeze import frozen_heap


def test_blocks_nest_and_the_outermost_unfreezes():
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        outer = gc.get_freeze_count()
        assert outer > 0
        made_between = [[i] for i in range(1000)]  # lists: always tracked (an empty dict is not)
        with frozen_heap():
            assert gc.get_freeze_count() >= outer + len(made_between)
        assert gc.get_freeze_count() >= outer + len(made_between)  # the inner block left them frozen
    assert gc.get_freeze_count() == 0


def test_holms_own_collection_sees_the_heap_frozen_and_the_values_are_statsmodels(monkeypatch):
    # statsmodels 0.15's Holm calls gc.collect() (multitest.py); the objects alive before it must be frozen then
    alive = [{"vote": i} for i in range(100_000)]
    seen = []
    collect = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *args: seen.append(gc.get_freeze_count()) or collect(*args))
    p = np.array([0.01, 0.04, np.nan, 0.03, 0.2])
    adjusted = adjust(p, "holm")
    assert seen and seen[0] >= len(alive)
    assert gc.get_freeze_count() == 0
    finite = np.isfinite(p)
    assert np.isnan(adjusted[2])
    # Holm by hand: sorted 0.01, 0.03, 0.04, 0.2 times 4, 3, 2, 1, running maximum
    assert np.allclose(adjusted[finite], [0.04, 0.09, 0.09, 0.2], rtol=1e-12)
    monkeypatch.undo()
    assert list(multipletests(p[finite], method="holm")[1]) == list(adjusted[finite])
