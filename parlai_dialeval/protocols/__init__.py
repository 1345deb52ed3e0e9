"""Every human-evaluation protocol's questions, criteria, scales and turn policies, as data.

The one place wordings live: the crowdsourcing tasks show them, the exports and importers store them,
the analyses map a stored wording back to its criterion, and the LLM judge asks them. docs/architecture.md.

    get_protocol("pw_turn").wording("humanness")  # the text the worker sees
    find_question("Which speaker sounds more human?")  # -> (PW-Dialog, its humanness Question)
"""
from __future__ import annotations

from parlai_dialeval.protocols import arena, ji2022, lee2020, santhanam2020, smith2022
from parlai_dialeval.protocols.base import KINDS, Protocol, ProtocolError, Question, TurnPolicy, normalise

PROTOCOLS: dict[str, Protocol] = {p.name: p for module in (smith2022, lee2020, ji2022, santhanam2020, arena)
                                  for p in module.PROTOCOLS}
ALIASES = {"acute": "pw_dialog", "pw_dialog_self": "pw_dialog", "ab_next_utterance": "ab"}

__all__ = ["KINDS", "PROTOCOLS", "Protocol", "ProtocolError", "Question", "TurnPolicy", "criterion_of",
           "find_question", "get_protocol", "protocol_names"]


def protocol_names(with_aliases: bool = False) -> list[str]:
    return sorted(PROTOCOLS) + (sorted(ALIASES) if with_aliases else [])


def get_protocol(name: str) -> Protocol:
    """The protocol of this name (or alias: ``acute`` is ``pw_dialog``); ProtocolError lists the valid ones."""
    key = ALIASES.get(name, name)
    if key not in PROTOCOLS:
        raise ProtocolError(f"unknown protocol {name!r} (expected one of {', '.join(protocol_names(True))})")
    return PROTOCOLS[key]


def find_question(wording: str, protocols=None) -> tuple[Protocol, Question] | None:
    """The protocol and question whose wording this is (case and spacing ignored), None when no
    protocol asks it. ``protocols``: names to search (default all, in registry order)."""
    wanted = normalise(wording)
    for protocol in (get_protocol(n) for n in protocols) if protocols else PROTOCOLS.values():
        for question in protocol.questions:
            if normalise(question.wording) == wanted:
                return protocol, question
    return None


def criterion_of(wording: str, protocols=None) -> str | None:
    """The criterion a stored question wording measures, None when no protocol asks it."""
    found = find_question(wording, protocols)
    return found[1].criterion if found else None
