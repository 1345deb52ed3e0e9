"""Benchmark: dialeval analyze_live_chat on a synthetic study 100 times the size of Ji et al.'s free run 1.

Free run 1 has 305 assignments (HITs) from 249 workers, six conversations per HIT, seven ratings per
conversation. ``--scale 100`` makes 30,500 HITs from 24,900 workers: 183,000 conversations of 20 turns
and 1,281,000 ratings, written as canonical JSON Lines (616 MB). Workers take 1-4 HITs, three in
ten rate at random (they should fail quality control), the rest rate by model quality with their own
bias and spread; models with and without persona as in the paper, plus the QC bot.

Measured in fresh processes (peak memory is the process's maximum resident set size):
  in-process   ``run_analysis`` (load + analyse + write every output and report.html), the time
               split into load / analyse / write, three ways in the same run: the detailed
               record-by-record loader (the baseline, ``read_jsonl(columnar=False)``), the columnar
               loader on a cold cache (it parses the JSON Lines and writes the cache) and on a warm one;
               with ``--before DIR``, also the columnar runs of earlier code (its parlai_dialeval in DIR);
  CLI          the whole ``dialeval analyze_live_chat`` command, start-up included, cold and warm cache.
CPU times count every thread. The cache lives in OUT/cache (XDG_CACHE_HOME of the measured processes),
emptied before each cold run.
The study is generated once per scale and kept in OUT (regenerated when this generator's code changes).
Target (issue 21): under 10 s and 2 GB on a 2-core machine; report.html stays small (aggregates only).
Usage: .venv/bin/python benchmarks/bench_live_chat.py [--scale 100] [--out benchmarks/out/live_chat]
       [--detailed-only] [--skip-cli] [--before DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

BASE_HITS, BASE_WORKERS = 305, 249
CRITERIA = [("robotic", False), ("interesting", True), ("fun", True), ("consistent", True), ("fluent", True),
            ("repetitive", False), ("topic", True)]
GENUINE = {"biencoder": 0.5, "polyencoder": 0.4, "kvmemnn": 0.25, "seq2seq": -0.1, "lan_model": -0.25}
WORDS = ("i like dogs and cats what do you do for fun today my favourite movie is about space "
         "travel we went hiking last weekend the weather was lovely have you ever been to paris").split()
ROOT = Path(__file__).resolve().parents[1]


def study(path: Path, scale: int) -> dict:
    """The synthetic study at ``path``: the one kept there if this generator made it, else a new one."""
    import hashlib
    import inspect

    sidecar = path.with_suffix(".json")
    key = hashlib.sha256(inspect.getsource(make_study).encode()).hexdigest()
    if path.exists() and sidecar.exists():
        kept = json.loads(sidecar.read_text())
        if kept.pop("generator", None) == key and kept["bytes"] == path.stat().st_size:
            return kept
    sizes = make_study(path, scale)
    sidecar.write_text(json.dumps(dict(sizes, generator=key)))
    return sizes


def make_study(path: Path, scale: int, seed: int = 0) -> dict:
    """Write the synthetic study; returns its sizes."""
    import orjson

    rng = np.random.default_rng(seed)
    n_hits, n_workers = BASE_HITS * scale, BASE_WORKERS * scale
    # every worker at least one HIT, the rest spread at random (about 1.2 HITs per worker, as in run 1)
    owner = np.concatenate([np.arange(n_workers), rng.integers(0, n_workers, n_hits - n_workers)])
    rng.shuffle(owner)
    random_rater = rng.random(n_workers) < 0.3
    bias = rng.normal(50, 10, n_workers)
    spread = rng.uniform(8, 25, n_workers)
    texts = [" ".join(rng.choice(WORDS, rng.integers(3, 12))) for _ in range(500)]
    turn_sets = []
    for _ in range(200):
        picks = rng.integers(0, len(texts), 20)
        turn_sets.append([texts[i] for i in picks])
    models = [m + p for m in GENUINE for p in ("", "_p")]
    quality = {m + p: q - (0.1 if p else 0) for m, q in GENUINE.items() for p in ("", "_p")}
    quality["qc"] = -1.5
    study = {"type": "study", "format_version": "1.0", "name": f"synthetic-x{scale}",
             "criteria": [{"name": n, "positive": p, "scale": "continuous", "min": 0, "max": 100, "question": n}
                          for n, p in CRITERIA], "qc_models": ["qc"]}
    counts = {"hits": n_hits, "workers": n_workers, "conversations": 0, "ratings": 0}
    with open(path, "wb") as out:
        out.write(orjson.dumps(study) + b"\n")
        for hit in range(n_hits):
            worker = int(owner[hit])
            wid, aid = f"W{worker:06d}", f"A{hit:07d}"
            chosen = [m + ("_p" if rng.random() < 0.5 else "") for m in GENUINE] + ["qc"]
            rng.shuffle(chosen)
            duration = float(rng.normal(2400, 900)) if rng.random() > 0.01 else 150.0
            lines = []
            for slot, model in enumerate(chosen):
                cid = f"{aid}_{slot}"
                texts_of = turn_sets[int(rng.integers(0, len(turn_sets)))]
                turns = [{"speaker": "human" if i % 2 == 0 else model, "text": t} for i, t in enumerate(texts_of)]
                lines.append(orjson.dumps({
                    "type": "conversation", "format_version": "1.0", "study": study["name"], "id": cid,
                    "models": [model], "worker_id": wid, "assignment_id": aid, "hit_id": f"H{hit % (n_hits // 2):07d}",
                    "slot": slot, "task": "live_chat_da", "turns": turns, "topic": "dogs",
                    "topic_attitude": ("like", "ambivalent", "dislike")[int(rng.choice(3, p=[0.85, 0.07, 0.08]))],
                    "assignment_duration": max(60.0, duration), "status": "complete"}))
                if random_rater[worker]:
                    values = rng.uniform(0, 100, len(CRITERIA))
                else:
                    values = bias[worker] + spread[worker] * (quality[model] + rng.normal(0, 0.8, len(CRITERIA)))
                values = np.clip(np.round(values), 0, 100)
                for (name, positive), value in zip(CRITERIA, values):
                    raw = value if positive else 100 - value
                    lines.append(orjson.dumps({
                        "type": "rating", "format_version": "1.0", "study": study["name"], "conversation_id": cid,
                        "worker_id": wid, "model": model, "criterion": name, "scale": "continuous",
                        "scale_min": 0, "scale_max": 100, "value": int(raw), "assignment_id": aid}))
                counts["conversations"] += 1
                counts["ratings"] += len(CRITERIA)
            out.write(b"\n".join(lines) + b"\n")
    counts["bytes"] = path.stat().st_size
    counts["models"] = models
    return counts


IN_PROCESS = r"""
import gc, json, resource, sys, time
if len(sys.argv) > 4:  # earlier code: its tree first, and the editable install's finder (which wins) dropped
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")]
    sys.path.insert(0, sys.argv[4])
from parlai_dialeval.scripts.command_line import load_data
from parlai_dialeval.analysis import live_chat
from parlai_dialeval.scripts import analyze_live_chat
from parlai_dialeval.scripts.analyze_live_chat import config_from_opt, write_outputs
from parlai_dialeval.data import read_jsonl
opt = {"data": [sys.argv[1]], "out": sys.argv[2]}
t0, c0 = time.perf_counter(), time.process_time()
# as run_analysis does (where it does: earlier code has no import_in_background)
imports = getattr(analyze_live_chat, "import_in_background", lambda: None)()
data = read_jsonl(opt["data"], columnar=False) if sys.argv[3] == "detailed" else load_data(opt, log=None)
if imports is not None:
    imports.join()
t1, c1 = time.perf_counter(), time.process_time()
gc.freeze()  # as run_analysis does
result = live_chat.analyze(data, config_from_opt(opt))
gc.unfreeze()
t2, c2 = time.perf_counter(), time.process_time()
write_outputs(result, __import__("pathlib").Path(opt["out"]))
t3, c3 = time.perf_counter(), time.process_time()
print(json.dumps({"load": t1 - t0, "analyse": t2 - t1, "write": t3 - t2, "total": t3 - t0,
                  "cpu_load": c1 - c0, "cpu_analyse": c2 - c1, "cpu_write": c3 - c2, "cpu_total": c3 - c0,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "workers": result.summary["n_workers"], "passed": result.summary["n_workers_passed"],
                  "ranking": result.system_scores["model"].tolist()}))
"""


def _measure_child(command: list[str], env: dict) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak memory (MiB) of one command, in a process of its own (wait4
    gives that process's own usage, not the largest child's so far)."""
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: a chatty command cannot block on it
        start = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status):
            errors.seek(0)
            raise SystemExit(f"{' '.join(command)} failed: {errors.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=100, help="multiple of free run 1's size")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "live_chat"))
    parser.add_argument("--skip-cli", action="store_true", help="measure only the in-process runs")
    parser.add_argument("--detailed-only", action="store_true",
                        help="measure only the detailed (record-by-record) loader, the baseline")
    parser.add_argument("--before", metavar="DIR",
                        help="also measure the columnar runs with earlier code: a folder holding its parlai_dialeval "
                             "(e.g. git archive COMMIT parlai_dialeval | tar -x -C DIR)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = out / f"synthetic_x{args.scale}.jsonl"
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    start = time.perf_counter()
    sizes = study(data, args.scale)
    print(f"study of {sizes['hits']:,} HITs, {sizes['workers']:,} workers, {sizes['conversations']:,} conversations, "
          f"{sizes['ratings']:,} ratings ({sizes['bytes'] / 1e6:.0f} MB), ready in {time.perf_counter() - start:.1f} s")

    cache = out / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    print(f"load average before: {os.getloadavg()[0]:.1f} (the machine is shared: wall time above CPU time "
          "means other jobs took the cores)")
    runs = {}
    modes = ["detailed"] if args.detailed_only else ["detailed", "columnar, cold cache", "columnar, warm cache"]
    if args.before and not args.detailed_only:
        modes[1:1] = ["before: columnar, cold cache", "before: columnar, warm cache"]
    for mode in modes:
        before = mode.startswith("before")
        if "cold" in mode:
            shutil.rmtree(cache, ignore_errors=True)
        command = [sys.executable, "-c", IN_PROCESS, str(data), str(out / "in_process"),
                   mode.removeprefix("before: ").split(",")[0], *([args.before] if before else [])]
        result = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        runs[mode] = numbers = json.loads(result.stdout.strip().splitlines()[-1])
        print(f"{mode}:")
        print(f"  in-process wall: load {numbers['load']:.1f} s + analyse {numbers['analyse']:.1f} s + write "
              f"{numbers['write']:.1f} s = {numbers['total']:.1f} s; peak memory {numbers['peak_rss_mb']:,.0f} MiB; "
              f"{numbers['passed']:,} of {numbers['workers']:,} workers passed")
        print(f"  in-process CPU:  load {numbers['cpu_load']:.1f} s + analyse {numbers['cpu_analyse']:.1f} s + write "
              f"{numbers['cpu_write']:.1f} s = {numbers['cpu_total']:.1f} s")
    baseline = runs["detailed"]
    for mode, numbers in runs.items():
        if mode != "detailed":
            assert numbers["ranking"] == baseline["ranking"] and numbers["passed"] == baseline["passed"], mode
            print(f"{mode}: load {baseline['load'] / numbers['load']:.1f}x faster than detailed (CPU "
                  f"{baseline['cpu_load'] / numbers['cpu_load']:.1f}x), whole run "
                  f"{baseline['total'] / numbers['total']:.1f}x (CPU {baseline['cpu_total'] / numbers['cpu_total']:.1f}x); "
                  "same ranking and QC outcome")
    report = out / "in_process" / "report.html"
    print(f"report.html: {report.stat().st_size / 1024:.0f} KB, "
          f"{sum(p.stat().st_size for p in report.parent.glob('*.png')) / 1024:.0f} KB of PNG")
    for cache_state in () if args.skip_cli else ("cold", "warm"):
        if cache_state == "cold":
            shutil.rmtree(cache, ignore_errors=True)
        wall, cpu, peak = _measure_child([str(Path(sys.executable).with_name("dialeval")), "analyze_live_chat",
                                          "--data", str(data), "--out", str(out / "cli")], env)
        print(f"CLI dialeval analyze_live_chat, {cache_state} cache: {wall:.1f} s wall, {cpu:.1f} s CPU, "
              f"peak memory {peak:,.0f} MiB")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    for mode, numbers in runs.items():
        ok = numbers["total"] < 10 and numbers["peak_rss_mb"] < 2048
        print(f"target (< 10 s wall, < 2 GB), {mode}:", "met" if ok else "NOT met",
              f"(CPU {numbers['cpu_total']:.1f} s, all threads)")


if __name__ == "__main__":
    main()
