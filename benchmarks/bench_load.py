"""Participants at once, ramped: live chat DA and PW-Turn through the router, endpoint bots at 1-3 s a reply.

Each step launches the task for real (`dialeval launch TASK conf=endpoints`: LocalArchitect, the Mephisto
server process and the node router on 127.0.0.1, SQLite) against the fake OpenAI-compatible endpoint
(parlai_dialeval/testing/fake_openai.py, a process of its own: 0.8 s to the first word, then one word every
0.1 s, replies of 2-22 words, streamed to the page), and N participants (benchmarks/load_generator.py: the
page's packets at human pace, reloads, a few leaving mid-task) arrive within ARRIVAL seconds and do a whole
HIT, each from a loopback address of its own (127.1.x.y: the router's budgets are per address, as on the
internet). Per step it prints: participants placed, submissions of finished HITs refused (must be 0), messages
sent / confirmed by the server / stored in the export / lost (confirmed but not stored: must be 0), the platform's added latency p50/p95/p99 (every action's answer time, the bots'
endpoint time subtracted), router and server CPU (% of one core, mean / peak) and peak memory, units
completed, participants who left, errors (refusals and unexpected statuses the pages saw, tracebacks in
the server's log), and the load average.

``--settings before`` runs the launch as the code before issue 32 did (crowdsourcing/platform/scaling.py
names each setting); the first step of a run (``--baseline``, default 50 live-chat participants) is
measured with it, in the same run, so the ramp compares against today's figure.

``--lab N`` (default 30) adds a step with N live-chat participants behind one address, the lab's, which the
launch names in ``router_lab_addresses`` (docs/security.md, "Identity and places"): they must all finish.

``--servers K`` splits each step's N participants over K independent launches of the task (each its own
router port, data directory and export), as docs/scaling.md splits a study across servers; the CPU and
memory columns are then the K servers' sums. ``--split 500:2`` adds such a step to the ramp (after the
live-chat steps): 500 live-chat participants over 2 servers, next to the one-server figure of the same run.

``--kill-at N`` (one step): when N participants have joined, the server's process group and the router
get SIGKILL and the same `dialeval launch` starts again on the same data (it resumes the interrupted
run); the participants' pages reload until it answers and carry on. The step then also reports whether
everyone could continue and whether each unit is exported once.

    .venv/bin/python benchmarks/bench_load.py                       # the ramp (docs/scaling.md)
    .venv/bin/python benchmarks/bench_load.py --live 300 --pw-turn '' --baseline 0 --kill-at 300
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from parlai_dialeval.testing.ports import free_port

from load_generator import (LAB_ADDRESS, BotScript, Pace, Participant, PwTurnParticipant, Resources,  # benchmarks/
                            crash_and_relaunch, own_address, stored_texts, test_helper)


TASKS = {"live_chat": ("live_chat_da", Participant), "pw_turn": ("pw_turn", PwTurnParticipant)}
MODELS = ["model-a", "model-b"]


def overrides(task: str, name: str, units: int, settings: str, args, port: int, lab: bool = False) -> list[str]:
    from parlai_dialeval.crowdsourcing.platform import scaling

    common = ["conf=endpoints", f"mephisto.architect.port={port}", f"mephisto.task.task_name={name}",
              f"mephisto.blueprint.num_conversations={units}", "mephisto.task.max_num_concurrent_units=0"]
    if lab:  # every participant behind the lab's one address, which the researcher names
        common.append(f"mephisto.blueprint.router_lab_addresses=[{LAB_ADDRESS}]")
    if task == "live_chat":
        common += [f"live_chat.min_inputs={args.inputs}", "live_chat.seed=0"]
    else:
        common += [f"pw_turn.num_turns={args.turns}", "pw_turn.seed=0"]
    return common + scaling.overrides(settings)


def start_fake(port: int, bots: BotScript, folder: Path) -> subprocess.Popen:
    script = folder / "fake_script.json"
    script.write_text(json.dumps(bots.script(MODELS)))
    proc = subprocess.Popen([sys.executable, "-m", "parlai_dialeval.testing.fake_openai", "--port", str(port),
                             "--script", str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    proc.stdout.readline()  # its "fake OpenAI-compatible server at ..." line: it listens
    return proc


async def drive(clients, during=None) -> float:
    start = time.time()

    async def arrive(client, delay):
        await asyncio.sleep(delay)
        async with client.http_client() as http:  # its connections come from its own address
            await client.run(http)

    await asyncio.gather(*(arrive(c, c.arrival) for c in clients), *([during()] if during else []))
    return time.time() - start


def quantiles(values) -> str:
    values = np.asarray(values) * 1000
    return " / ".join(f"{np.percentile(values, q):.0f}" for q in (50, 95, 99)) if len(values) else "-"


def by_minute(answers: list[tuple[float, float]]) -> dict[str, str]:
    """The platform's p50 / p95 / p99 in each minute of the step (arrivals come in the first): where the time went."""
    minutes = sorted({int(at // 60) for at, _ in answers})
    return {f"{m}-{m + 1} min": quantiles([x for at, x in answers if int(at // 60) == m]) for m in minutes}


def summed(resources: list[Resources], part: str) -> str:
    """The servers' CPU and memory together: their 1 s samples added up (``Resources.summary``'s form)."""
    if len(resources) == 1:
        return resources[0].summary(part)
    length = min(len(r.cpu[part]) for r in resources)
    cpu = [sum(r.cpu[part][i] for r in resources) for i in range(1, length)] or [float("nan")]
    rss = [sum(r.rss[part][i] for r in resources) for i in range(length)] or [float("nan")]
    return f"{sum(cpu) / len(cpu):.0f}% / {max(cpu):.0f}% CPU, {max(rss):.0f} MB"


def step(task: str, n: int, settings: str, servers: int, args, folder: Path, env: dict, lab: bool = False) -> dict:
    """One step: ``n`` participants of ``task`` on ``servers`` launches, each from its own address, or with
    ``lab`` all from one (the lab's, named in router_lab_addresses)."""
    harness, page_client = test_helper("protocol_harness"), test_helper("page_client")
    kind, client_class = TASKS[task]
    name = f"load_{task}_{n}_{settings}" + ("_lab" if lab else "")
    servers = min(servers, n)  # a server with no participant has nothing to launch
    where = folder / (name if servers == 1 else f"{name}_{servers}_servers")
    # server k: its own port, data directory and share of the units (participant i goes to server i % K)
    ports = [args.port + 10 * k for k in range(servers)] if args.port else [free_port() for _ in range(servers)]
    shares = [len(range(k, n, servers)) for k in range(servers)]
    folders = [where] if servers == 1 else [where / f"server{k}" for k in range(servers)]
    launches = [overrides(task, name, share, settings, args, port, lab) for share, port in zip(shares, ports)]
    load_start = os.getloadavg()[0]
    with ThreadPoolExecutor(servers) as starting:  # the K launches start side by side, not one after the other
        runs = list(starting.map(lambda at, launch: harness.CliRun(kind, at, launch, env=env), folders, launches))
    run, where_run, launch = runs[0], folders[0], launches[0]
    started = time.time()
    deadline = started + args.duration
    pace = Pace(scale=args.pace, abandon=args.abandon, reload=args.reload)
    clients = [client_class(f"{task[:2]}{n}_{i:03d}", ports[i % servers], args.inputs, deadline, pace, args.bots,
                            seed=i, address=LAB_ADDRESS if lab else own_address(i)) for i in range(n)]
    rng = random.Random(n)
    for client in clients:
        client.arrival = rng.uniform(0, args.arrival)
    samplers = [Resources(r.router_pid, r.proc.pid) for r in runs]
    resources = samplers[0]
    killed: dict = {}

    async def during():
        sampling = [asyncio.create_task(r.run()) for r in samplers]
        if args.kill_at:
            while sum(c.joined is not None for c in clients) < min(args.kill_at, n) and time.time() < deadline:
                await asyncio.sleep(0.5)
            killed["at"] = time.time()
            again = await crash_and_relaunch(run, lambda: harness.CliRun(kind, where_run, launch, env=env))
            runs.append(again)
            killed["back_after"] = time.time() - killed["at"]
            resources.pids = {"router": again.router_pid, "server": again.proc.pid}
            for client in clients:
                client.deadline = max(client.deadline, time.time() + args.duration)
        while not all(c.done or c.gone for c in clients) and time.time() < max(c.deadline for c in clients):
            await asyncio.sleep(1)
        for sampler in samplers:
            sampler.stop()
        await asyncio.gather(*sampling)

    try:
        wall = asyncio.run(drive(clients, during))
        for launched in runs[-servers:]:
            try:
                launched.proc.wait(30)  # every unit done: the run ends by itself
            except subprocess.TimeoutExpired:
                pass
    finally:
        for launched in runs:
            launched.stop()
    # the last launch of each server (a relaunch replaces the first server's)
    exported = [stored_texts(name, r.data_dir, at / "export.jsonl") for r, at in zip(runs[-servers:], folders)]
    convs = [c for _, part, _ in exported for c in part]
    human = sum((texts for _, _, texts in exported), Counter())
    sent = [t for c in clients for t in c.sent]
    confirmed = [t for c in clients for t in c.confirmed]
    lost = [t for t in confirmed if t not in human]
    logs = "".join(p.read_text(errors="replace") for p in where.rglob("launch*.log"))
    # a unit exported twice shows as a worker with more complete conversations than one HIT holds
    per_hit = 3 if task == "live_chat" else 1
    complete = Counter(c["worker_id"] for c in convs if c["status"] == "complete")
    seen = Counter(e for c in clients for e in c.seen
                   if not e.startswith(("left mid-task", "connection lost", "reopened")))
    row = {
        "task": task, "n": n, "settings": settings, "servers": servers, "wall": wall,
        "addresses": "one (the lab's)" if lab else "one each",
        "placed": sum(getattr(c, "agent_id", None) is not None for c in clients),
        "submits_refused": sum(e.startswith("submit refused") for c in clients for e in c.seen),
        "load": (load_start, os.getloadavg()[0]),
        "sent": len(sent), "confirmed": len(confirmed), "stored": sum(human[t] > 0 for t in set(sent)),
        "lost": len(lost), "doubled": sum(human[t] > 1 for t in set(sent)),
        "platform": quantiles([x for c in clients for _, x, _ in c.platform]),
        "by_action": {a: quantiles([x for c in clients for b, x, _ in c.platform if b == a])
                      for a in sorted({a for c in clients for a, _, _ in c.platform})},
        "by_minute": by_minute([(at - started, x) for c in clients for _, x, at in c.platform]),
        "socket": quantiles([x for c in clients for x in c.latencies]),
        "joined": quantiles([c.joined for c in clients if c.joined is not None]),
        "router": summed(samplers, "router"), "server": summed(samplers, "server"),
        "done": sum(c.done for c in clients), "left": sum(c.gone for c in clients),
        "reloads": sum(c.reloads for c in clients),
        "errors": sum(seen.values()), "seen": dict(seen), "tracebacks": logs.count("Traceback"),
        "convs": len(convs), "complete_convs": sum(c["status"] == "complete" for c in convs),
        "units_twice": sum(v > per_hit for v in complete.values()),
        "summary": " | ".join(r.summary().replace("\n", "; ") for r, _, _ in exported),
    }
    if args.kill_at:
        back = [c for c in clients if not c.gone]
        row["kill"] = {"back_after": killed.get("back_after"), "resumed": "resum" in logs.lower(),
                       "finished_of_staying": f"{sum(c.done for c in back)}/{len(back)}",
                       "never_answered": sum(page_client.NEVER_ANSWERED in c.seen for c in clients)}
    print(json.dumps(row), flush=True)
    return row


def table(rows: list[dict]) -> str:
    head = ("| task | participants | addresses | settings | placed | submits refused | lost (sent / confirmed / stored) | "
            "platform p50 / p95 / p99 ms | joined p50 / p95 / p99 ms | router CPU mean / peak, RSS | "
            "server CPU mean / peak, RSS | HITs done / left mid-task | errors | load avg start -> end |\n|" + "---|" * 14)
    lines = [head]
    for r in rows:
        settings = r["settings"] + (f" x {r['servers']} servers" if r.get("servers", 1) > 1 else "")
        lines.append(f"| {r['task']} | {r['n']} | {r['addresses']} | {settings} | {r['placed']} | {r['submits_refused']} | "
                     f"{r['lost']} ({r['sent']} / {r['confirmed']} / {r['stored']}) | {r['platform']} | {r['joined']} | "
                     f"{r['router']} | {r['server']} | {r['done']} / {r['left']} | "
                     f"{r['errors']} page, {r['tracebacks']} tracebacks | {r['load'][0]:.1f} -> {r['load'][1]:.1f} |")
    return "\n".join(lines)


def steps(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def splits(text: str) -> list[tuple[int, int]]:
    return [tuple(int(x) for x in pair.split(":")) for pair in text.split(",") if pair.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--live", type=steps, default=steps("50,100,200,500"), help="live-chat steps (comma-separated)")
    parser.add_argument("--pw-turn", type=steps, default=steps("50,100,200"), help="PW-Turn steps ('' for none)")
    parser.add_argument("--baseline", type=int, default=50,
                        help="live-chat participants measured first with --settings before (0: none)")
    parser.add_argument("--settings", default="scaled", help="settings of the ramp (crowdsourcing/platform/scaling.py)")
    parser.add_argument("--inputs", type=int, default=3, help="live chat: messages per conversation (3 per HIT)")
    parser.add_argument("--turns", type=int, default=4, help="PW-Turn: bot turns per conversation")
    parser.add_argument("--arrival", type=float, default=60, help="seconds within which all participants arrive")
    parser.add_argument("--pace", type=float, default=1.0, help="multiplies every human wait (0.05: a quick check)")
    parser.add_argument("--abandon", type=float, default=Pace.abandon, help="chance a participant leaves mid-task")
    parser.add_argument("--reload", type=float, default=Pace.reload, help="chance of a page reload after a reply")
    parser.add_argument("--duration", type=float, default=360, help="bound on each step, seconds")
    parser.add_argument("--servers", type=int, default=1,
                        help="split each step's participants over this many launches (docs/scaling.md)")
    parser.add_argument("--lab", type=steps, default=steps("30"),
                        help="live-chat steps with every participant behind one address, the lab's, named in "
                             "router_lab_addresses ('' for none); the other steps give each its own address")
    parser.add_argument("--split", type=splits, default=[],
                        help="extra live-chat steps N:K, N participants over K servers (e.g. 500:2)")
    parser.add_argument("--kill-at", type=int, default=0, help="kill -9 the server when this many have joined")
    parser.add_argument("--port", type=int, default=0,
                        help="the router's port (server k: PORT + 10 k); default: a free port for each server")
    parser.add_argument("--fake-port", type=int, default=0, help="the fake bots' port; default: a free one")
    parser.add_argument("--out", help="write the rows as JSON lines here too")
    args = parser.parse_args()
    if min([args.servers] + [k for _, k in args.split]) < 1 or (args.kill_at and (args.servers > 1 or args.split)):
        parser.error("servers must be at least 1, and --kill-at runs on one server")
    args.bots = BotScript()
    args.fake_port = args.fake_port or free_port()
    folder = Path(tempfile.mkdtemp(prefix="bench_load_"))
    env = {**os.environ, "DIALEVAL_BASE_URL": f"http://127.0.0.1:{args.fake_port}/v1", "DIALEVAL_MODEL_A": MODELS[0],
           "DIALEVAL_MODEL_B": MODELS[1], "DIALEVAL_API_KEY_ENV": ""}
    print(f"machine: {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f} at start; bots: "
          f"{args.bots.latency} s + {args.bots.chunk_delay} s/word, {args.bots.words[0]}-{args.bots.words[1]} words; "
          f"arrival within {args.arrival:.0f} s; data in {folder}", flush=True)
    fake = start_fake(args.fake_port, args.bots, folder)
    plan = ([("live_chat", args.baseline, "before", args.servers)] if args.baseline else [])
    plan += [("live_chat", n, args.settings, args.servers) for n in args.live]
    plan += [("live_chat", n, args.settings, k) for n, k in args.split]
    plan += [("pw_turn", n, args.settings, args.servers) for n in args.pw_turn]
    plan = [(*entry, False) for entry in plan] + [("live_chat", n, args.settings, 1, True) for n in args.lab]
    rows = []
    try:
        for task, n, settings, servers, lab in plan:
            rows.append(step(task, n, settings, servers, args, folder, env, lab))
            if args.out:
                with open(args.out, "a") as out:
                    out.write(json.dumps(rows[-1]) + "\n")
    finally:
        fake.terminate()
        fake.wait(10)
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
