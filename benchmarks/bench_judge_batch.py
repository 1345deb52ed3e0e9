"""Local judges at scale: ``ask_batch`` (left-padded batched greedy generation for ``hf:``, batched
scoring for ``lm:``; one model copy) against the one-at-a-time loop (``ask`` per prompt), same model,
same prompts, one run. The prompts are the ``dialeval judge --protocol ab`` prompts (both orders) of the
first ``--items`` items of a ChatEval A/B comparison; the model is the real-model fixture
(SmolLM2-135M-Instruct, parlai_dialeval.testing.real_model).

    .venv/bin/python benchmarks/bench_judge_batch.py [--items 24] [--judge hf lm] [--max-tokens 20]
        [--batch-size N] [--rounds 3] [--chateval DIR]

Prints each round's seconds, the medians per prompt of both, their ratio, and whether every answer is the
same (greedy: it must be).
"""
from __future__ import annotations

import argparse
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
    parser.add_argument("--items", type=int, default=24, help="ChatEval items (two prompts each)")
    parser.add_argument("--judge", nargs="+", default=["hf", "lm"], choices=("hf", "lm"))
    parser.add_argument("--max-tokens", type=int, default=20, help="reply length of the hf: judge (as dialeval judge)")
    parser.add_argument("--batch-size", type=int, default=None, help="default: all the prompts in one batch")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of both (medians compared)")
    parser.add_argument("--chateval", type=Path, default=DEFAULT, help="a ChatEval amt_ab_2018 comparison folder")
    args = parser.parse_args(argv)

    import torch

    from parlai_dialeval.judge.judges import make_judge
    from parlai_dialeval.testing import real_model

    if real_model.missing():
        sys.exit(real_model.missing())
    asked = questions(args.chateval, args.items)
    print(f"{len(asked)} prompts ({args.items} items x 2 orders) from {args.chateval.name}; "
          f"torch threads {torch.get_num_threads()}")
    for kind in args.judge:
        judge = make_judge(f"{kind}:{real_model.model_dir()}", max_tokens=args.max_tokens, batch_size=args.batch_size)
        # Rounds alternate the two, and medians are compared: a burst of other jobs on a shared machine
        # then falls on both sides rather than on one.
        times = {"single": [], "batched": []}
        for _ in range(args.rounds):
            start = time.perf_counter()
            single = [judge.ask(*q) for q in asked]
            times["single"].append(time.perf_counter() - start)
            start = time.perf_counter()
            replies = judge.ask_batch(asked, batch_size=args.batch_size or judge.batch_size or len(asked))
            times["batched"].append(time.perf_counter() - start)
        one_at_a_time, at_once = (statistics.median(times[k]) for k in ("single", "batched"))
        tokens = [r.completion_tokens for r in single]
        single, batched = [r.text for r in single], [r.text for r in replies]
        same = sum(a == b for a, b in zip(single, batched))
        print(f"{kind}: rounds single {[round(t, 1) for t in times['single']]} s, batched "
              f"{[round(t, 1) for t in times['batched']]} s")
        print(f"{kind}: median one at a time {one_at_a_time:.1f} s ({one_at_a_time / len(asked):.2f} s/prompt); "
              f"batched {at_once:.1f} s ({at_once / len(asked):.2f} s/prompt); {one_at_a_time / at_once:.1f}x; "
              f"same answers {same}/{len(asked)}"
              + (f"; reply tokens min {min(tokens)} / mean {sum(tokens) / len(tokens):.1f} / max {max(tokens)}"
                 if kind == "hf" else ""), flush=True)
        if same != len(asked):
            print("  differing:", [(a, b) for a, b in zip(single, batched) if a != b][:5])
    return 0


if __name__ == "__main__":
    sys.exit(main())
