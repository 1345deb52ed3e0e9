"""What the chat-model agents (``openai_chat``, ``hf_chat``) share: the conversation as chat messages.

Observed messages become ``user`` turns and the agent's replies ``assistant`` turns, after an
optional system prompt. A persona or topic reaches the bot as the observation's ``context`` field
or as ParlAI's ``your persona:`` lines, and is placed in the system message, at the start of the
first user message, or nowhere (``--context-placement``). Every reply carries ``latency`` (seconds,
the total time), ``prompt_tokens``, ``completion_tokens``, ``finish_reason`` and ``attempts``, and a
streamed one ``first_token_latency`` and ``tokens_per_second`` (plus ``quirks`` and ``reasoning``
where the endpoint had them), which the crowdsourcing tasks keep in the turn's ``meta``.

Streaming: whoever shows the reply sets ``agent.on_text = callback``; ``callback(text_so_far)`` is
then called as the reply grows (None: nobody is watching, the reply still arrives whole from act()).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from parlai.core.agents import Agent
from parlai.core.message import Message

from parlai_dialeval.errors import DialevalError

PLACEMENTS = ("system", "first_user", "none")
PERSONA_PREFIX = "your persona:"
DEFAULTS = {"system_prompt": "", "context_placement": "system"}


@dataclass
class Reply:
    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    attempts: int = 1
    first_token_latency: float | None = None
    tokens_per_second: float | None = None
    extra: dict | None = None  # more fields for the turn's meta (quirks, reasoning)


def split_context(text: str) -> tuple[list[str], str]:
    """ParlAI's ``your persona: ...`` lines apart from the rest of an observed text."""
    lines = text.split("\n")
    persona = [line for line in lines if line.strip().lower().startswith(PERSONA_PREFIX)]
    rest = "\n".join(line for line in lines if not line.strip().lower().startswith(PERSONA_PREFIX))
    return persona, rest


def build_messages(system_prompt: str, context: list[str], placement: str, history: list[dict]) -> list[dict]:
    """The chat ``messages``: system prompt, the context where ``placement`` says, then the history."""
    if placement not in PLACEMENTS:
        raise DialevalError(f"--context-placement {placement!r}: expected one of {', '.join(PLACEMENTS)}")
    context_text = "\n".join(context) if placement != "none" else ""
    system = "\n".join(part for part in (system_prompt, context_text if placement == "system" else "") if part)
    messages = [{"role": "system", "content": system}] if system else []
    history = [dict(m) for m in history]
    if placement == "first_user" and context_text:
        first = next((m for m in history if m["role"] == "user"), None)
        if first is None:
            history.insert(0, {"role": "user", "content": context_text})
        else:
            first["content"] = f"{context_text}\n{first['content']}" if first["content"] else context_text
    return messages + history


def add_chat_args(group) -> None:
    group.add_argument("--system-prompt", type=str, default="", help="system message sent first")
    group.add_argument("--context-placement", type=str, default="system", choices=PLACEMENTS,
                       help="where the task's persona/topic goes: the system message, the start of the "
                            "first user message, or nowhere")


class ChatHistoryAgent(Agent):
    """Subclasses implement ``reply(messages) -> Reply`` (calling ``self.on_text`` as text arrives when
    they can stream); observe/act/reset are handled here."""

    on_text = None

    def reset(self):
        super().reset()
        self.history: list[dict] = []
        self.context: list[str] = []
        self.episode_over = False

    def observe(self, observation):
        observation = super().observe(observation) or {}
        context = observation.get("context")
        if context:
            self.context += [context] if isinstance(context, str) else [str(c) for c in context]
        persona, text = split_context(str(observation.get("text") or ""))
        self.context += persona
        if text.strip():
            self.history.append({"role": "user", "content": text})
        self.episode_over = bool(observation.get("episode_done"))
        return observation

    def messages(self) -> list[dict]:
        return build_messages(self.opt["system_prompt"], self.context, self.opt["context_placement"], self.history)

    def reply(self, messages: list[dict]) -> Reply:
        raise NotImplementedError

    def act(self):
        start = time.monotonic()
        done = self.reply(self.messages())
        self.history.append({"role": "assistant", "content": done.text})
        message = Message({"id": self.id, "text": done.text, "episode_done": False,
                           "latency": round(time.monotonic() - start, 4), "prompt_tokens": done.prompt_tokens,
                           "completion_tokens": done.completion_tokens, "finish_reason": done.finish_reason,
                           "attempts": done.attempts, **(done.extra or {})})
        for key in ("first_token_latency", "tokens_per_second"):
            if getattr(done, key) is not None:
                message[key] = round(getattr(done, key), 4)
        if self.episode_over:
            self.reset()
        return message
