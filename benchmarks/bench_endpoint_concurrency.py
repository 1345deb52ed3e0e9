"""Concurrency benchmark: live-chat workers at once with endpoint bots that answer in 300 ms.

The live_chat_da task with ``conf=endpoints`` (two ``dialeval:openai_chat`` bots + the offline QC bot)
runs in-process against the fake OpenAI-compatible server (``parlai_dialeval.testing.fake_openai``,
300 ms per reply), driven by the simulated workers of ``bench_live_chat_load.py`` (one HIT each: 3
conversations x 10 messages, each worker waiting for the reply before typing again). Two set-ups,
measured in the same run, each with 1 worker alone and then WORKERS at once:

- ours: every conversation's bot copy shares one pooled HTTP client; no lock anywhere;
- ParlAI's pattern: the same agent, but every ``act()`` holds a semaphore of its model
  (ParlAI's model_chat / pairwise_per_turn_eval ``TurkLikeAgent`` wraps ``act()`` in
  ``with semaphore``; its default is one semaphore of size 1 for all models, here one per model).

Prints p50/p95 bot latency of the endpoint bots (server side: worker turn -> bot turn, from the
exported turn times), endpoint replies per second, and the ratio of the p95 under load to alone.
Target: 20 workers' p95 within 2x of one worker's.

    .venv/bin/python benchmarks/bench_endpoint_concurrency.py [--workers 20] [--latency 0.3] [--port 3155]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_live_chat_load as load  # noqa: E402  (the simulated workers and their waves)

from parlai_dialeval.agents.openai_chat.openai_chat import OpenaiChatAgent  # noqa: E402
from parlai_dialeval.crowdsourcing.platform import export, runner  # noqa: E402
from parlai_dialeval.testing.fake_openai import FakeOpenAI  # noqa: E402

ENDPOINT_MODELS = ("model_a", "model_b")
_SEMAPHORES: dict[str, threading.Semaphore] = defaultdict(lambda: threading.Semaphore(1))


class SemaphoreOpenaiChatAgent(OpenaiChatAgent):
    """ParlAI's pattern: one generation at a time per model, whatever the number of conversations."""

    def act(self):
        with _SEMAPHORES[self.opt["endpoint_model"]]:
            return super().act()


def measure(setup: str, fake: FakeOpenAI, workers: int, port: int, tmp: Path) -> dict:
    task_name = f"bench_endpoints_{setup}"
    overrides = ["conf=endpoints", "mephisto/architect=mock", "mephisto.architect.should_run_server=true",
                 f"mephisto.architect.port={port}", f"mephisto.task.task_name={task_name}",
                 f"mephisto.blueprint.num_conversations={workers + 1}", "mephisto.task.max_num_concurrent_units=0",
                 f"live_chat.min_inputs={load.INPUTS}", "live_chat.seed=0"]
    if setup == "parlai":
        overrides += [f"live_chat.models.{m}.opt.model={__name__}:SemaphoreOpenaiChatAgent" for m in ENDPOINT_MODELS]
    run = runner.start("live_chat_da", overrides, data_dir=tmp / setup)
    live = list(run.operator.get_running_task_runs().values())[0]
    names = [f"{setup}_w{i:02d}" for i in range(workers)]
    try:
        alone_wall, _ = load.run_wave(run, live, [f"{setup}_alone"])
        load_wall, _ = load.run_wave(run, live, names)
    finally:
        run.shutdown()
    out = tmp / f"{setup}.jsonl"
    export.export_task(task_name, out, data_dir=run.data_dir)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    endpoint_convs = [r for r in records if r["type"] == "conversation" and r["models"][0] in ENDPOINT_MODELS]
    failed = [r for r in endpoint_convs if r["status"] != "complete"]
    alone = load.bot_latencies(endpoint_convs, {f"{setup}_alone"}) * 1000
    loaded = load.bot_latencies(endpoint_convs, set(names)) * 1000
    return {"alone": alone, "loaded": loaded, "alone_wall": alone_wall, "load_wall": load_wall,
            "throughput": len(loaded) / load_wall, "failed": len(failed)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.3, help="seconds the fake endpoint takes per reply")
    parser.add_argument("--port", type=int, default=3155)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench_endpoints_"))
    results = {}
    with FakeOpenAI({"model-a": {"latency": args.latency}, "model-b": {"latency": args.latency}}) as fake:
        os.environ["DIALEVAL_BASE_URL"] = fake.base_url
        for offset, setup in enumerate(("ours", "parlai")):
            results[setup] = measure(setup, fake, args.workers, args.port + offset, tmp)
        peak = fake.max_in_flight
    print(f"machine: {sys.platform}, {os.cpu_count()} CPU cores, no GPU; fake endpoint {1000 * args.latency:.0f} ms "
          f"per reply; {args.workers} workers; most requests in flight at once: {peak}")
    for setup, label in (("ours", "ours (shared client, no lock)"), ("parlai", "ParlAI's semaphore per model")):
        r = results[setup]
        a, b = r["alone"], r["loaded"]
        print(f"{label}: 1 worker p50 {np.percentile(a, 50):.0f} ms, p95 {np.percentile(a, 95):.0f} ms; "
              f"{args.workers} workers p50 {np.percentile(b, 50):.0f} ms, p95 {np.percentile(b, 95):.0f} ms; "
              f"p95 ratio {np.percentile(b, 95) / np.percentile(a, 95):.2f}x; "
              f"{r['throughput']:.1f} endpoint replies/s ({len(b)} in {r['load_wall']:.1f} s); "
              f"conversations not complete: {r['failed']}")
    ours, parlai = results["ours"], results["parlai"]
    ratio = np.percentile(ours["loaded"], 95) / np.percentile(ours["alone"], 95)
    p95_gain = np.percentile(parlai["loaded"], 95) / np.percentile(ours["loaded"], 95)
    throughput_gain = ours["throughput"] / parlai["throughput"]
    print(f"ours vs ParlAI's pattern under load: p95 {p95_gain:.1f}x lower, throughput {throughput_gain:.1f}x higher")
    ok = ratio <= 2.0 and ours["failed"] == 0
    print(f"OK: {args.workers} workers' p95 within 2x of one worker's" if ok else "FAILED: p95 under load above 2x alone")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
