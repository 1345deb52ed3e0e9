"""ab_next_utterance crowdsourcing task (docs/crowdsourcing_protocols.md)."""
