"""Anonymity of an arena battle: a reply that names a model or its maker gives the models away, so the
votes from then on are not blind (FastChat's clean_battle_data.py drops such battles from its
leaderboard; it matches its IDENTITY_WORDS anywhere in the lower-cased messages).

Here a name matches case-insensitively where it starts a word (not after a letter or digit), so "gpt-4o"
names GPT-4 and "Llama-3" Llama, but "bombarded" does not name Bard nor "napalm" PaLM. Only the replies
are read: a participant may ask "are you ChatGPT?", and the reply's "I am not ChatGPT" voids the battle.
The words are the study's (``arena.anonymity.words``, default ``DEFAULT_WORDS``, plus ``extra_words``);
tests/crowdsourcing/test_arena_fastchat.py checks that every word of FastChat's list is covered.
"""
from __future__ import annotations

import re
import unicodedata

# Makers and the model families they publish (2026); lower case. Generic words are left out where they
# would void ordinary replies ("meta", "apple", "phi", "nova", "orca", "minimax"): add your models' own names in the config.
MAKERS_AND_MODELS = {
    "openai": ("openai", "chatgpt", "gpt-3", "gpt-3.5", "gpt-4", "gpt-4o", "gpt-5", "gpt-oss"),
    "anthropic": ("anthropic", "claude"),
    "google": ("google", "deepmind", "gemini", "gemma", "bard", "palm", "lamda"),
    "meta": ("meta ai", "meta platforms", "facebook ai", "llama"),
    "microsoft": ("microsoft", "bing chat", "phi-3", "phi-4"),
    "alibaba": ("alibaba", "qwen", "qianwan", "tongyi"),
    "mistral": ("mistral", "mixtral", "codestral"),
    "deepseek": ("deepseek",),
    "zhipu": ("zhipu", "chatglm", "glm-4", "keg lab"),
    "cohere": ("cohere", "command r", "command-r"),
    "databricks": ("databricks", "dbrx"),
    "allen institute": ("allen institute", "ai2", "olmo", "tulu", "tülu"),
    "lmsys": ("lmsys", "vicuna", "uc berkeley", "koala"),
    "laion": ("laion", "open assistant", "openassistant"),
    "01.ai": ("01.ai",),
    "nous research": ("nous research", "hermes"),
    "xai": ("xai", "grok"),
    "moonshot": ("moonshot ai", "kimi"),
    "baidu": ("baidu", "ernie bot"),
    "bytedance": ("bytedance", "doubao"),
    "tencent": ("tencent", "hunyuan"),
    "amazon": ("amazon nova", "amazon titan", "aws bedrock"),
    "nvidia": ("nvidia", "nemotron"),
    "hugging face": ("hugging face", "huggingface", "smollm"),
    "stability ai": ("stability ai", "stablelm"),
    "ai21": ("ai21", "jamba"),
    "ibm": ("ibm granite",),
    "perplexity": ("perplexity ai",),
    "reka": ("reka ai",),
    "minimax": ("minimax ai",),
}
DEFAULT_WORDS = tuple(sorted({word for words in MAKERS_AND_MODELS.values() for word in words}))


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


class LeakRules:
    """The study's identity words, matched where a word starts (see the module docstring)."""

    def __init__(self, words=DEFAULT_WORDS, extra_words=()):
        self.words = tuple(sorted({_fold(w).strip() for w in (*words, *extra_words) if str(w).strip()}))
        alternatives = "|".join(re.escape(w) for w in sorted(self.words, key=len, reverse=True))
        self.pattern = re.compile(rf"(?<!\w)(?:{alternatives})") if alternatives else None

    def names(self, text: str) -> list[str]:
        """The identity words ``text`` holds, in order of first appearance, each once."""
        if self.pattern is None or not text:
            return []
        found = []
        for match in self.pattern.finditer(_fold(text)):
            if match.group(0) not in found:
                found.append(match.group(0))
        return found

    def policy(self) -> dict:
        """What the export's study record says about the rule."""
        return {"rule": "a reply naming one of these words where a word starts (case-insensitive) voids the votes "
                        "of its battle from that turn on", "words": list(self.words)}
