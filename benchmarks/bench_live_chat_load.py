"""Load benchmark: simulated workers chatting at once with the offline bots of live_chat_da.

Runs the live-chat task in-process (MockArchitect + MockProvider: Mephisto's server side, worlds and
bots are real; the workers are simulated behind Mephisto's mock websocket server instead of browsers
behind the node router). First one worker alone (the baseline), then WORKERS workers at once, each
doing a whole HIT (3 conversations: 2 genuine bots + the QC bot, 10 messages each, ratings,
feedback). Each simulated worker waits for the bot's reply before typing again, like a person.

Prints: bot response latency (server side: worker turn -> bot turn, from the exported turn times)
p50/p95 alone and under load and their ratio; what the worker waits for a reply (send -> reply seen);
CPU time and peak RSS of this process (server + simulated workers); and checks that no message was
lost and every conversation was exported.

    .venv/bin/python benchmarks/bench_live_chat_load.py [--workers 20] [--port 3150]
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import parlai_dialeval  # noqa: F401,I001  (Python 3.11 fix: must come before mephisto)
from mephisto.data_model.packet import PACKET_TYPE_MEPHISTO_BOUND_LIVE_UPDATE

from parlai_dialeval.crowdsourcing.live_chat_da.worlds import BOT_ID
from parlai_dialeval.crowdsourcing.platform import export, runner

SLOTS, INPUTS = 3, 10


class SimulatedWorker(threading.Thread):
    """Drives one HIT through the mock server; the main thread pumps Mephisto's event loop."""

    def __init__(self, live, agent, name):
        super().__init__(daemon=True)
        self.live, self.agent, self.name = live, agent, name
        self.server = live.architect.server
        self.waits: list[float] = []
        self.error = None
        self.done = False

    def messages(self):
        return list(self.agent.state.get_data()["outputs"]["messages"])

    def wait(self, condition, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            if condition(self.messages()):
                return
            time.sleep(0.02)
        raise TimeoutError(f"{self.name}: timed out")

    def phase_is(self, phase, slot):
        def check(messages):
            states = [m["task_data"] for m in messages if (m.get("task_data") or {}).get("phase")]
            return states and states[-1]["phase"] == phase and states[-1].get("slot") == slot
        return check

    def send(self, task_data, text=""):
        act = {"text": text, "task_data": task_data, "id": self.agent.db_id, "episode_done": False}
        packet = {"packet_type": PACKET_TYPE_MEPHISTO_BOUND_LIVE_UPDATE, "subject_id": self.agent.db_id, "data": act}
        # written on the mock server's IOLoop directly: MockServer.send_agent_act sleeps 0.1 s per packet
        # on that loop, which would serialise 20 workers into 2 s per message (a harness artefact)
        message = json.dumps(packet)
        self.server.running_instance.add_callback(lambda: self.server._get_sub().write_message(message))

    def run(self):
        try:
            for slot in range(SLOTS):
                self.wait(self.phase_is("topic", slot))
                self.send({"action": "topic", "topic": "books", "attitude": "like"})
                self.wait(self.phase_is("chat", slot))
                for i in range(INPUTS):
                    replies = sum(m.get("id") == BOT_ID for m in self.messages())
                    start = time.time()
                    self.send({"action": "message"}, f"{self.name} slot {slot} message {i}: do you like reading?")
                    self.wait(lambda ms: sum(m.get("id") == BOT_ID for m in ms) > replies)
                    self.waits.append(time.time() - start)
                self.send({"action": "next"})
                self.wait(self.phase_is("rate", slot))
                self.send({"action": "rating", "values": [50, 60, 70, 80, 90, 40, 30]})
            self.wait(self.phase_is("feedback", SLOTS - 1))
            self.send({"action": "feedback", "feedback": "benchmark"})
            self.wait(lambda ms: any((m.get("task_data") or {}).get("task_done") for m in ms))
            self.server.running_instance.add_callback(self.server.submit_mock_unit, self.agent.db_id,
                                                      {"final_data": {}})
            self.done = True
        except Exception as error:  # reported by the main thread
            self.error = error


def register(run, live, name):
    before = {a.db_id for a in run.db.find_agents()}
    live.architect.server.register_mock_agent(name, f"assignment-{name}")
    found = []

    def registered():
        new = [a for a in run.db.find_agents() if a.db_id not in before]
        agent = live.worker_pool.get_agent_for_id(new[0].db_id) if new else None
        if agent is not None:
            found.append(agent)
        return agent is not None

    assert run.operator._run_loop_until(registered, 30), f"{name} was not registered"
    return found[-1]


def run_wave(run, live, names):
    workers = [SimulatedWorker(live, register(run, live, name), name) for name in names]
    start = time.time()
    for worker in workers:
        worker.start()
    assert run.operator._run_loop_until(lambda: all(not w.is_alive() for w in workers), 900), "workers stuck"
    errors = [f"{w.name}: {w.error}" for w in workers if w.error]
    if errors:
        raise SystemExit("simulated workers failed: " + "; ".join(errors))
    # let the submissions land before the next wave / the export
    run.operator._run_loop_until(lambda: all(w.agent.get_status() == "completed" for w in workers), 60)
    return time.time() - start, [x for w in workers for x in w.waits]


def bot_latencies(records, workers):
    out = []
    for conv in records:
        if conv["type"] != "conversation" or conv["worker_id"].split("_sandbox")[0] not in workers:
            continue
        turns = conv["turns"]
        out += [b["time"] - a["time"] for a, b in zip(turns, turns[1:]) if a["speaker"] == "human"
                and b["speaker"] != "human"]
    return np.array(out)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--port", type=int, default=3150)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_live_chat_"))
    run = runner.start("live_chat_da", [
        "conf=offline_small", "mephisto/architect=mock", "mephisto.architect.should_run_server=true",
        f"mephisto.architect.port={args.port}", "mephisto.task.task_name=bench_live_chat",
        f"mephisto.blueprint.num_conversations={args.workers + 1}", "mephisto.task.allowed_concurrent=1",
        "mephisto.task.max_num_concurrent_units=0", f"live_chat.num_slots={SLOTS}", f"live_chat.min_inputs={INPUTS}",
        "live_chat.seed=0",
        # the simulated workers answer at machine speed; the per-participant rate limit is sized for people
        "live_chat.limits.rate_per_minute=100000", "live_chat.limits.rate_burst=100000"], data_dir=tmp / "mephisto")
    live = list(run.operator.get_running_task_runs().values())[0]
    rss_loaded = rss_mb()
    try:
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        alone_wall, alone_waits = run_wave(run, live, ["alone"])
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        names = [f"w{i:02d}" for i in range(args.workers)]
        rss_samples = []
        sampler_stop = threading.Event()

        def sample():
            while not sampler_stop.wait(0.5):
                rss_samples.append(rss_mb())

        threading.Thread(target=sample, daemon=True).start()
        load_wall, load_waits = run_wave(run, live, names)
        sampler_stop.set()
        cpu2 = resource.getrusage(resource.RUSAGE_SELF)
    finally:
        run.shutdown()
    out = tmp / "bench.jsonl"
    report = export.export_task("bench_live_chat", out, data_dir=run.data_dir)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    convs = [r for r in records if r["type"] == "conversation"]
    expected_convs = (args.workers + 1) * SLOTS
    human = sum(sum(t["speaker"] == "human" for t in c["turns"]) for c in convs)
    bot = sum(sum(t["speaker"] != "human" for t in c["turns"]) for c in convs)
    complete = sum(c["status"] == "complete" for c in convs)
    ratings = sum(r["type"] == "rating" for r in records)
    lost = expected_convs * INPUTS - human
    alone = bot_latencies(records, {"alone"}) * 1000
    loaded = bot_latencies(records, set(names)) * 1000
    cpu = lambda a, b: (b.ru_utime + b.ru_stime) - (a.ru_utime + a.ru_stime)  # noqa: E731
    print(f"machine: {sys.platform}, {__import__('os').cpu_count()} CPU cores, no GPU")
    print(f"exported: {len(convs)}/{expected_convs} conversations, {complete} complete, {ratings} ratings; "
          f"worker messages {human}/{expected_convs * INPUTS} (lost: {lost}), bot replies {bot}")
    print(f"1 worker alone: {alone_wall:.1f} s; bot latency p50 {np.percentile(alone, 50):.1f} ms, "
          f"p95 {np.percentile(alone, 95):.1f} ms; reply seen by worker p50 {1000 * np.median(alone_waits):.0f} ms, "
          f"p95 {1000 * np.percentile(alone_waits, 95):.0f} ms")
    print(f"{args.workers} workers at once: {load_wall:.1f} s; bot latency p50 {np.percentile(loaded, 50):.1f} ms, "
          f"p95 {np.percentile(loaded, 95):.1f} ms; reply seen by worker p50 {1000 * np.median(load_waits):.0f} ms, "
          f"p95 {1000 * np.percentile(load_waits, 95):.0f} ms")
    print(f"ratio under load / alone: bot latency p95 {np.percentile(loaded, 95) / np.percentile(alone, 95):.2f}x, "
          f"reply seen p95 {np.percentile(load_waits, 95) / np.percentile(alone_waits, 95):.2f}x")
    print(f"process CPU: {cpu(cpu0, cpu1):.1f} s alone ({100 * cpu(cpu0, cpu1) / alone_wall:.0f}% of one core), "
          f"{cpu(cpu1, cpu2):.1f} s under load ({100 * cpu(cpu1, cpu2) / load_wall:.0f}% of one core)")
    print(f"memory: RSS {rss_loaded:.0f} MB with bots loaded, peak under load {max(rss_samples or [rss_mb()]):.0f} MB")
    print(report.summary())
    ok = lost == 0 and len(convs) == expected_convs and complete == expected_convs and bot == human
    print("OK: no message lost, every conversation exported" if ok else "FAILED: see counts above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
