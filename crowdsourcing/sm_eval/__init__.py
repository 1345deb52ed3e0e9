"""sm_eval crowdsourcing task (docs/crowdsourcing_protocols.md)."""
