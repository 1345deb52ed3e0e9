"""Local judges at scale: ``ask_batch`` (``hf:``: left-padded greedy generation after a shared prefix's
cache, rows leaving as their reply ends; ``lm:``: batched scoring; one model copy) against the original
one-at-a-time loop (``ask`` per prompt, on torch's default CPU threads, as the code before batching),
same model, same prompts, one run. The prompts are the ``dialeval judge --protocol ab`` prompts (both
orders) of the first ``--items`` items of a ChatEval A/B comparison; the model is the real-model fixture
(SmolLM2-135M-Instruct, parlai_dialeval.testing.real_model).

    .venv/bin/python benchmarks/bench_judge_batch.py [--items 8] [--judge hf lm] [--max-tokens 20]
        [--batch-size N] [--rounds 3] [--chateval DIR]

Where the judge takes fewer CPU threads than torch's default (``free_cpu_threads``: other processes
hold cores), the one-at-a-time loop also runs on that many threads, so the ratio splits into what the
threads give and what batching gives. Rounds alternate the runs and medians are compared: a burst of
other jobs on a shared machine then falls on every side. Prints every round's seconds with the load
average at its start and end, the medians, the ratios, and whether every answer is the same (greedy:
it must be).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "data" / "chateval" / "amt_ab_2018" / "AMT_NCM_Test_Cakechat_NCM"


def questions(folder: Path, count: int) -> list[tuple[str, list[str]]]:
    from parlai_dialeval.importers import load
    from parlai_dialeval.judge.items import build_items, options, prompt

    items, _, _ = build_items(load([folder], log=None), "ab")
    return [(prompt(item, first), options(item)) for item in items[:count] for first in (0, 1)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=8, help="ChatEval items (two prompts each)")
    parser.add_argument("--judge", nargs="+", default=["hf", "lm"], choices=("hf", "lm"))
    parser.add_argument("--max-tokens", type=int, default=20, help="reply length of the hf: judge (as dialeval judge)")
    parser.add_argument("--batch-size", type=int, default=None, help="default: all the prompts in one batch")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (medians compared)")
    parser.add_argument("--chateval", type=Path, default=DEFAULT, help="a ChatEval amt_ab_2018 comparison folder")
    args = parser.parse_args(argv)

    import torch

    from parlai_dialeval.judge.judges import make_judge
    from parlai_dialeval.metrics.lm_loading import torch_threads
    from parlai_dialeval.testing import real_model

    if real_model.missing():
        sys.exit(real_model.missing())
    asked = questions(args.chateval, args.items)
    default = torch.get_num_threads()
    print(f"{len(asked)} prompts ({args.items} items x 2 orders) from {args.chateval.name}; "
          f"{len(os.sched_getaffinity(0))} cores; torch's default threads {default}")
    for kind in args.judge:
        judge = make_judge(f"{kind}:{real_model.model_dir()}", max_tokens=args.max_tokens, batch_size=args.batch_size)
        threads, judge.threads = judge.threads or default, None  # the benchmark sets the threads of each run
        runs = {"original": (default, False)}
        if threads != default:
            runs[f"one at a time, {threads} thread(s)"] = (threads, False)
        runs[f"batched, {threads} thread(s)"] = (threads, True)
        times = {name: [] for name in runs}
        answers = {}
        print(f"{kind}: judge threads {threads} (load average {os.getloadavg()[0]:.2f} when it was made)")
        for round_ in range(args.rounds):
            for name, (count, batched) in runs.items():
                load = os.getloadavg()[0]
                start = time.perf_counter()
                with torch_threads(count):
                    replies = (judge.ask_batch(asked, batch_size=args.batch_size or len(asked)) if batched
                               else [judge.ask(*q) for q in asked])
                times[name].append(time.perf_counter() - start)
                answers[name] = replies
                print(f"  round {round_ + 1} {name}: {times[name][-1]:.1f} s "
                      f"(load average {load:.2f} -> {os.getloadavg()[0]:.2f})", flush=True)
        medians = {name: statistics.median(values) for name, values in times.items()}
        batched_name = list(runs)[-1]
        reference = [r.text for r in answers["original"]]
        for name in runs:
            same = sum(a == b.text for a, b in zip(reference, answers[name]))
            ratio = medians[name] / medians[batched_name]
            print(f"{kind}: {name}: median {medians[name]:.1f} s ({medians[name] / len(asked):.2f} s/prompt), "
                  f"batched is {ratio:.1f}x faster; same answers as the original {same}/{len(asked)}")
        if kind == "hf":
            tokens = [r.completion_tokens for r in answers["original"]]
            print(f"{kind}: reply tokens min {min(tokens)} / mean {sum(tokens) / len(tokens):.1f} / max {max(tokens)}")
        differing = [(a, b.text) for a, b in zip(reference, answers[batched_name]) if a != b.text]
        if differing:
            print("  differing:", differing[:5])
    return 0


if __name__ == "__main__":
    sys.exit(main())
