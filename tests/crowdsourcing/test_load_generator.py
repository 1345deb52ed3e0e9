"""The load generator of issue 32 at a tiny scale, so that it cannot rot: benchmarks/bench_load.py runs 2
live-chat participants split over two servers (``--servers 2``: one each), 1 PW-Turn participant
(onboarding included, one server), each from an address of its own, and 2 live-chat participants behind one
address (``--lab 2``, named as the lab's) through the real routers and servers, against the fake endpoint, at a
twentieth of human pace. Every message the server confirmed must be in the
export, every HIT done, no unit exported twice, and the platform's latency measured for every action.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from needs import needs

from parlai_dialeval.compat import mephisto_router as compat_router

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # three real launches and their node routers: minutes, not seconds
def test_tiny_ramp_loses_nothing(tmp_path):
    if shutil.which("node") is None or not (compat_router.ROUTER_DIR / "node_modules" / "ws").is_dir():
        needs(f"node or the router dependencies ({compat_router.ROUTER_DIR}/node_modules) are missing: run install.sh")
    rows_file = tmp_path / "rows.jsonl"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/bench_load.py"), "--live", "2", "--pw-turn", "1", "--baseline", "0",
         "--inputs", "2", "--turns", "2", "--pace", "0.05", "--abandon", "0", "--arrival", "1", "--duration", "150",
         "--servers", "2", "--lab", "2", "--out", str(rows_file)],  # free ports for both servers and the fake bots
        capture_output=True, text=True, timeout=500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {(row["task"], row["addresses"]): row for row in map(json.loads, rows_file.read_text().splitlines())}
    assert set(rows) == {("live_chat", "one each"), ("pw_turn", "one each"), ("live_chat", "one (the lab's)")}
    live, pw, lab = rows["live_chat", "one each"], rows["pw_turn", "one each"], rows["live_chat", "one (the lab's)"]
    # every participant placed and every finished HIT handed in; the lab's two behind one address too
    assert [(row["placed"], row["submits_refused"]) for row in (live, pw, lab)] == [(2, 0), (1, 0), (2, 0)]
    assert (lab["done"], lab["lost"]) == (2, 0), lab
    # one live-chat participant on each server (each on a router of its own), both servers exported:
    # 3 complete conversations per HIT
    assert (live["servers"], pw["servers"], live["complete_convs"]) == (2, 1, 6), (live, pw)
    # 2 participants x 3 conversations x 2 messages; PW-Turn: 1 message (the opening is the world's)
    assert (live["sent"], live["stored"], live["lost"]) == (12, 12, 0), live
    assert (pw["sent"], pw["stored"], pw["lost"]) == (1, 1, 0), pw
    for row, hits in ((live, 2), (pw, 1)):
        assert row["done"] + row["left"] == hits, row
        assert row["units_twice"] == 0 and row["doubled"] == 0 and row["tracebacks"] == 0, row
        assert row["platform"] != "-", row
    assert set(pw["by_action"]) >= {"onboarding", "onboarded", "message", "choose"}, pw


@pytest.mark.parametrize("task", ["live_chat_da", "pw_turn"])
def test_every_scaling_preset_is_a_launch_the_blueprint_accepts(task):
    """bench_load.py's baseline (``--settings before``, its default ``--baseline 50``) launched with Mephisto's 15 s
    ping beside the later default reclaim time of 60 s, which the blueprint refuses: the default command failed at
    its first step."""
    from parlai_dialeval.crowdsourcing.platform import scaling
    from parlai_dialeval.crowdsourcing.platform.blueprint import check_router_times
    from parlai_dialeval.crowdsourcing.platform.config import compose
    from parlai_dialeval.crowdsourcing.platform.registry import get_task

    spec = get_task(task)
    for preset in scaling.PRESETS:
        check_router_times(compose(spec, ["conf=endpoints", *scaling.overrides(preset)]).mephisto.blueprint)
