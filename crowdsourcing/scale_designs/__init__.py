"""scale_designs crowdsourcing task (docs/crowdsourcing_protocols.md)."""
