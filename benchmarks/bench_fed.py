"""FED reference mode: FedScorer (prefix reuse, batching, de-duplicated follow-ups) against the spec's
naive per-utterance loop (one ``model(ids, labels=ids)`` per follow-up, batch size 1), same model and
items in one run. The model has DialoGPT-small's shape (GPT-2, 12 layers, 768 wide, 50,257-token
output layer) with random weights and a byte-level BPE trained on the FED dataset (no downloads).

    .venv/bin/python benchmarks/bench_fed.py [--fed PATH/fed_data.json] [--turn 10] [--dialog 3] [--repeat 3]
        [--naive-packed]

Each variant runs in its own process so its peak memory (max RSS) is its own. FedScorer scores each
level ``--repeat`` times and its median is compared (its few seconds are easily hit by a burst of other
jobs on a shared machine; the naive loop's minutes average them out); the script prints
seconds, items per second and tokens fed to the model per level, the linear layers' GFLOP/s (set
against the machine's fp32 GEMM GFLOP/s at the model's shapes, measured first, through MKL as
torch's matmul calls it and through oneDNN as FedScorer does), peak memory, the speed-up and the
largest score difference. ``--naive-packed`` also times the naive loop with FedScorer's oneDNN
layers, to show how much of the speed-up is the kernels rather than the work saved.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
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
        ids = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]], device=model.device)
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


def run_variant(variant: str, model_path: str, items_path: str, out_path: str, threads: int, repeat: int) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from parlai_dialeval.metrics.fed import FedScorer, load_followups, select_qualities

    torch.set_num_threads(threads)
    items = json.loads(Path(items_path).read_text())
    if variant in ("naive", "naive_packed"):
        model = AutoModelForCausalLM.from_pretrained(model_path).eval()
        if variant == "naive_packed":
            from parlai_dialeval.metrics.lm_packing import pack_linear_layers

            pack_linear_layers(model)
        tokenizer = AutoTokenizer.from_pretrained(model_path)
        followups = load_followups()
        qualities = select_qualities(followups)
        score = lambda convs: naive_scores(model, tokenizer, convs, followups, qualities)  # noqa: E731
    else:
        scorer = FedScorer(model_path, mode="reference", device="cpu", batch_size=16)

        def score(convs):
            scorer.cache.clear()  # every repetition scores from scratch
            return scorer.score(convs)
    loaded_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {"loaded_rss_mib": loaded_rss / 1024}
    tokens = []  # tokens fed to the model (padding included): the work both variants do
    model = scorer.model if variant == "fed" else model
    count_tokens(model, tokens)
    for level in ("turn", "dialog"):
        runs = []
        for _ in range(repeat if variant == "fed" else 1):
            tokens.clear()
            start, cpu = time.perf_counter(), time.process_time()
            result[f"{level}_scores"] = score(items[level])
            runs.append((time.perf_counter() - start, time.process_time() - cpu))
        result[f"{level}_runs"] = runs
        result[f"{level}_seconds"] = statistics.median(wall for wall, _ in runs)
        result[f"{level}_cpu"] = statistics.median(cpu for _, cpu in runs)
        result[f"{level}_tokens"] = sum(tokens)
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    Path(out_path).write_text(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fed", default=str(REPO.parent / "shared" / "data" / "fed" / "fed_data.json"))
    parser.add_argument("--turn", type=int, default=10)
    parser.add_argument("--dialog", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3,
                        help="FedScorer's repetitions per level (the median is compared; the naive loop runs once)")
    parser.add_argument("--naive-packed", action="store_true",
                        help="also time the naive loop with FedScorer's oneDNN linear layers")
    parser.add_argument("--variant", choices=("naive", "naive_packed", "fed"), help=argparse.SUPPRESS)
    parser.add_argument("--paths", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.variant:
        run_variant(args.variant, *args.paths, args.threads, args.repeat)
        return

    from tiny_lm import build_gpt2

    items = load_items(Path(args.fed), args.turn, args.dialog)
    load_start = os.getloadavg()[0]
    peak = gemm_gflops(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        build_gpt2(Path(tmp) / "model", texts=_training_texts(Path(args.fed)), n_layer=12, n_embd=768,
                   n_head=12, n_positions=1024, vocab_size=50257, tokenizer_vocab=8000)
        items_path = Path(tmp) / "items.json"
        items_path.write_text(json.dumps(items))
        results = {}
        for variant in ("fed", "naive") + (("naive_packed",) if args.naive_packed else ()):
            out = Path(tmp) / f"{variant}.json"
            subprocess.run([sys.executable, __file__, "--variant", variant, "--threads", str(args.threads),
                            "--repeat", str(args.repeat),
                            "--paths", str(Path(tmp) / "model"), str(items_path), str(out)],
                           check=True, env=dict(os.environ, TQDM_DISABLE="1"))
            results[variant] = json.loads(out.read_text())
    print(_report(results, items, peak))
    print(f"load average (1 min) at start / end: {load_start:.1f} / {os.getloadavg()[0]:.1f}")


def _training_texts(fed_path: Path) -> list[str]:
    data = json.loads(fed_path.read_text(encoding="utf-8"))
    return [item["context"] + "\n" + item.get("response", "") for item in data]


# The benchmark model: GPT-2, 12 layers, 768 wide, 50,257-token output layer.
LAYERS, WIDTH, VOCAB = 12, 768, 50257


def linear_macs(n_layer: int, n_embd: int, **_) -> int:
    """Multiply-adds of one token in the linear layers: per layer attention's 3d + d and the MLP's 4d + 4d
    outputs of d inputs each (12 d^2), then the output layer. Attention scores are left out (a few %)."""
    return n_layer * 12 * n_embd ** 2 + n_embd * VOCAB


LINEAR_MACS = linear_macs(LAYERS, WIDTH)


def count_tokens(model, tokens: list[int]):
    """Append the tokens of every forward pass of ``model`` (padding included) to ``tokens``; returns the hook."""
    return model.register_forward_pre_hook(
        lambda module, args, kwargs: tokens.append(kwargs.get("input_ids", args[0] if args else None).numel()),
        with_kwargs=True)


def gemm_gflops(threads: int, rows: int = 256) -> dict[str, float]:
    """fp32 GFLOP/s of the model's linear layers at ``rows`` tokens: torch's matmul (MKL) and oneDNN."""
    import torch

    from parlai_dialeval.metrics.lm_packing import PackedLinear

    torch.set_num_threads(threads)
    shapes = [(WIDTH, 3 * WIDTH), (WIDTH, WIDTH), (WIDTH, 4 * WIDTH), (4 * WIDTH, WIDTH), (WIDTH, VOCAB)]
    calls = {"mkl": [], "onednn": []}
    for n_in, n_out in shapes:
        x, layer = torch.randn(rows, n_in), torch.nn.Linear(n_in, n_out)
        calls["mkl"].append(lambda x=x, layer=layer: layer(x))
        if torch.backends.mkldnn.is_available():
            calls["onednn"].append(lambda x=x, packed=PackedLinear(layer.weight, layer.bias): packed(x))
    flops = 2 * rows * sum(n_in * n_out for n_in, n_out in shapes)
    result = {}
    with torch.inference_mode():
        for name, fns in calls.items():
            if fns:
                for fn in fns:
                    fn()
                start = time.perf_counter()
                for _ in range(3):
                    for fn in fns:
                        fn()
                result[name] = 3 * flops / (time.perf_counter() - start) / 1e9
    return result


def _report(results, items, peak) -> str:
    fed = results["fed"]
    worst = max(abs(a[q] - b[q]) for level in ("turn", "dialog") for res in results.values() if res is not fed
                for a, b in zip(fed[f"{level}_scores"], res[f"{level}_scores"]) for q in a)
    gemm = ", ".join(f"{k} {v:.0f} GFLOP/s" for k, v in peak.items())
    lines = [f"fp32 GEMM at the model's shapes, 256 rows: {gemm}",
             "variant      level   items  seconds  items/s   tokens  CPU s  linear GFLOP  GFLOP/s"]
    for name, res in results.items():
        for level in ("turn", "dialog"):
            n, sec, tokens = len(items[level]), res[f"{level}_seconds"], res[f"{level}_tokens"]
            gflop = 2 * LINEAR_MACS * tokens / 1e9
            lines.append(f"{name:12} {level:7} {n:5d} {sec:8.2f} {n / sec:8.3f} {tokens:8d} "
                         f"{res[f'{level}_cpu']:7.2f} {gflop:12.0f} {gflop / sec:8.0f}")
        if len(res["turn_runs"]) > 1:
            runs = "; ".join(f"{level} " + ", ".join(f"{w:.2f}/{c:.2f}" for w, c in res[f"{level}_runs"])
                             for level in ("turn", "dialog"))
            lines.append(f"{name:12} repetitions (wall s / CPU s; the median above): {runs}")
        lines.append(f"{name:12} peak RSS {res['peak_rss_mib']:.0f} MiB (after loading the model: "
                     f"{res['loaded_rss_mib']:.0f} MiB)")
    for base in (name for name in results if name != "fed"):
        # Process CPU time (both threads) moves less than wall time when other jobs share the cores.
        for label, key in (("speed-up", "seconds"), ("CPU-time ratio", "cpu")):
            spent = {level: (results[base][f"{level}_{key}"], fed[f"{level}_{key}"]) for level in ("turn", "dialog")}
            ratio = {level: theirs / ours for level, (theirs, ours) in spent.items()}
            total = sum(theirs for theirs, _ in spent.values()) / sum(ours for _, ours in spent.values())
            lines.append(f"{label} ({base} / fed, all items): {total:.1f}x "
                         f"(turn {ratio['turn']:.1f}x, dialog {ratio['dialog']:.1f}x)")
    lines.append(f"largest |score difference|: {worst:.2e} (must be <= 1e-4)")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
