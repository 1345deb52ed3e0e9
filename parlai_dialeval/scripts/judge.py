"""dialeval judge: an LLM judge answers a human protocol's questions on the humans' items (docs/judge.md)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

from parlai.core.params import ParlaiParser
from parlai.core.script import ParlaiScript, register_script

from parlai_dialeval.distributed import add_shard_args, device_for, digest, init_world, run_parts, shard_folder
from parlai_dialeval.errors import DialevalError
from parlai_dialeval.options import checked

PROTOCOLS = ("ab", "acute", "pw_turn", "pw_dialog", "sm_turn", "sm_dialog", "likert", "live_chat_da")


@register_script("judge")
class Judge(ParlaiScript):
    @classmethod
    def setup_args(cls):
        from parlai_dialeval.scripts.command_line import add_data_args

        parser = ParlaiParser(False, False, "Ask an LLM judge a human protocol's questions on the humans' items")
        add_data_args(parser, out="FILE.jsonl", data_required=False)
        judge = parser.add_argument_group("Judge")
        judge.add_argument("--design", nargs="+", default=None, metavar="INPUT",
                           help="instead of --data: the pool an adaptive launch with adaptive_judge= draws from, "
                                "judged before anyone votes. --protocol ab: the A/B task's items file (ab.items_file); "
                                "--protocol acute: the ACUTE launch's own Hydra overrides, the words after `dialeval "
                                "launch acute` (e.g. acute.conversations=[a.jsonl,b.jsonl] acute.seed=3; conf= too), "
                                "acute.seed required: the same conversation pairs under the same pair ids")
        judge.add_argument("--protocol", required=True, choices=PROTOCOLS,
                           help="the human protocol whose question wordings and items the judge answers")
        judge.add_argument("--judge", required=True, metavar="SPEC",
                           help="lm:PATH_OR_NAME (local causal LM, picks the likeliest option), "
                                "hf:PATH (local chat model, dialeval:hf_chat), openai:MODEL (OpenAI-compatible endpoint, with --base-url) or "
                                "script:FILE.json (scripted replies)")
        judge.add_argument("--base-url", default=None, help="endpoint address for openai: judges, e.g. http://host:8000/v1")
        judge.add_argument("--api-key-env", default="", metavar="VAR",
                           help="NAME of the environment variable holding the endpoint's key ('' = none)")
        judge.add_argument("--concurrency", type=checked("--concurrency", "positive_int"), default=4,
                           help="requests in flight at once (endpoint judges)")
        judge.add_argument("--max-reply-tokens", type=checked("--max-reply-tokens", "positive_int"), default=20,
                           help="reply length limit (endpoint judges)")
        judge.add_argument("--request-timeout", type=checked("--request-timeout", "positive"), default=60.0,
                           help="seconds to wait for one reply (endpoint judges; then retried, at most twice)")
        judge.add_argument("--cache", default=None, metavar="FILE.jsonl",
                           help="replies by (judge, prompt); a rerun asks only what is missing (default: judge.cache.jsonl "
                                "for --out judge.jsonl, or judge.jsonl.cache.jsonl, earlier versions' name, if only it "
                                "exists)")
        judge.add_argument("--price-prompt", type=checked("--price-prompt", "non_negative"), default=0.0,
                           metavar="USD",
                           help="price per million prompt tokens, for the cost in the summary")
        judge.add_argument("--price-completion", type=checked("--price-completion", "non_negative"), default=0.0,
                           metavar="USD",
                           help="price per million completion tokens")
        judge.add_argument("--device", default=None, help="torch device of an lm: or hf: judge")
        judge.add_argument("--judge-batch-size", type=checked("--judge-batch-size", "positive_int"), default=None,
                           metavar="N",
                           help="prompts at once for an lm: or hf: judge (default: as many as fit in a quarter "
                                "of the free memory, at most 64; 1: one at a time)")
        judge.add_argument("--chat-template", default=None,
                           help="Jinja chat template (file or text) for an hf: judge whose tokenizer has none")
        add_shard_args(parser)
        return parser

    def run(self):
        from parlai_dialeval.data.dataset import write_jsonl
        from parlai_dialeval.crowdsourcing.platform.adaptive.judge_design import read_design
        from parlai_dialeval.judge.items import build_items
        from parlai_dialeval.judge.judges import make_judge
        from parlai_dialeval.judge.run import AnswerCache, judge_part
        from parlai_dialeval.scripts.command_line import load_data, write_json

        opt = self.opt
        world = init_world()
        if bool(opt.get("design")) == bool(opt.get("data")):
            raise DialevalError("give --data (people's records) or --design (a launch's pool), one of the two")
        data = (read_design(opt["protocol"], opt["design"]) if opt.get("design")
                else load_data(opt, log=print if world.main else None))
        items, bad_items, examples = build_items(data, opt["protocol"])
        if not items:
            raise DialevalError(f"no {opt['protocol']} items in {', '.join(opt['data'] or opt['design'])}"
                                + (f" ({dict(bad_items)})" if bad_items else ""))
        judge = make_judge(opt["judge"], base_url=opt["base_url"], api_key_env=opt["api_key_env"],
                           max_tokens=opt["max_reply_tokens"], concurrency=opt["concurrency"],
                           timeout=opt["request_timeout"],
                           device=device_for(world, opt["device"]), chat_template=opt["chat_template"],
                           batch_size=opt["judge_batch_size"])
        cache = AnswerCache(opt["cache"] or default_cache(opt["out"], log=print if world.main else None))
        identity = {"command": "judge", "judge": judge.name, "protocol": opt["protocol"],
                    "input": digest([item["key"] for item in items])}
        rows = run_parts(items, lambda part: judge_part(part, judge, cache), identity=identity,
                         part_size=opt["part_size"], folder=shard_folder(opt, world), world=world)
        if rows is None:
            return None
        studies = {item["study"] for item in items if item.get("study")}
        records = [s for s in data.studies if s.get("name") in studies] + [r["record"] for r in rows if r["record"]]
        write_jsonl(({"type": "study"} | s if "type" not in s else s for s in records), opt["out"])
        summary = summarise(rows, bad_items, examples, judge.name, opt)
        write_json(summary, Path(opt["out"]).with_suffix(".summary.json"))
        print(format_summary(summary, opt["out"]))
        return summary


def default_cache(out: str, log=None) -> Path:
    """F.cache.jsonl next to F.jsonl, as F.summary.json; a cache written under the name earlier versions
    gave it (F.jsonl.cache.jsonl) is used while the new one does not exist, so a rerun asks nothing again."""
    cache, old = Path(out).with_suffix(".cache.jsonl"), Path(f"{out}.cache.jsonl")
    if not cache.exists() and old.exists():
        if log:
            log(f"cache: {old}, the name earlier versions gave it (a run without it writes {cache})")
        return old
    return cache


def summarise(rows, bad_items: Counter, examples, name: str, opt) -> dict:
    usage = Counter()
    for row in rows:
        usage.update(row.get("usage") or {})
    bad = Counter(b["reason"] for row in rows for b in row["bad"])
    orders = Counter(row["order"] for row in rows if row.get("order"))
    def cost(prefix: str = "") -> float:
        return (usage[f"{prefix}prompt_tokens"] * opt["price_prompt"]
                + usage[f"{prefix}completion_tokens"] * opt["price_completion"]) / 1e6

    return {"judge": name, "worker_id": f"judge:{name}", "protocol": opt["protocol"], "items": len(rows),
            "answered": sum(1 for r in rows if r["record"]), "unanswered": sum(1 for r in rows if not r["record"]),
            "bad_replies": dict(bad), "bad_reply_examples": [b | {"key": r["key"]} for r in rows for b in r["bad"]][:20],
            "items_without_context": dict(bad_items), "item_examples": examples,
            "order": dict(orders), "prompts_asked": usage["asked"], "prompts_cached": usage["cached"],
            "prompts_repeated": usage["repeated"],
            "prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"],
            "cost_usd": cost(), "asked_prompt_tokens": usage["asked_prompt_tokens"],
            "asked_completion_tokens": usage["asked_completion_tokens"], "cost_usd_this_run": cost("asked_")}


def format_summary(s: dict, out: str) -> str:
    lines = [f"judge {s['judge']} on {s['protocol']}: {s['answered']} of {s['items']} items answered -> {out}",
             f"prompts asked {s['prompts_asked']}, from the cache {s['prompts_cached']}, repeats of a prompt asked in "
             f"this run {s['prompts_repeated']}; the replies took {s['prompt_tokens']} prompt + "
             f"{s['completion_tokens']} completion tokens, ${s['cost_usd']:.4f}, of which this run asked for "
             f"{s['asked_prompt_tokens']} + {s['asked_completion_tokens']}, ${s['cost_usd_this_run']:.4f}"]
    if s["order"]:
        lines.append("pairwise orders: " + ", ".join(f"{k} {v}" for k, v in sorted(s["order"].items()))
                     + " (flip and one tie count as ties)")
    if s["bad_replies"]:
        lines.append("unreadable replies (items left without an answer): "
                     + ", ".join(f"{k}: {v}" for k, v in sorted(s["bad_replies"].items())))
    if s["items_without_context"]:
        lines.append("items not asked: " + ", ".join(f"{k}: {v}" for k, v in sorted(s["items_without_context"].items())))
    return "\n".join(lines)
