"""ParlAI agents, used as -m dialeval:NAME."""
