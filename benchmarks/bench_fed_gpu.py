"""FED on a GPU: ``FedScorer`` on CUDA checked against the same model's CPU fp32 scores (both modes) and timed
against the spec's naive per-utterance loop (``bench_fed.naive_scores``) on the same GPU. Random-weight GPT-2s of
DialoGPT-small's shape (12 layers, 768 wide) and DialoGPT-large's (36 layers, 1280 wide, 20 heads), both with
50,257-token output layers, and bench_fed.py's byte-level BPE trained on the FED dataset (no downloads).

    python benchmarks/bench_fed_gpu.py [--fed PATH/fed_data.json] [--turn 10] [--dialog 3] [--shapes small,large]
        [--dtypes float32,bfloat16] [--check-turn 4] [--check-dialog 2] [--repeat 3] [--json OUT]
        [--save-items ITEMS.json | --items ITEMS.json] [--without-parlai]

--save-items writes the chosen items and stops; --items reads them back, for a machine without the importers'
dependencies (the tokenizer is still trained on --fed).

One process. Per shape: the CPU fp32 scores of the first ``--check-turn`` turn-level and ``--check-dialog``
dialog-level items in both modes (the correctness reference), then per dtype and mode ``FedScorer`` on the
device (a warm-up item first; each level ``--repeat`` times, the median reported; ``torch.cuda.synchronize``
around every timed call), then the naive loop (reference mode, once per level after a warm-up item). Tokens are
those fed to the model, padding included (a forward pre-hook, as in bench_fed.py).
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fed import VOCAB, count_tokens, linear_macs  # noqa: E402  (imports neither torch nor the package)

SHAPES = {"small": {"n_layer": 12, "n_embd": 768, "n_head": 12},  # microsoft/DialoGPT-small
          "large": {"n_layer": 36, "n_embd": 1280, "n_head": 20}}  # microsoft/DialoGPT-large
LEVELS = ("turn", "dialog")


def sync(device) -> None:
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device, repeat: int, tokens: list[int]):
    """(result of the last call, median seconds, tokens of one call, every call's seconds)."""
    runs, result = [], None
    for _ in range(repeat):
        tokens.clear()
        sync(device)
        start = time.perf_counter()
        result = fn()
        sync(device)
        runs.append(time.perf_counter() - start)
    return result, statistics.median(runs), sum(tokens), runs


def largest_difference(a: list[dict], b: list[dict]) -> tuple[float, float]:
    """(largest |a - b|, largest |a - b| / max(1, |b|)) over items and qualities."""
    diffs = [(abs(x[q] - y[q]), abs(x[q] - y[q]) / max(1.0, abs(y[q]))) for x, y in zip(a, b) for q in y]
    return max(d for d, _ in diffs), max(r for _, r in diffs)


def fed_scores(path, mode, device, dtype, items, batch_size):
    from parlai_dialeval.metrics.fed import FedScorer

    scorer = FedScorer(str(path), mode=mode, device=device, dtype=dtype, batch_size=batch_size)
    return scorer, {level: scorer.score(items[level]) for level in LEVELS}


def run_shape(name, path, items, check, args, log) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from bench_fed import naive_scores
    from parlai_dialeval.metrics.fed import load_followups, select_qualities

    shape = SHAPES[name]
    macs = linear_macs(**shape)
    out: dict = {"shape": shape, "linear_macs_per_token": macs, "cpu": {}, "device": {}, "naive": {}}
    # The correctness reference: CPU fp32 (this machine's CPU, the same weights).
    for mode in ("reference", "conditional"):
        start = time.perf_counter()
        scorer, scores = fed_scores(path, mode, "cpu", "float32", check, args.batch_size)
        out["cpu"][mode] = {"scores": scores, "seconds": time.perf_counter() - start, "packed": scorer.packed}
        log(f"{name} cpu fp32 {mode}: {out['cpu'][mode]['seconds']:.1f} s for {sum(map(len, check.values()))} "
            f"items (packed layers: {scorer.packed})")
        del scorer
    for dtype in args.dtypes:
        for mode in ("reference", "conditional"):
            from parlai_dialeval.metrics.fed import FedScorer

            torch.cuda.reset_peak_memory_stats() if args.device.startswith("cuda") else None
            scorer = FedScorer(str(path), mode=mode, device=args.device, dtype=dtype, batch_size=args.batch_size)
            tokens: list[int] = []
            hook = count_tokens(scorer.model, tokens)

            def score(convs, scorer=scorer):
                scorer.cache.clear()  # every repetition scores from scratch
                return scorer.score(convs)

            score(items["turn"][:1])  # warm-up: kernels chosen, allocator filled
            res: dict = {}
            for level in LEVELS:
                scores, seconds, n_tokens, runs = timed(lambda: score(items[level]), args.device, args.repeat, tokens)
                n = len(items[level])
                res[level] = {"items": n, "seconds": seconds, "runs": runs, "tokens": n_tokens,
                              "items_per_s": n / seconds, "tokens_per_s": n_tokens / seconds,
                              "linear_tflops": 2 * macs * n_tokens / seconds / 1e12, "scores": scores}
                log(f"{name} {args.device} {dtype} {mode} {level}: {n} items {seconds:.3f} s "
                    f"({n / seconds:.2f} items/s, {n_tokens} tokens, {n_tokens / seconds:,.0f} tokens/s)")
            # Correctness: the checked items are the first ones of each level.
            device_check = [s for level in LEVELS for s in res[level]["scores"][: len(check[level])]]
            cpu_check = [s for level in LEVELS for s in out["cpu"][mode]["scores"][level]]
            res["vs_cpu_fp32"] = dict(zip(("abs", "rel"), largest_difference(device_check, cpu_check)))
            if dtype != "float32":
                fp32 = out["device"]["float32"][mode]
                res["vs_device_fp32"] = dict(zip(("abs", "rel"), largest_difference(
                    [s for level in LEVELS for s in res[level]["scores"]],
                    [s for level in LEVELS for s in fp32[level]["scores"]])))
            if args.device.startswith("cuda"):
                res["peak_gib"] = torch.cuda.max_memory_allocated() / 2 ** 30
            log(f"{name} {args.device} {dtype} {mode}: vs CPU fp32 {res['vs_cpu_fp32']}"
                + (f", vs {args.device} fp32 {res['vs_device_fp32']}" if "vs_device_fp32" in res else ""))
            out["device"].setdefault(dtype, {})[mode] = res
            hook.remove()
            del scorer, hook
            torch.cuda.empty_cache() if args.device.startswith("cuda") else None
        # The spec's naive loop, reference mode, the plain model as bench_fed.py loads it.
        from parlai_dialeval.metrics.lm_loading import DTYPES

        model = AutoModelForCausalLM.from_pretrained(path, dtype=DTYPES[dtype]).to(args.device).eval()
        tokenizer = AutoTokenizer.from_pretrained(path)
        followups = load_followups()
        qualities = select_qualities(followups)
        tokens = []
        hook = count_tokens(model, tokens)
        naive_scores(model, tokenizer, items["turn"][:1], followups, qualities)  # warm-up
        res = {}
        for level in LEVELS:
            scores, seconds, n_tokens, runs = timed(
                lambda: naive_scores(model, tokenizer, items[level], followups, qualities), args.device, 1, tokens)
            n = len(items[level])
            res[level] = {"items": n, "seconds": seconds, "tokens": n_tokens, "items_per_s": n / seconds,
                          "tokens_per_s": n_tokens / seconds,
                          "linear_tflops": 2 * macs * n_tokens / seconds / 1e12, "scores": scores}
            log(f"{name} {args.device} {dtype} naive {level}: {n} items {seconds:.3f} s "
                f"({n / seconds:.2f} items/s, {n_tokens} tokens, {n_tokens / seconds:,.0f} tokens/s)")
        fed = out["device"][dtype]["reference"]
        res["vs_fed"] = dict(zip(("abs", "rel"), largest_difference(
            [s for level in LEVELS for s in fed[level]["scores"]],
            [s for level in LEVELS for s in res[level]["scores"]])))
        res["speed_up"] = {level: res[level]["seconds"] / fed[level]["seconds"] for level in LEVELS}
        res["speed_up"]["all"] = (sum(res[level]["seconds"] for level in LEVELS)
                                  / sum(fed[level]["seconds"] for level in LEVELS))
        log(f"{name} {args.device} {dtype} naive / FedScorer (reference): {res['speed_up']}; "
            f"score difference {res['vs_fed']}")
        out["naive"][dtype] = res
        hook.remove()
        del model, hook
        torch.cuda.empty_cache() if args.device.startswith("cuda") else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fed", default=str(REPO.parent / "shared" / "data" / "fed" / "fed_data.json"))
    parser.add_argument("--turn", type=int, default=10)
    parser.add_argument("--dialog", type=int, default=3)
    parser.add_argument("--check-turn", type=int, default=4, help="turn-level items also scored on the CPU")
    parser.add_argument("--check-dialog", type=int, default=2, help="dialog-level items also scored on the CPU")
    parser.add_argument("--shapes", default="small,large", help="comma-separated: small, large")
    parser.add_argument("--dtypes", default="float32,bfloat16", help="comma-separated; float32 first")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="a 2-layer, 64-wide model of each shape's vocabulary "
                                                            "(to try the script quickly on a CPU)")
    parser.add_argument("--json", help="write every figure and score here")
    parser.add_argument("--items", help="read the items from this JSON (written by --save-items) instead of --fed")
    parser.add_argument("--save-items", help="write the items chosen from --fed to this JSON and stop")
    parser.add_argument("--without-parlai", action="store_true",
                        help="skip the package's __init__ (it registers ParlAI's dialeval: prefix), for a GPU machine "
                             "without ParlAI; the metric's modules import neither ParlAI nor Mephisto")
    args = parser.parse_args()
    if args.without_parlai:
        skip_package_init()
    args.dtypes = args.dtypes.split(",")
    if args.dtypes[0] != "float32":
        args.dtypes.insert(0, "float32")

    import torch
    import transformers

    from bench_fed import _training_texts, load_items
    from tiny_lm import build_gpt2

    def log(line):
        print(line, flush=True)

    if args.items:  # a JSON {"turn": [...], "dialog": [...]} of conversation strings (no importers needed)
        saved = json.loads(Path(args.items).read_text())
        items = {"turn": saved["turn"][: args.turn], "dialog": saved["dialog"][: args.dialog]}
    else:
        items = load_items(Path(args.fed), args.turn, args.dialog)
    if args.save_items:
        Path(args.save_items).write_text(json.dumps(items))
        return
    check = {"turn": items["turn"][: args.check_turn], "dialog": items["dialog"][: args.check_dialog]}
    env = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "torch": torch.__version__,
           "transformers": transformers.__version__, "python": platform.python_version(), "device": args.device,
           "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
           "cuda_matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
           "float32_matmul_precision": torch.get_float32_matmul_precision(), "cpu_threads": torch.get_num_threads()}
    log(f"environment: {env}")
    results = {"env": env, "args": vars(args), "shapes": {}}
    texts = _training_texts(Path(args.fed))
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.shapes.split(","):
            start = time.perf_counter()
            shape = dict(SHAPES[name], **({"n_layer": 2, "n_embd": 64, "n_head": 2} if args.tiny else {}))
            path = build_gpt2(Path(tmp) / name, texts=texts, n_positions=1024, vocab_size=VOCAB,
                              tokenizer_vocab=8000, **shape)
            log(f"{name}: built in {time.perf_counter() - start:.1f} s")
            results["shapes"][name] = run_shape(name, path, items, check, args, log)
            if args.json:  # after every shape, so a run cut short keeps what it measured
                Path(args.json).write_text(json.dumps(results, indent=1))
    log(summary(results))


def skip_package_init() -> None:
    """parlai_dialeval as a bare namespace of its folder: its submodules import, its __init__ never runs."""
    import types

    package = types.ModuleType("parlai_dialeval")
    package.__path__ = [str(REPO / "parlai_dialeval")]
    sys.modules["parlai_dialeval"] = package


def summary(results) -> str:
    lines = ["shape  dtype     variant      turn items/s  tokens/s   dialog items/s  tokens/s   vs CPU fp32 (abs)"]
    for name, shape in results["shapes"].items():
        for dtype, modes in shape["device"].items():
            for variant, res in list(modes.items()) + [("naive", shape["naive"].get(dtype))]:
                if res is None:
                    continue
                check = res.get("vs_cpu_fp32", {}).get("abs")
                lines.append(f"{name:6} {dtype:9} {variant:12} {res['turn']['items_per_s']:12.2f} "
                             f"{res['turn']['tokens_per_s']:9.0f} {res['dialog']['items_per_s']:14.2f} "
                             f"{res['dialog']['tokens_per_s']:9.0f}   {'' if check is None else f'{check:.2e}'}")
            naive = shape["naive"].get(dtype)
            if naive:
                lines.append(f"{name:6} {dtype:9} speed-up (naive / FedScorer, reference): "
                             f"{naive['speed_up']['all']:.1f}x; score difference {naive['vs_fed']['abs']:.2e}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
