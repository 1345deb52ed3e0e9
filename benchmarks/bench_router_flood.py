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

``--prolific``: the Prolific amplification (issue 52, item 3) instead. The same chat on Prolific (a fake
Prolific in this process, mephisto/provider=prolific); honest participants come from Prolific's study page,
each from a loopback address of its own; during wave 2 a stranger at 127.0.0.50 asks for agents with made-up
Prolific sessions as fast as the router lets it. Each such arrival would cost a call with the researcher's
token; the budgets of arrival checks (providers/prolific/budget.py) allow one source 30 a minute. Prints the
waves as above, and how many of the stranger's registrations reached the server and how many calls to
Prolific they caused.

The attackers' process runs at the lowest priority (`nice 19`, `--attacker-nice`): it takes only the CPU the
server and the honest participants leave, as an attacker on another machine takes none of the server's, while the
server keeps every core, as in the quiet wave. At the same priority the ratio measured the attackers' own Python (0.88
of the 2 cores in one run) as much as the server; with the attackers pinned to a core of their own the server had one
core left, half of what it has in the quiet wave. `--attacker-nice 0` shares the cores at the same priority.

    .venv/bin/python benchmarks/bench_router_flood.py [--workers 20] [--port 3460] [--prolific]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import re
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


def lowest_priority(niceness: int) -> None:
    """This process (an attacker) ``niceness`` steps below the server's priority."""
    if niceness > 0:
        os.nice(niceness)


def cpu_seconds(attacker_pid: int | None = None) -> dict:
    """CPU seconds so far of this process (the honest clients, the fake Prolific), of its descendants by name (the
    server's: node the router, python Mephisto's server), the attackers' process apart."""
    import psutil

    me = psutil.Process()
    seconds = {"benchmark (honest clients)": sum(me.cpu_times()[:2])}
    for child in me.children(recursive=True):
        try:
            name = "attackers" if child.pid == attacker_pid else f"server: {child.name()}"
            seconds[name] = seconds.get(name, 0.0) + sum(child.cpu_times()[:2])
        except psutil.Error:  # ended meanwhile
            pass
    return seconds


def cpu_line(label: str, before: dict, after: dict, wall: float) -> str:
    shares = {k: (after[k] - before.get(k, 0.0)) / wall for k in after}
    return f"{label} CPU (cores): " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(shares.items()) if v >= 0.005)


def attacker(port: int, niceness: int, stop, results) -> None:
    """The outsider and the insider, until ``stop`` is set; their counts go to ``results``."""
    lowest_priority(niceness)
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
        cpu_before = cpu_seconds()
        quiet_wall = await bench_router_load.wave(quiet)
        print(cpu_line("no attack", cpu_before, cpu_seconds(), quiet_wall))
        attacked = bench_router_load.clients_for([f"a{i:02d}" for i in range(args.workers)], args,
                                                 time.time() + args.duration, first=args.workers)

        async def attack():
            # its own process: the attackers' work must not slow the honest clients' event loop in this one
            stop, results = multiprocessing.Event(), multiprocessing.Queue()
            process = multiprocessing.Process(target=attacker, args=(args.port, args.attacker_nice, stop, results))
            process.start()
            started, cpu_before = time.time(), cpu_seconds(process.pid)
            while not (all(c.done or c.gone for c in attacked) or time.time() > attacked[0].deadline):
                await asyncio.sleep(0.5)
            print(cpu_line("under attack", cpu_before, cpu_seconds(process.pid), time.time() - started))
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


# ---------------------------------------------------------------- the Prolific amplification
STRANGER_ADDRESS = "127.0.0.50"


class ProlificPage(load_generator.PageClient):
    """An honest participant from Prolific's study page: its PROLIFIC_PID and SESSION_ID, its own address."""

    def __init__(self, name: str, args, deadline: float, session: str, study_id: str, address: str):
        super().__init__(name, args.port, args.inputs, args.think, deadline)
        self.session, self.study_id, self.address = session, study_id, address

    def registration(self) -> dict:
        return {"worker_name": self.name, "agent_registration_id": f"{self.session}-{self.name}",
                "assignment_id": self.session, "study_id": self.study_id, "provider_type": "prolific",
                "dialeval_secret": self.secret}

    async def open(self, http) -> bool:
        transport = httpx.AsyncHTTPTransport(local_address=self.address)
        async with httpx.AsyncClient(transport=transport) as own:  # the router sees this participant's address
            return await super().open(own)


def stranger(port: int, study_id: str, niceness: int, stop, results) -> None:
    """Requests for an agent with made-up Prolific sessions from one address, eight at a time, until ``stop``."""
    import secrets

    lowest_priority(niceness)
    statuses: dict = {}

    async def ask(http):
        while not stop.is_set():
            pid, session = secrets.token_hex(12), secrets.token_hex(12)
            try:
                reply = await http.post("/request_agent", json={"client_timestamp": time.time(), "provider_data": {
                    "worker_name": pid, "assignment_id": session, "agent_registration_id": f"{session}-{pid}",
                    "study_id": study_id, "provider_type": "prolific"}})
                answer = reply.status_code
            except httpx.HTTPError:  # the door closed the connection on it: it opens another
                answer = "closed"
                await asyncio.sleep(0.05)
            statuses[answer] = statuses.get(answer, 0) + 1

    async def all_at_once():
        transport = httpx.AsyncHTTPTransport(local_address=STRANGER_ADDRESS)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", transport=transport, timeout=30) as http:
            await asyncio.gather(*(ask(http) for _ in range(8)))

    asyncio.run(all_at_once())
    results.put(statuses)


async def prolific_run(args, tmp: Path) -> None:
    from parlai_dialeval.crowdsourcing.platform.env import database_path, prepare_mephisto

    harness = load_generator.test_helper("prolific_harness")
    task, data = "bench_prolific_flood", tmp / "mephisto"
    with harness.fake_prolific() as fake:
        prepare_mephisto(data)  # Mephisto first: importing it registers our provider, whose models come next
        from parlai_dialeval.providers.prolific.models import ProlificRequester, register_token

        os.environ["BENCH_PROLIFIC_TOKEN"] = harness.TOKEN
        register_token(harness.REQUESTER, "BENCH_PROLIFIC_TOKEN", None, fake.api_base_url)
        from mephisto.abstractions.databases.local_database import LocalMephistoDB

        ProlificRequester.new(LocalMephistoDB(database_path=str(database_path(data))), harness.REQUESTER)
        overrides = [*bench_router_load.launch_overrides(args, task, 2 * args.workers), *harness.provider_overrides(
            fake, reward="0.50", minutes=5), "mephisto.provider.max_submissions_per_participant=-1"]
        run = harness.ProlificCliRun(tmp / "launch", fake, overrides, data_dir=data)
        study_id = run.study["id"]
        end = time.time() + 180  # a place per unit, as Mephisto launches them
        while fake.state.studies[study_id]["total_available_places"] < 2 * args.workers and time.time() < end:
            await asyncio.sleep(0.5)

        def pages(prefix: str, first: int) -> list:
            made = []
            for i in range(args.workers):
                with fake.state.lock:  # the participant takes a place on Prolific: a session of their own
                    _, sub = fake.state.start(study_id, f"{prefix}{i:02d}")
                made.append(ProlificPage(f"{prefix}{i:02d}", args, time.time() + args.duration, sub["id"], study_id,
                                         f"127.0.0.{first + i}"))
            return made

        outcome: dict = {}
        try:
            quiet = pages("q", 10)
            cpu_before = cpu_seconds()
            quiet_wall = await bench_router_load.wave(quiet)
            print(cpu_line("no attack", cpu_before, cpu_seconds(), quiet_wall))
            attacked = pages("a", 10 + args.workers)
            before = len(fake.state.calls)

            async def attack():
                stop, results = multiprocessing.Event(), multiprocessing.Queue()
                process = multiprocessing.Process(target=stranger,
                                                  args=(args.port, study_id, args.attacker_nice, stop, results))
                process.start()
                started, cpu_before = time.time(), cpu_seconds(process.pid)
                while not (all(c.done or c.gone for c in attacked) or time.time() > attacked[0].deadline):
                    await asyncio.sleep(0.5)
                print(cpu_line("under attack", cpu_before, cpu_seconds(process.pid), time.time() - started))
                stop.set()
                outcome.update(statuses=await asyncio.to_thread(results.get, True, 120), minutes=(time.time() - started) / 60)
                await asyncio.to_thread(process.join, 30)

            attacked_wall = await bench_router_load.wave(attacked, attack)
        finally:
            run.stop()
        honest = {c.session for c in quiet + attacked}
        looked_up = (re.fullmatch(r"/api/v1/submissions/([^/]+)/", c["path"]) for c in fake.state.calls[before:]
                     if c["method"] == "GET")
        calls = [found[1] for found in looked_up if found and found[1] not in honest]
    report, convs, human = load_generator.stored_texts(task, data, tmp / "prolific_flood.jsonl")
    lat_quiet = bench_router_load.describe(f"{args.workers} Prolific participants, no attack", quiet, quiet_wall, human)
    lat_attacked = bench_router_load.describe(f"{args.workers} Prolific participants while a stranger floods",
                                              attacked, attacked_wall, human)
    if len(lat_quiet) and len(lat_attacked):
        print("ratio attacked / quiet: " + ", ".join(
            f"p{q} {np.percentile(lat_attacked, q) / np.percentile(lat_quiet, q):.2f}x" for q in (50, 95, 99)))
    lost = [t for c in quiet + attacked for t in c.confirmed if t not in human]
    placed = sum(1 for c in quiet + attacked if not any(s.startswith("refused") for s in c.seen))
    print(f"messages lost (confirmed, not stored): {len(lost)}; honest participants placed: {placed} of {2 * args.workers}")
    statuses = outcome.get("statuses", {})
    print(f"stranger: {sum(statuses.values())} requests for an agent with made-up sessions in "
          f"{outcome.get('minutes', 0):.1f} min, answered {dict(sorted(statuses.items(), key=str))}; calls to Prolific "
          f"about them: {len(calls)} (budget: 30 a minute from one source)")
    problems = [f"{c.name}: {', '.join(c.seen)}" for c in quiet + attacked if c.seen]
    print("participants saw: " + ("; ".join(problems) if problems else "nothing unusual"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bench_router_load.add_wave_args(parser, workers=20, duration=300, port=3460)
    parser.add_argument("--prolific", action="store_true", help="the Prolific amplification instead (see above)")
    parser.add_argument("--attacker-nice", type=int, default=19,
                        help="how far below the server's priority the attackers' process runs (0: the same)")
    args = parser.parse_args()
    print(f"the attackers' process at nice +{args.attacker_nice}, every core shared")
    tmp, CliRun = bench_router_load.start(args, "bench_router_flood_")
    asyncio.run(prolific_run(args, tmp) if args.prolific else flood_run(args, tmp, CliRun))
    return 0


if __name__ == "__main__":
    sys.exit(main())
