"""Local judges at scale: ``ask_batch`` (``hf:``: left-padded greedy generation after a shared prefix's
cache, rows leaving as their reply ends; ``lm:``: prompts sharing their start scored as one token trie,
batched; one model copy) against the original one-at-a-time loop (as the code before batching, on
torch's default CPU threads: ``hf:`` its ``ask`` per prompt; ``lm:`` one prompt per pass with every
position's logits, ``PrefixLM``'s defaults), same model, same prompts, one run. The prompts are the
``dialeval judge --protocol ab`` prompts (both orders) of the first ``--items`` items of each ChatEval
A/B comparison given (several comparisons of one test set judge the same conversations); the model is
the real-model fixture (SmolLM2-135M-Instruct, parlai_dialeval.testing.real_model).

    .venv/bin/python benchmarks/bench_judge_batch.py [--items 8] [--judge hf lm] [--max-tokens 20]
        [--batch-size N] [--rounds 3] [--chateval DIR [DIR ...]]
        [--device cuda] [--shape small|large [--tiny]] [--save-questions Q.json | --questions Q.json] [--json OUT]

On a GPU machine, which has neither the fixture nor ChatEval: ``--save-questions`` writes the prompts here and
stops, ``--questions`` reads them there, and ``--shape`` builds a random-weight GPT-2 of DialoGPT-small's or
-large's layers in place of the fixture (a byte-level BPE trained on the prompts, the output layer its size so that
every reply decodes to text, a plain chat template): its answers are noise, but batched and one-at-a-time runs must
still give the same ones.
``--json`` writes every run's answers and times (to set a GPU's answers beside a CPU's for the same weights).

Where the judge takes fewer CPU threads than torch's default (``free_cpu_threads``: other processes
hold cores), the one-at-a-time loop also runs on that many threads, so the ratio splits into what the
threads give and what batching gives. Rounds alternate the runs and medians are compared: a burst of
other jobs on a shared machine then falls on every side. Prints every round's seconds (wall clock, and
the process's CPU seconds, which other jobs disturb less) with the load average at its start and end,
the medians, the ratios, whether every answer is the same (greedy: it must be), and for ``lm:`` the
largest difference of an option's log-probability from the original loop's and the share of prompt
tokens that prompts sharing their start save.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared" / "data" / "chateval" / "amt_ab_2018" / "AMT_NCM_Test_Cakechat_NCM"


def questions(folder: Path, count: int) -> list[tuple[str, list[str]]]:
    from parlai_dialeval.importers import load
    from parlai_dialeval.judge.items import build_items, options, prompt

    items, _, _ = build_items(load([folder], log=None), "ab")
    return [(prompt(item, first), options(item)) for item in items[:count] for first in (0, 1)]


def original_lm(judge):
    """The ``lm:`` judge's code before batching: one prompt per pass, every position's logits; (ask, the
    option log-probabilities of its last call)."""
    from parlai_dialeval.judge.judges import Reply
    from parlai_dialeval.metrics.fed_lm import PrefixLM

    lm, last = PrefixLM(judge.model, batch_size=1), {}

    def ask(prompt, options):
        texts, start = judge._texts(prompt, options)
        losses = lm.score([texts], [[start] * len(texts)])[0]
        last["tails"] = [loss.tail for loss in losses]
        return Reply(options[min(range(len(options)), key=lambda i: losses[i].tail)])
    return ask, last


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=8, help="ChatEval items (two prompts each)")
    parser.add_argument("--judge", nargs="+", default=["hf", "lm"], choices=("hf", "lm"))
    parser.add_argument("--max-tokens", type=int, default=20, help="reply length of the hf: judge (as dialeval judge)")
    parser.add_argument("--batch-size", type=int, default=None, help="default: all the prompts in one batch")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (medians compared)")
    parser.add_argument("--chateval", type=Path, nargs="+", default=[DEFAULT],
                        help="ChatEval amt_ab_2018 comparison folders")
    parser.add_argument("--device", default="cpu", help="torch device of both judges (cuda on a GPU machine)")
    parser.add_argument("--shape", choices=("small", "large"), default=None,
                        help="a random-weight GPT-2 of DialoGPT-small's or -large's shape instead of the fixture")
    parser.add_argument("--tiny", action="store_true", help="with --shape: 2 layers, 64 wide (to try it on a CPU)")
    parser.add_argument("--save-questions", type=Path, help="write the prompts to this JSON and stop")
    parser.add_argument("--questions", type=Path,
                        help="the prompts from this JSON (--save-questions) instead of ChatEval")
    parser.add_argument("--json", type=Path, help="write every run's answers and times here")
    args = parser.parse_args(argv)
    if args.tiny and args.shape is None:
        parser.error("--tiny shrinks the model --shape builds: give --shape too")

    if args.questions:
        asked = [tuple(question) for question in json.loads(args.questions.read_text(encoding="utf-8"))]
        source = args.questions.name
    else:
        asked = [question for folder in args.chateval for question in questions(folder, args.items)]
        source = ", ".join(f.name for f in args.chateval)
    if args.save_questions:
        args.save_questions.write_text(json.dumps(asked), encoding="utf-8")
        return 0
    with tempfile.TemporaryDirectory() as folder:
        return run(args, asked, source, Path(folder))


def judge_model(args, asked, folder: Path) -> tuple[Path, str | None, str]:
    """(the judges' model folder, its chat template where it needs one, what it is)."""
    from parlai_dialeval.testing import real_model

    if args.shape is None:
        if real_model.missing():
            sys.exit(real_model.missing())
        return real_model.model_dir(), None, "the real-model fixture (SmolLM2-135M-Instruct)"
    from bench_fed_gpu import SHAPES
    from tiny_lm import CHAT_TEMPLATE, build_gpt2
    from transformers import AutoConfig

    shape = dict(SHAPES[args.shape], **({"n_layer": 2, "n_embd": 64, "n_head": 2} if args.tiny else {}))
    # the output layer the tokenizer's size: ids beyond it (most of a 50,257-token layer's) decode to nothing,
    # and every reply would be the same empty text
    path = build_gpt2(folder / args.shape, texts=[text for text, _ in asked], n_positions=1024, tokenizer_vocab=8000,
                      **shape)
    vocabulary = AutoConfig.from_pretrained(path).vocab_size
    return path, CHAT_TEMPLATE, f"a random-weight GPT-2 {shape} (vocabulary {vocabulary})"


def run(args, asked, source: str, folder: Path) -> int:
    import torch

    from parlai_dialeval.judge.judges import make_judge
    from parlai_dialeval.metrics.lm_loading import torch_threads

    path, template, described = judge_model(args, asked, folder)
    default = torch.get_num_threads()
    gpu = torch.cuda.get_device_name() if args.device.startswith("cuda") else None
    print(f"{len(asked)} prompts from {source}; {described} on {args.device}{f' ({gpu})' if gpu else ''}, "
          f"torch {torch.__version__}; {len(os.sched_getaffinity(0))} cores; torch's default threads {default}")
    record: dict = {"device": args.device, "gpu": gpu, "torch": torch.__version__, "model": described,
                    "prompts": len(asked), "judges": {}}
    for kind in args.judge:
        judge = make_judge(f"{kind}:{path}", max_tokens=args.max_tokens, batch_size=args.batch_size,
                           device=args.device, chat_template=template)
        threads, judge.threads = judge.threads or default, None  # the benchmark sets the threads of each run
        runs = {"original": (default, False)}
        if threads != default:
            runs[f"one at a time, {threads} thread(s)"] = (threads, False)
        runs[f"batched, {threads} thread(s)"] = (threads, True)
        times = {name: [] for name in runs}
        cpu = {name: [] for name in runs}
        answers = {}
        if kind == "lm":
            from parlai_dialeval.judge.judges import share_prefixes
            from parlai_dialeval.metrics.fed_lm import build_trie

            ids = [judge.tokenizer(text, add_special_tokens=False)["input_ids"] for text, _ in asked]
            nodes = sum(len(build_trie([ids[i] for i in group])[0]) for group in share_prefixes(ids))
            print(f"lm: {sum(map(len, ids))} prompt tokens, {nodes} after sharing starts "
                  f"({1 - nodes / sum(map(len, ids)):.1%} saved)")
            ask_original, original_tails = original_lm(judge)
        print(f"{kind}: judge threads {threads} (load average {os.getloadavg()[0]:.2f} when it was made)")
        for round_ in range(args.rounds):
            for name, (count, batched) in runs.items():
                load = os.getloadavg()[0]
                ask = ask_original if kind == "lm" and name == "original" else judge.ask
                start, start_cpu = time.perf_counter(), time.process_time()
                with torch_threads(count):
                    replies = (judge.ask_batch(asked, batch_size=args.batch_size or len(asked)) if batched
                               else [ask(*q) for q in asked])
                times[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - start_cpu)
                answers[name] = replies
                print(f"  round {round_ + 1} {name}: {times[name][-1]:.1f} s, CPU {cpu[name][-1]:.1f} s "
                      f"(load average {load:.2f} -> {os.getloadavg()[0]:.2f})", flush=True)
        medians = {name: statistics.median(values) for name, values in times.items()}
        cpu_medians = {name: statistics.median(values) for name, values in cpu.items()}
        batched_name = list(runs)[-1]
        reference = [r.text for r in answers["original"]]
        for name in runs:
            same = sum(a == b.text for a, b in zip(reference, answers[name]))
            ratio = medians[name] / medians[batched_name]
            print(f"{kind}: {name}: median {medians[name]:.1f} s ({medians[name] / len(asked):.2f} s/prompt), "
                  f"CPU {cpu_medians[name]:.1f} s; batched is {ratio:.1f}x faster "
                  f"({cpu_medians[name] / cpu_medians[batched_name]:.1f}x in CPU seconds); "
                  f"same answers as the original {same}/{len(asked)}")
        if kind == "lm":
            worst = 0.0
            for question, (_, logprobs) in zip(asked, judge.option_logprobs(asked)):
                ask_original(*question)
                worst = max([worst] + [abs(a + b) for a, b in zip(logprobs, original_tails["tails"])])
            print(f"lm: largest |log-probability difference| of an option, batched vs original: {worst:.2g}")
        if kind == "hf":
            tokens = [r.completion_tokens for r in answers["original"]]
            print(f"{kind}: reply tokens min {min(tokens)} / mean {sum(tokens) / len(tokens):.1f} / max {max(tokens)}")
        # answers that are all alike would agree whatever the batching did
        print(f"{kind}: {len(set(reference))} distinct answers among {len(reference)}, {sum(map(bool, reference))} "
              f"not empty; e.g. {reference[:2]}")
        differing = [(a, b.text) for a, b in zip(reference, answers[batched_name]) if a != b.text]
        if differing:
            print("  differing:", differing[:5])
        record["judges"][kind] = {"seconds": times, "cpu_seconds": cpu,
                                  "answers": {name: [r.text for r in replies] for name, replies in answers.items()}}
        if kind == "lm":
            record["judges"][kind]["largest_logprob_difference"] = worst
    if args.json:
        args.json.write_text(json.dumps(record, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
