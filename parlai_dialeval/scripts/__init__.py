"""Command-line scripts; each module registers itself with ParlAI's @register_script."""
