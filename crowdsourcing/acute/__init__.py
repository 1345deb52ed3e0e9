"""acute crowdsourcing task (docs/crowdsourcing_protocols.md)."""
