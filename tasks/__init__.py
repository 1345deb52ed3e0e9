"""ParlAI teachers, used as -t dialeval:NAME."""
