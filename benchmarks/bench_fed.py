"""FED reference mode: FedScorer (prefix reuse, batching, de-duplicated follow-ups) against the spec's
naive per-utterance loop (one ``model(ids, labels=ids)`` per follow-up, batch size 1), same model and
items in one run. The model has DialoGPT-small's shape (GPT-2, 12 layers, 768 wide, 50,257-token
output layer) with random weights and a byte-level BPE trained on the FED dataset (no downloads).

    .venv/bin/python benchmarks/bench_fed.py [--fed PATH/fed_data.json] [--turn 10] [--dialog 3]

Each variant runs in its own process so its peak memory (max RSS) is its own; the script prints
seconds, items per second and tokens fed to the model per level, peak memory, the speed-up and the
largest score difference.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))


def load_items(fed_path: Path, n_turn: int, n_dialog: int) -> dict[str, list[str]]:
    """The first ``n_turn`` turn-level and ``n_dialog`` dialog-level items, as conversation strings."""
    from parlai_dialeval.importers import load
    from parlai_dialeval.metrics.fed import join_turns

    conversations = load([fed_path], log=None).conversations
    items: dict[str, list[str]] = {"turn": [], "dialog": []}
    for turns, meta in zip(conversations["turns"], conversations["meta"]):
        level = meta["level"]
        if len(items[level]) < {"turn": n_turn, "dialog": n_dialog}[level]:
            items[level].append(join_turns([t["text"] for t in turns]))
    return items


def naive_scores(model, tokenizer, conversations, followups, qualities):
    """The spec's algorithm, literally: every follow-up of every quality scored on its own."""
    import torch

    from parlai_dialeval.metrics.fed import SEPARATOR, normalise

    def nll(text):
        ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
        return model(ids, labels=ids).loss.item()

    out = []
    with torch.inference_mode():
        for conversation in conversations:
            conversation = normalise(conversation)
            scores = {}
            for name in qualities:
                q = followups[name]
                high = sum(nll(conversation + SEPARATOR + m) for m in q.positive) / max(len(q.positive), 1)
                low = sum(nll(conversation + SEPARATOR + m) for m in q.negative) / max(len(q.negative), 1)
                scores[name] = low - high
            out.append(scores)
    return out


def run_variant(variant: str, model_path: str, items_path: str, out_path: str, threads: int) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from parlai_dialeval.metrics.fed import FedScorer, load_followups, select_qualities

    torch.set_num_threads(threads)
    items = json.loads(Path(items_path).read_text())
    if variant == "naive":
        model = AutoModelForCausalLM.from_pretrained(model_path).eval()
        tokenizer = AutoTokenizer.from_pretrained(model_path)
        followups = load_followups()
        qualities = select_qualities(followups)
        score = lambda convs: naive_scores(model, tokenizer, convs, followups, qualities)  # noqa: E731
    else:
        scorer = FedScorer(model_path, mode="reference", device="cpu", batch_size=16)
        score = scorer.score
    loaded_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {"loaded_rss_mib": loaded_rss / 1024}
    tokens = []  # tokens fed to the model (padding included): the work both variants do
    model = model if variant == "naive" else scorer.model
    model.register_forward_pre_hook(
        lambda module, args, kwargs: tokens.append(kwargs.get("input_ids", args[0] if args else None).numel()),
        with_kwargs=True)
    for level in ("turn", "dialog"):
        start, cpu = time.perf_counter(), time.process_time()
        result[f"{level}_scores"] = score(items[level])
        result[f"{level}_seconds"] = time.perf_counter() - start
        result[f"{level}_cpu"] = time.process_time() - cpu
        result[f"{level}_tokens"] = sum(tokens)
        tokens.clear()
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(out_path).write_text(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fed", default=str(REPO.parent / "shared" / "data" / "fed" / "fed_data.json"))
    parser.add_argument("--turn", type=int, default=10)
    parser.add_argument("--dialog", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--variant", choices=("naive", "fed"), help=argparse.SUPPRESS)
    parser.add_argument("--paths", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        run_variant(args.variant, *args.paths, args.threads)
        return

    from tiny_lm import build_gpt2

    items = load_items(Path(args.fed), args.turn, args.dialog)
    with tempfile.TemporaryDirectory() as tmp:
        build_gpt2(Path(tmp) / "model", texts=_training_texts(Path(args.fed)), n_layer=12, n_embd=768,
                   n_head=12, n_positions=1024, vocab_size=50257, tokenizer_vocab=8000)
        items_path = Path(tmp) / "items.json"
        items_path.write_text(json.dumps(items))
        results, load_start = {}, os.getloadavg()[0]
        for variant in ("fed", "naive"):
            out = Path(tmp) / f"{variant}.json"
            subprocess.run([sys.executable, __file__, "--variant", variant, "--threads", str(args.threads),
                            "--paths", str(Path(tmp) / "model"), str(items_path), str(out)],
                           check=True, env=dict(os.environ, TQDM_DISABLE="1"))
            results[variant] = json.loads(out.read_text())
    print(_report(results, items))
    print(f"load average (1 min) at start / end: {load_start:.1f} / {os.getloadavg()[0]:.1f}")


def _training_texts(fed_path: Path) -> list[str]:
    data = json.loads(fed_path.read_text(encoding="utf-8"))
    return [item["context"] + "\n" + item.get("response", "") for item in data]


def _report(results, items) -> str:
    fed, naive = results["fed"], results["naive"]
    worst = max(abs(a[q] - b[q]) for level in ("turn", "dialog")
                for a, b in zip(fed[f"{level}_scores"], naive[f"{level}_scores"]) for q in a)
    lines = ["variant  level   items  seconds  items/s   tokens  CPU s"]
    for name, res in (("naive", naive), ("fed", fed)):
        for level in ("turn", "dialog"):
            n, sec = len(items[level]), res[f"{level}_seconds"]
            lines.append(f"{name:8} {level:7} {n:5d} {sec:8.2f} {n / sec:8.3f} {res[f'{level}_tokens']:8d} "
                         f"{res[f'{level}_cpu']:7.2f}")
        lines.append(f"{name:8} peak RSS {res['peak_rss_mib']:.0f} MiB (after loading the model: "
                     f"{res['loaded_rss_mib']:.0f} MiB)")
    total = {k: res["turn_seconds"] + res["dialog_seconds"] for k, res in results.items()}
    lines.append(f"speed-up (naive / fed, all items): {total['naive'] / total['fed']:.1f}x "
                 f"(turn {naive['turn_seconds'] / fed['turn_seconds']:.1f}x, "
                 f"dialog {naive['dialog_seconds'] / fed['dialog_seconds']:.1f}x)")
    # Process CPU time (both threads) moves less than wall time when other jobs share the cores.
    cpu = {k: res["turn_cpu"] + res["dialog_cpu"] for k, res in results.items()}
    lines.append(f"CPU-time ratio (naive / fed): {cpu['naive'] / cpu['fed']:.1f}x "
                 f"(turn {naive['turn_cpu'] / fed['turn_cpu']:.1f}x, dialog {naive['dialog_cpu'] / fed['dialog_cpu']:.1f}x)")
    lines.append(f"largest |score difference|: {worst:.2e} (must be <= 1e-4)")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
