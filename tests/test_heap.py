"""parlai_dialeval/gc_freeze.py: the heap kept out of garbage collections, and the Holm correction that runs one."""
from __future__ import annotations

import gc

import numpy as np
from statsmodels.stats.multitest import multipletests

from parlai_dialeval.analysis.multiple_testing import adjust
from parlai_dialeval.gc_freeze import frozen_heap


def _frozen(thing) -> bool:
    """Whether ``thing`` is in the permanent generation: gc.get_objects() lists the three collected generations
    only. The freeze count cannot say it: objects frozen earlier that die meanwhile leave it (issue 50 item 15:
    it rose by 982 for 1,000 new lists in a full run, where other frozen objects died in between)."""
    return not any(obj is thing for obj in gc.get_objects())


def test_blocks_nest_and_the_outermost_unfreezes():
    assert gc.get_freeze_count() == 0
    doomed = [[i] for i in range(2000)]  # frozen by the outer block, then freed inside it
    with frozen_heap():
        assert gc.get_freeze_count() > 0 and _frozen(doomed)
        made_between = [[i] for i in range(1000)]  # lists: always tracked (an empty dict is not)
        del doomed[:]  # frozen objects dying between the blocks, as other tests' objects may
        assert not _frozen(made_between) and not _frozen(made_between[0])
        with frozen_heap():
            assert _frozen(made_between) and _frozen(made_between[-1])
        assert _frozen(made_between) and _frozen(made_between[-1])  # the inner block left them frozen
    assert gc.get_freeze_count() == 0 and not _frozen(made_between)


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


def test_a_launch_serves_with_what_start_up_loaded_frozen(tmp_path, monkeypatch):
    # dialeval launch's server: a full collection scanning ParlAI, torch and the bots held every reply 0.26 s
    # (bench_router_flood.py --prolific, a gc callback in the server); so it serves inside a frozen block
    import os
    import signal

    from parlai_dialeval.crowdsourcing.platform import runner
    from parlai_dialeval.scripts import launch

    loaded = [[i] for i in range(1000)]
    seen = []

    class Launched:  # runner.LaunchedTask as far as the command uses it
        def serve(self, say):
            seen.append(_frozen(loaded))
            served = [0]
            seen.append(_frozen(served))

    monkeypatch.setattr(runner, "start", lambda *args, **kwargs: Launched())
    monkeypatch.setattr(launch, "banner", lambda *args: "banner")
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    umask = os.umask(0o022)
    os.umask(umask)
    try:
        launch.Launch.main("live_chat_da", "--mephisto-data", str(tmp_path / "mephisto"))
    finally:  # the command sets these for its own process
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        os.umask(umask)
    assert seen == [True, False]
    assert gc.get_freeze_count() == 0 and not _frozen(loaded)
