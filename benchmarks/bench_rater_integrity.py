"""Votes worth trusting (issue 51): how many dishonest participants the evidence table finds, and how many honest
ones it flags, with every participant driving a real live-chat page's protocol through the real router.

`dialeval launch live_chat_da conf=offline_small` (QC bot, TF-IDF retrieval, repeat_query; 3 conversations of
INPUTS messages; two attention sliders per HIT) serves a crowd of simulated participants speaking the worker
page's packets (tests/crowdsourcing/page_client.py), each sending what the page records about how its answers
were made (frontend/src/components/answerRecord.js) as its kind would make them, in real time (the server checks
the times a record claims against its own clock):

- ``honest``: a person's pace: typing at 120-300 ms a character, thinking 2-8 s, 8-40 s on each rating screen;
  now and then a tab switch (5% of answers), a short paste (3% of messages), a slip on an attention slider (3%);
  ratings from their own taste, the QC bot lower.
- ``paste``: pastes an LLM's reply (SmolLM2-135M-Instruct's, the tests' real model, when .real-model/ is there)
  copied in another tab for each message; rates carefully and passes the attention checks.
- ``click``: short messages typed fast, every rating screen answered in 1-3 s, half with uniform random values,
  half with one value everywhere.
- ``bot``: a script on the websocket: templated messages a second after each reply, ratings at once; it reads and
  obeys the attention instructions; half send no page record at all, half forge one (typing claimed, not done).

Then `dialeval export` and the evidence table (analysis/evidence.py, as the analysis commands build it; with
--llm-text-model the LLM-text score too) give the detection rate per kind and the share of honest participants
flagged (goal: each dishonest kind >= 90%, honest <= 2%). A second part measures the LLM-text score's own error
rates on our own data: human messages of Ji et al.'s live chats (../shared/data) against SmolLM2's replies.

    .venv/bin/python benchmarks/bench_rater_integrity.py [--honest 60] [--per-kind 15] [--llm-text-model PATH]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import httpx
import numpy as np

import load_generator  # benchmarks/, beside this script

ROOT = Path(__file__).resolve().parents[1]
REAL_MODEL = ROOT / ".real-model" / "model"
KINDS = ("honest", "paste", "click", "bot")
TOPICS = ("cooking", "hiking", "films", "music", "travel", "books", "gardening", "football")
PROMPTS = ("Reply in one or two friendly sentences to a chat partner who said: '{}'",)
HUMAN_LINES = ("do you ever cook for friends on weekends", "i went hiking last month and it rained the whole time",
               "what kind of films do you like", "my favourite band is playing here next week", "have you been to spain",
               "i read mostly crime novels lol", "my tomatoes finally grew this year", "who do you support in football",
               "that sounds fun, what else", "haha no way, really?", "i dont know much about that tbh",
               "we should try that sometime", "what did you have for dinner", "im more of a cat person")
JI_DIALOGUES = Path("ji2022") / "dialogue_data" / "pass_free(run1).json"
BOT_LINES = ("That is really interesting! Could you tell me more about {}?",
             "I see. What do you enjoy most about {}?", "Thanks for sharing. How long have you been into {}?")
PageClient = load_generator.PageClient


class Participant(PageClient):
    """One simulated participant of ``kind`` (module docstring), doing a live-chat HIT from the server's state."""

    def __init__(self, name, port, inputs, deadline, kind: str, rng: random.Random, llm_texts: list[str],
                 human_texts: list[str]):
        super().__init__(name, port, inputs, 1.0, deadline)
        self.kind, self.rng, self.llm_texts, self.human_texts = kind, rng, llm_texts, human_texts
        self.taste = rng.gauss(0, 8)
        self.key_ms = rng.uniform(120, 300)  # this person's typing speed
        self.uniform = rng.random() < 0.5  # click: random values (else one value everywhere); bot: forged records
        self.topic = rng.choice(TOPICS)

    # ------------------------------------------------------------ what the page would record
    def away(self) -> tuple[int, float]:
        return (1, self.rng.uniform(5, 30)) if self.kind == "honest" and self.rng.random() < 0.05 else (0, 0.0)

    async def typed(self, text: str) -> dict:
        """Type ``text`` at this person's speed (really waiting), with its record."""
        gaps = [max(30.0, self.rng.gauss(self.key_ms, self.key_ms / 3)) for _ in range(len(text) - 1)]
        pauses = [g for g in gaps if g >= 2000]
        await asyncio.sleep(sum(gaps) / 1000)
        away, away_seconds = self.away()
        return {"typed": len(text), "pasted": 0, "dropped": 0, "deleted": 0, "pastes": [], "drops": [],
                "keys": len(text), "compose_seconds": round(sum(gaps) / 1000, 1), "key_interval_ms": float(np.median(gaps))
                if gaps else 0.0, "pauses": len(pauses), "longest_pause": max(pauses, default=0) / 1000,
                "away": away, "away_seconds": away_seconds}

    async def message(self, number: int) -> tuple[str, dict | None]:
        if self.kind == "honest":
            await asyncio.sleep(self.rng.uniform(2, 8))
            text = self.rng.choice(self.human_texts)
            record = await self.typed(text)
            if self.rng.random() < 0.03:  # a word pasted now and then (a name, a link)
                record.update(pasted=8, pastes=[8])
                text += " Sevilla!"
            return text, record
        if self.kind == "paste":
            text = self.rng.choice(self.llm_texts)
            gone = self.rng.uniform(5, 15)  # over to the chatbot's tab, and back with its answer
            await asyncio.sleep(gone + 1)
            return text, {"typed": 0, "pasted": len(text), "dropped": 0, "deleted": 0, "pastes": [len(text)],
                          "drops": [], "keys": 0, "compose_seconds": 0.8, "pauses": 0, "longest_pause": 0,
                          "away": 1, "away_seconds": round(gone, 1)}
        if self.kind == "click":
            await asyncio.sleep(self.rng.uniform(0.5, 1.5))
            text = self.rng.choice(("ok", "nice", "yes", "cool", "lol ok"))
            return text, await self.typed(text)
        await asyncio.sleep(self.rng.uniform(0.5, 1.5))
        text = self.rng.choice(BOT_LINES).format(self.topic)
        if not self.uniform:
            return text, None  # no page record at all
        return text, {"typed": len(text), "pasted": 0, "keys": len(text), "key_interval_ms": 160.0,
                      "compose_seconds": round(len(text) * 0.16 + 5, 1), "pauses": 0, "away": 0}

    async def rating(self, state: dict) -> tuple[list[float], float | None, dict]:
        attention = state.get("attention")
        if self.kind in ("honest", "paste"):
            seconds = self.rng.uniform(8, 40)
            await asyncio.sleep(seconds)
            values = [float(np.clip(round(self.rng.gauss(60 + self.taste, 18)), 0, 100)) for _ in range(7)]
            slip = self.kind == "honest" and self.rng.random() < 0.03
            answer = None if not attention else (float(self.rng.randint(0, 100)) if slip else float(attention["value"]))
            away, away_seconds = self.away()
            return values, answer, {"seconds": round(seconds, 1), "reread": self.rng.random() < 0.3, "changes": 0,
                                    "away": away, "away_seconds": away_seconds}
        if self.kind == "click":
            seconds = self.rng.uniform(1, 3)
            await asyncio.sleep(seconds)
            if self.uniform:
                values = [float(self.rng.randint(0, 100)) for _ in range(8)]
            else:
                values = [float(self.rng.choice((50, 80, 100)))] * 8
            return values[:7], values[7] if attention else None, {"seconds": round(seconds, 1), "reread": False,
                                                                  "changes": 0, "away": 0, "away_seconds": 0}
        await asyncio.sleep(0.3)
        values = [float(self.rng.randint(20, 90)) for _ in range(7)]
        record = None if not self.uniform else {"seconds": 25.0, "reread": True, "changes": 1, "away": 0}
        return values, float(attention["value"]) if attention else None, record

    # ------------------------------------------------------------ the page, step by step
    async def step(self, http: httpx.AsyncClient) -> None:
        state, version = dict(self.state), self.version
        phase = state.get("phase")
        if state.get("task_done"):
            await super().step(http)
            return
        if phase == "topic":
            await asyncio.sleep(self.rng.uniform(1, 3) if self.kind == "honest" else 0.3)
            await self.act({"action": "topic", "topic": self.topic, "attitude": "like"})
        elif phase == "chat" and state.get("inputs", 0) < state.get("min_inputs", self.inputs):
            text, record = await self.message(state.get("inputs", 0))
            before = len(self.replies)
            data = {"action": "message", **({"provenance": record} if record is not None else {})}
            if text in self.sent:
                text = text + " " + self.rng.choice(("really", "right", "yes"))  # one text per send, as a page keeps
            await self.say(data, text, lambda: len(self.replies) > before)
            return
        elif phase == "chat":
            await self.act({"action": "next"})
        elif phase == "rate":
            values, attention, record = await self.rating(state)
            data = {"action": "rating", "values": values, **({"attention": attention} if attention is not None else {}),
                    **({"provenance": record} if record is not None else {})}
            await self.act(data)
        elif phase in ("failed",):
            await self.act({"action": "next"})
        elif phase == "feedback":
            await self.act({"action": "feedback", "feedback": ""})
        await self.until(lambda: self.version > version)


def human_lines() -> list[str]:
    """What honest participants type: people's own messages from Ji et al.'s live chats (../shared/data) where
    they are there (real text: people rarely write the same 25 characters as a stranger), else a few of ours."""
    from parlai_dialeval.importers import load
    from parlai_dialeval.shared_data import shared_data_dir

    source = shared_data_dir() / JI_DIALOGUES
    if not source.is_file():
        print(f"no {source}: honest participants type {len(HUMAN_LINES)} lines of ours (more of them shared by chance)")
        return list(HUMAN_LINES)
    texts = load([str(source)], log=None).turns(speaker="human")["text"].astype(str)
    return [t for t in texts.drop_duplicates() if 3 <= len(t) <= 200]


def llm_replies(count: int, model_path: Path, rng: random.Random) -> list[str]:
    """``count`` chat replies written by the local chat model (the text the ``paste`` participants paste), or
    polished stand-ins where the model is not there (said so)."""
    if not (model_path / "config.json").is_file():
        print(f"no local chat model at {model_path}: paste participants paste fixed polished sentences instead")
        return [f"I absolutely love {t}! There is something wonderful about how it brings people together and "
                "makes every day feel a little more special." for t in TOPICS]
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from parlai_dialeval.agents.hf_chat.hf_chat import render_chat  # the chat template under this Jinja2

    import torch

    torch.set_num_threads(1)  # a shared machine: one thread waits for no other (metrics/lm_loading.py says why)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path).eval()
    out = []
    for i in range(count):
        said = rng.choice(HUMAN_LINES)
        prompt = render_chat(tokenizer, [{"role": "user", "content": PROMPTS[0].format(said)}])
        ids = tokenizer(prompt, return_tensors="pt")
        generated = model.generate(**ids, max_new_tokens=40, do_sample=True, temperature=0.7, top_p=0.9)
        text = tokenizer.decode(generated[0][ids["input_ids"].shape[1]:], skip_special_tokens=True).strip()
        out.append(" ".join(text.split())[:300] or "That sounds lovely, tell me more!")
    return out


async def crowd(args, port: int, llm_texts: list[str], human_texts: list[str]) -> list[Participant]:
    rng = random.Random(args.seed)
    kinds = ["honest"] * args.honest + [k for k in KINDS[1:] for _ in range(args.per_kind)]
    rng.shuffle(kinds)
    deadline = time.time() + args.duration
    pool = list(human_texts)
    rng.shuffle(pool)  # each honest participant types messages of their own: people rarely write a stranger's
    share = max(len(pool) // max(args.honest, 1), 4)
    own = {i: pool[k * share:(k + 1) * share] or pool for k, i in enumerate(i for i, kind in enumerate(kinds)
                                                                              if kind == "honest")}
    people = [Participant(f"{kind}{i:03d}", port, args.inputs, deadline, kind, random.Random(rng.random()), llm_texts,
                          own.get(i, pool)) for i, kind in enumerate(kinds)]
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=len(people) + 5)) as http:
        async def start(person, delay):
            await asyncio.sleep(delay)  # arrivals spread over a minute, as a study's do
            await person.run(http)

        await asyncio.gather(*(start(p, rng.uniform(0, args.arrivals)) for p in people))
    return people


def detection(evidence_table, people: list[Participant]) -> dict:
    flagged = dict(zip(evidence_table["worker_id"], evidence_table["flagged"]))
    signals = dict(zip(evidence_table["worker_id"], evidence_table["signals"]))
    out = {}
    for kind in KINDS:
        mine = [p for p in people if p.kind == kind and p.done]
        hits = [bool(flagged.get(f"{p.name}_sandbox", False)) for p in mine]
        fired = Counter(s for p in mine for s in (signals.get(f"{p.name}_sandbox") or "").split(", ") if s)
        out[kind] = {"participants": len(mine), "flagged": int(sum(hits)),
                     "rate": sum(hits) / len(mine) if mine else float("nan"), "signals": dict(fired.most_common())}
    return out


def llm_error_rates(model_path: Path, llm_texts: list[str], threshold: float) -> None:
    """The LLM-text score's error rates on our own data: Ji et al.'s human live-chat messages (every 40th worker
    text of 30+ characters) against the local model's replies, per text and per worker (nine texts each)."""
    from parlai_dialeval.importers import load
    from parlai_dialeval.metrics.lm_loading import load_causal_lm
    from parlai_dialeval.metrics.llm_text import MIN_SCORED, text_scores
    from parlai_dialeval.shared_data import shared_data_dir

    source = shared_data_dir() / JI_DIALOGUES
    if not source.is_file() or not (model_path / "config.json").is_file():
        print("LLM-text error rates: not measured (needs ../shared/data's Ji et al. dialogues and .real-model/)")
        return
    human = load([str(source)], log=None).turns(speaker="human")
    texts = [t for t in human["text"].astype(str) if len(t) >= 30][::40][:360]
    model, tokenizer = load_causal_lm(str(model_path))
    people = text_scores(texts, model, tokenizer)["score"].to_numpy()
    machine = text_scores(llm_texts, model, tokenizer)["score"].to_numpy()
    people, machine = people[np.isfinite(people)], machine[np.isfinite(machine)]
    by = lambda scores, n: np.array([scores[i:i + n].mean() for i in range(0, len(scores) - n + 1, n)])
    print(f"LLM-text score (log-perplexity + burstiness under SmolLM2-135M-Instruct), threshold {threshold:g}: "
          f"per text, human messages (Ji et al., {len(people)}) below it {np.mean(people < threshold):.1%}, model "
          f"replies ({len(machine)}) below it {np.mean(machine < threshold):.1%}; per worker of 9 texts (at least "
          f"{MIN_SCORED} scored), human {np.mean(by(people, 9) < threshold):.1%} of {len(by(people, 9))}, model "
          f"{np.mean(by(machine, 9) < threshold):.1%} of {len(by(machine, 9))}; medians human "
          f"{np.median(people):.2f}, model {np.median(machine):.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--honest", type=int, default=60)
    parser.add_argument("--per-kind", type=int, default=15, help="participants of each dishonest kind")
    parser.add_argument("--inputs", type=int, default=3, help="messages per conversation")
    parser.add_argument("--duration", type=float, default=900, help="bound on the whole crowd, seconds")
    parser.add_argument("--arrivals", type=float, default=60, help="seconds over which participants arrive")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--llm-replies", type=int, default=30, help="replies of the local model for paste participants")
    parser.add_argument("--llm-text-model", default=None, help="score texts with this local LM (e.g. .real-model/model)")
    args = parser.parse_args()
    from parlai_dialeval.metrics.llm_text import THRESHOLD
    from parlai_dialeval.testing.ports import free_port

    rng = random.Random(args.seed)
    print(f"machine: {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f} at start; {args.honest} honest "
          f"participants and {args.per_kind} of each dishonest kind, 3 conversations x {args.inputs} messages")
    started = time.time()
    llm_texts, human_texts = llm_replies(args.llm_replies, REAL_MODEL, rng), human_lines()
    print(f"{len(llm_texts)} replies of the local chat model written in {time.time() - started:.0f} s")
    tmp = Path(tempfile.mkdtemp(prefix="bench_integrity_"))
    (tmp / "llm_replies.txt").write_text("\n".join(llm_texts) + "\n")
    CliRun = load_generator.test_helper("protocol_harness").CliRun
    port, task = free_port(), "bench_integrity"
    units = args.honest + 3 * args.per_kind
    run = CliRun("live_chat_da", tmp, ["conf=offline_small", f"mephisto.architect.port={port}",
                                       f"mephisto.task.task_name={task}", f"mephisto.blueprint.num_conversations={units}",
                                       "mephisto.task.max_num_concurrent_units=0", f"live_chat.min_inputs={args.inputs}",
                                       "live_chat.seed=0", "live_chat.checks.attention=2",
                                       "mephisto.blueprint.router_claims_per_source=0"])
    started = time.time()
    try:
        people = asyncio.run(crowd(args, port, llm_texts, human_texts))
    finally:
        run.stop()
    print(f"crowd done in {time.time() - started:.0f} s: {sum(p.done for p in people)} of {len(people)} HITs submitted")
    out = tmp / "export.jsonl"
    load_generator.stored_texts(task, run.data_dir, out)
    from parlai_dialeval.scripts.command_line import load_data
    from parlai_dialeval.scripts.evidence_option import build

    found = build(load_data({"data": [str(out)]}, log=None), {"llm_text_model": args.llm_text_model}, log=None)
    (tmp / "evidence.csv").write_text(found.table.to_csv(index=False))
    results = detection(found.table, people)
    for kind, row in results.items():
        what = "flagged (honest: the false alarms)" if kind == "honest" else "found"
        print(f"{kind:7s}: {row['flagged']} of {row['participants']} {what} = {row['rate']:.0%}; signals that fired: "
              + (", ".join(f"{s} {n}" for s, n in row["signals"].items()) or "none"))
    goal = all(results[k]["rate"] >= 0.9 for k in KINDS[1:]) and results["honest"]["rate"] <= 0.02
    print(f"goal (each dishonest kind >= 90% found, honest <= 2% flagged): {'met' if goal else 'NOT met'}; "
          f"evidence table: {tmp / 'evidence.csv'}")
    if args.llm_text_model:
        llm_error_rates(Path(args.llm_text_model), llm_texts, THRESHOLD)
    return 0


if __name__ == "__main__":
    sys.exit(main())
