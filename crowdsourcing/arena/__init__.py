"""arena crowdsourcing task (docs/crowdsourcing_protocols.md, "Arena")."""
