"""`dialeval fed` under torchrun: 2 gloo CPU processes against 1, same items, same model, one run.

    .venv/bin/python benchmarks/bench_fed_sharded.py [--fed PATH/fed_data.json] [--items 40] [--part-size 5]

The model is a GPT-2 with random weights (6 layers, 512 wide, 50,257-token output layer; byte-level BPE
trained on the FED dataset; no downloads); the items are the first FED conversations of each level
(fed-text input). Each launch gets one thread per process (OMP_NUM_THREADS=1, as torchrun sets for
several processes), so the two runs do the same arithmetic; the script prints both wall times, the
ratio, and whether the two output files are byte-identical.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))


def main() -> None:
    from bench_fed import _training_texts, load_items
    from tiny_lm import build_gpt2

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fed", default=str(REPO.parent / "shared" / "data" / "fed" / "fed_data.json"))
    parser.add_argument("--items", type=int, default=40)
    parser.add_argument("--part-size", type=int, default=5)
    args = parser.parse_args()
    items = load_items(Path(args.fed), args.items * 3 // 4, args.items - args.items * 3 // 4)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        build_gpt2(tmp / "model", texts=_training_texts(Path(args.fed)), n_layer=6, n_embd=512, n_head=8,
                   n_positions=1024, vocab_size=50257, tokenizer_vocab=8000)
        (tmp / "items.txt").write_text("\n".join(items["turn"] + items["dialog"]) + "\n")
        seconds, load = {}, os.getloadavg()[0]
        for n in (1, 2):
            out = tmp / f"fed-{n}.jsonl"
            command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n),
                       "-m", "parlai_dialeval.cli", "fed", "--data", str(tmp / "items.txt"), "--data-format",
                       "fed-text", "--out", str(out), "--lm", str(tmp / "model"), "--device", "cpu",
                       "--part-size", str(args.part_size)]
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True,
                           env=dict(os.environ, OMP_NUM_THREADS="1", TQDM_DISABLE="1"))
            seconds[n] = time.perf_counter() - start
        same = (tmp / "fed-1.jsonl").read_bytes() == (tmp / "fed-2.jsonl").read_bytes()
    n_items = len(items["turn"]) + len(items["dialog"])
    print(f"{n_items} items ({len(items['turn'])} turn-level, {len(items['dialog'])} dialog-level), "
          f"parts of {args.part_size}, 1 thread per process")
    print(f"1 process:   {seconds[1]:7.1f} s (launch and model load included)")
    print(f"2 processes: {seconds[2]:7.1f} s")
    print(f"speed-up: {seconds[1] / seconds[2]:.2f}x; outputs byte-identical: {same}")
    print(f"load average (1 min) at start / end: {load:.1f} / {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
