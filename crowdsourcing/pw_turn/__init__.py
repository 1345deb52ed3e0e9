"""pw_turn crowdsourcing task (docs/crowdsourcing_protocols.md)."""
