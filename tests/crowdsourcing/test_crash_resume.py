"""Issue 32: kill -9 of a live-chat launch under a crowd, then the same launch again: everyone carries on.

Twenty workers at once (tests/crowdsourcing/page_client.py: the page's packets, its acknowledgements and
its resending of what the server never confirmed), at a short human pace, through the real router
(`dialeval launch live_chat_da conf=offline_small`). Once every worker is under way, mid-conversation, the
server and its router are killed with SIGKILL (``CliRun.crash``) while some pages wait for a confirmation and launched again on the same data
(``CliRun.relaunch``); the workers reload until it answers and finish their HIT. Checked on the export:
every HIT submitted, each exported once (one assignment per worker, its three conversations complete),
every message the server confirmed stored once, no message stored twice, each conversation's messages in
the order the worker sent them.
"""
from __future__ import annotations

import asyncio
import json
import time
from collections import Counter

import httpx
import pytest

from parlai_dialeval.testing.ports import free_port
from parlai_dialeval.tls import shared_tls_context

from .page_client import PageClient
from .protocol_harness import CliRun

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
WORKERS = 20
INPUTS = 3


async def crowd_across_a_crash(runs: list[CliRun], clients: list[PageClient]) -> None:
    """The clients to the end; the first of ``runs`` crashes mid-way and its relaunch is appended."""
    run = runs[0]

    async def crash_when_everyone_is_chatting():
        # mid-conversation for all (each has sent a message), some with an act the server has not confirmed
        give_up = time.time() + 300  # then the test fails: "the server was never killed"
        while True:
            while not (all(c.sent for c in clients) and any(c.outbox for c in clients)):
                if time.time() > give_up or all(c.done for c in clients):
                    return
                await asyncio.sleep(0.05)
            # the server frozen, the pages read the confirmations already on their way: what is still in an
            # outbox then was never confirmed (without this the last ack could land before the kill, and
            # nothing was left to resend: failed once under load)
            run.freeze(True)
            await asyncio.sleep(0.5)
            if any(c.outbox for c in clients):
                break
            run.freeze(False)
        run.crash()
        runs.append(await asyncio.to_thread(run.relaunch))
        for client in clients:  # bounded: the relaunch's start-up varies with the machine's load
            client.deadline = time.time() + 300

    async with httpx.AsyncClient(verify=shared_tls_context(), limits=httpx.Limits(max_connections=len(clients) + 5)) as http:
        await asyncio.gather(*(c.run(http) for c in clients), crash_when_everyone_is_chatting())


def test_kill_9_under_twenty_workers_loses_and_doubles_nothing(tmp_path):
    port = free_port()
    overrides = ["conf=offline_small", f"mephisto.architect.port={port}", "mephisto.task.task_name=crash_lc",
                 f"mephisto.blueprint.num_conversations={WORKERS}", "mephisto.task.max_num_concurrent_units=0",
                 f"live_chat.min_inputs={INPUTS}", "live_chat.seed=0",
                 "mephisto.blueprint.router_claims_per_source=0"]  # twenty workers from one address
    run = CliRun("live_chat_da", tmp_path, overrides, real_process=True)
    clients = [PageClient(f"crash{i:02d}", port, INPUTS, think=0.5, deadline=time.time() + 900)
               for i in range(WORKERS)]
    runs = [run]
    try:
        asyncio.run(crowd_across_a_crash(runs, clients))
    finally:
        for launched in runs:
            launched.stop()
    assert len(runs) == 2, "the server was never killed"
    relaunched = runs[-1].log()
    assert f"Resuming task 'crash_lc': its run 1 was interrupted with 0 of {WORKERS}" in relaunched
    assert all(c.done for c in clients), [(c.name, c.seen, c.state, c.outbox, c.resent) for c in clients if not c.done]

    out = tmp_path / "crash_lc.jsonl"
    done = runs[-1].export("crash_lc", out)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    convs = [r for r in records if r["type"] == "conversation"]
    assert done.stdout.count("continued after a restart") == WORKERS, done.stdout[-3000:]
    by_worker = {}
    for conv in convs:
        by_worker.setdefault(conv["worker_id"], []).append(conv)
    assert len(by_worker) == WORKERS
    for worker, mine in by_worker.items():
        assert len({c["assignment_id"] for c in mine}) == 1, f"{worker}: exported more than once"
        assert sorted(c["slot"] for c in mine) == [0, 1, 2] and {c["status"] for c in mine} == {"complete"}
    stored = Counter(t["text"] for c in convs for t in c["turns"] if t["speaker"] == "human")
    confirmed = [text for c in clients for text in c.confirmed]
    assert [t for t in confirmed if stored[t] != 1] == []  # every confirmed message stored, once
    assert [t for t, n in stored.items() if n > 1] == []  # nothing stored twice
    for client in clients:  # in the order sent: "NAME message K: ..." with K growing
        mine = [c for c in convs if c["worker_id"].startswith(client.name)]
        order = [int(t["text"].split(" message ")[1].split(":")[0]) for c in sorted(mine, key=lambda c: c["slot"])
                 for t in c["turns"] if t["speaker"] == "human"]
        assert order == sorted(order), (client.name, order)
    assert sum(len(c.resent) for c in clients) > 0  # the pages resent what was never confirmed
    crashed = sum("connection lost, reloading" in c.seen for c in clients)
    assert crashed == WORKERS  # every worker lived through the crash
