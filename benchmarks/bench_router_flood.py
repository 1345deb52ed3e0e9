"""Honest participants while strangers flood the router (issue 38): the same chat with and without an attack.

`dialeval launch live_chat_da conf=offline_small` as it runs for real (LocalArchitect: the Mephisto server and
the node router on 127.0.0.1). Wave 1: WORKERS workers (tests/crowdsourcing/page_client.py, the page's
protocol) do a whole HIT each. Wave 2, same launch: WORKERS more do the same while
- an outsider without a session (one address of its own, 127.0.0.50) floods every route that needs none:
  thirty 16 KB `mephisto_task_version` reports at once, then pipelined GETs of `/`, `/task_config.json`,
  `/is_alive`, `/get_timestamp`, `/task_index`, malformed POSTs of `/request_agent`, `/submit_task`,
  `/log_error`, in rounds for as long as the wave lasts, every request with a new `X-Forwarded-For` (issue
  52: the router believed that header from any loopback peer, so each request was a fresh source), and opens
  300 websockets, each with a new `X-Forwarded-For`, held open for the wave;
- a participant with a session of her own sends packets Mephisto's server could not read: `log_error`
  without data or with `data: 5`, live updates nested 2,000 and 100,000 levels deep, text with an unpaired
  surrogate, 20 a second.
Every honest worker has a loopback address of its own (127.1.x.y), as on the internet. Prints each wave's
reply latency (send -> bot reply on the socket) p50/p95/p99, the ratio attacked / quiet, messages sent,
confirmed and stored (the export), lost (confirmed, not stored: must be 0), and what the outsider got.

    .venv/bin/python benchmarks/bench_router_flood.py [--workers 20] [--port 3460]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import sys
import time
from pathlib import Path

import httpx
import numpy as np
import websockets

import bench_router_load  # benchmarks/, beside this script
import load_generator

STRANGER = "127.0.0.50"  # the outsider's own address
HOARDED = 300  # websockets the outsider tries to hold open


def rotating() -> str:
    """A new X-Forwarded-For for each request: before issue 52, a new source with a full budget every time."""
    return f"198.51.{random.randrange(256)}.{random.randrange(1, 255)}"


async def pipelined(port: int, requests: list[bytes]) -> list[int]:
    """Requests written at once on one connection from the outsider's address; their HTTP statuses."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(STRANGER, 0))
    writer.write(b"".join(requests))
    await writer.drain()
    answers = b""
    try:
        while answers.count(b"HTTP/1.1 ") < len(requests):
            chunk = await asyncio.wait_for(reader.read(1 << 20), 30)
            if not chunk:
                break
            answers += chunk
    except asyncio.TimeoutError:
        pass
    finally:
        writer.close()
    return [int(part[:3]) for part in answers.split(b"HTTP/1.1 ")[1:]]


def request(method: str, path: str, body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: {rotating()}\r\n"
    if method == "POST":
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


async def outsider(port: int, until, counts: dict) -> None:
    version = "9" * 16_000
    transport = httpx.AsyncHTTPTransport(local_address=STRANGER)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30, transport=transport) as http:
        await asyncio.gather(*(http.get("/task_config.json", params={"mephisto_task_version": f"{i}{version}"},
                                        headers={"X-Forwarded-For": rotating()}) for i in range(30)))
    hoard = asyncio.create_task(hoarded_sockets(port, until, counts))
    while not until():
        round_ = [request("GET", "/"), request("GET", f"/task_config.json?mephisto_task_version={version}"),
                  request("GET", "/is_alive"), request("GET", "/get_timestamp"), request("GET", "/task_index"),
                  request("POST", "/request_agent", b'{"provider_data": 5}'), request("POST", "/submit_task", b"{broken"),
                  request("POST", "/log_error", b'{"USED_AGENT_ID": "1", "error_data": {"text": "x"}}')]
        for status in await pipelined(port, [r for _ in range(25) for r in round_]):
            counts[status] = counts.get(status, 0) + 1
        await asyncio.sleep(0.2)
    await hoard


async def hoarded_sockets(port: int, until, counts: dict) -> None:
    """HOARDED websockets from the outsider's address, each with a new X-Forwarded-For, held until the wave
    ends (issue 52: 300 of 300 were opened); how many opened and how many were refused go to ``counts``."""
    held = []
    for _ in range(HOARDED):
        try:
            held.append(await websockets.connect(f"ws://127.0.0.1:{port}", local_addr=(STRANGER, 0),
                                                 extra_headers={"X-Forwarded-For": rotating()}))
        except (websockets.InvalidStatusCode, OSError):
            counts["sockets refused"] = counts.get("sockets refused", 0) + 1
    counts["sockets held"] = len(held)
    while not until():
        await asyncio.sleep(0.5)
    for socket in held:
        await socket.close()


async def insider(port: int, until, counts: dict) -> None:
    mallory = load_generator.PageClient("mallory", port, 2, 1.0, time.time() + 600)
    async with httpx.AsyncClient() as http:
        if not await mallory.open(http):
            return
    bad = [{"packet_type": "log_error"}, {"packet_type": "log_error", "data": 5},
           {"packet_type": "mephisto_bound_live_update", "data": {"update_id": "deep", "x": "NESTED2000"}},
           {"packet_type": "mephisto_bound_live_update", "data": {"update_id": "deeper", "x": "NESTED100000"}},
           {"packet_type": "mephisto_bound_live_update",
            "data": {"update_id": "lone", "text": "a \ud800 b", "task_data": {"action": "message"}}}]
    nested = {n: "[" * n + "]" * n for n in (2000, 100_000)}
    i = 0
    while not until():
        packet = {**bad[i % len(bad)], "subject_id": mallory.agent_id, "agent_token": mallory.token}
        raw = json.dumps(packet).replace('"NESTED2000"', nested[2000]).replace('"NESTED100000"', nested[100_000])
        try:
            await mallory.ws.send(raw)
        except Exception:  # noqa: BLE001  (her socket closed: the attack goes on from a new one)
            async with httpx.AsyncClient() as http:
                await mallory.open(http)
        counts["packets"] = counts.get("packets", 0) + 1
        i += 1
        await asyncio.sleep(0.05)
    await mallory.close()


def attacker(port: int, stop, results) -> None:
    """The outsider and the insider, until ``stop`` is set; their counts go to ``results``."""
    counts: dict = {}

    async def both():
        await asyncio.gather(outsider(port, stop.is_set, counts), insider(port, stop.is_set, counts))

    asyncio.run(both())
    results.put(counts)


async def flood_run(args, tmp: Path, CliRun) -> None:
    task = "bench_router_flood"
    run = CliRun("live_chat_da", tmp, bench_router_load.launch_overrides(args, task, 2 * args.workers + 1))  # +1: the insider's
    counts: dict = {}
    try:
        quiet = bench_router_load.clients_for([f"q{i:02d}" for i in range(args.workers)], args,
                                              time.time() + args.duration)
        quiet_wall = await bench_router_load.wave(quiet)
        attacked = bench_router_load.clients_for([f"a{i:02d}" for i in range(args.workers)], args,
                                                 time.time() + args.duration, first=args.workers)

        async def attack():
            # its own process: the attackers' work must not slow the honest clients' event loop in this one
            stop, results = multiprocessing.Event(), multiprocessing.Queue()
            process = multiprocessing.Process(target=attacker, args=(args.port, stop, results))
            process.start()
            while not (all(c.done or c.gone for c in attacked) or time.time() > attacked[0].deadline):
                await asyncio.sleep(0.5)
            stop.set()
            counts.update(await asyncio.to_thread(results.get, True, 120))
            await asyncio.to_thread(process.join, 30)

        attacked_wall = await bench_router_load.wave(attacked, attack)
    finally:
        run.stop()
    log = run.log()
    report, convs, human = load_generator.stored_texts(task, run.data_dir, tmp / "flood.jsonl")
    lat_quiet = bench_router_load.describe(f"{args.workers} workers, no attack", quiet, quiet_wall, human)
    lat_attacked = bench_router_load.describe(f"{args.workers} workers under attack", attacked, attacked_wall, human)
    if len(lat_quiet) and len(lat_attacked):
        print("ratio attacked / quiet: " + ", ".join(
            f"p{q} {np.percentile(lat_attacked, q) / np.percentile(lat_quiet, q):.2f}x" for q in (50, 95, 99)))
    lost = [t for c in quiet + attacked for t in c.confirmed if t not in human]
    print(f"messages lost (confirmed, not stored): {len(lost)}")
    http = {k: v for k, v in counts.items() if isinstance(k, int)}
    print(f"outsider (a new X-Forwarded-For on each): {sum(http.values())} requests answered "
          f"{dict(sorted(http.items()))}, {counts.get('sockets held', 0)} of {HOARDED} websockets held open "
          f"({counts.get('sockets refused', 0)} refused); insider: {counts.get('packets', 0)} unreadable packets")
    # the server's tries before the router listened (a busy machine's start-up) are no restart of the link
    served = log[log.find("Listening on"):] if "Listening on" in log else log
    print(f"server link restarts: {served.count('attempting restart')}; launch log {len(log) / 1024:.0f} KB")
    problems = [f"{c.name}: {', '.join(c.seen)}" for c in quiet + attacked if c.seen]
    print("workers saw: " + ("; ".join(problems) if problems else "nothing unusual"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bench_router_load.add_wave_args(parser, workers=20, duration=300, port=3460)
    args = parser.parse_args()
    tmp, CliRun = bench_router_load.start(args, "bench_router_flood_")
    asyncio.run(flood_run(args, tmp, CliRun))
    return 0


if __name__ == "__main__":
    sys.exit(main())
