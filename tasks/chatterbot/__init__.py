"""``-t dialeval:chatterbot``: the chatterbot-corpus package's English conversations."""
