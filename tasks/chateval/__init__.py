"""``-t dialeval:chateval:SET``: ChatEval evaluation prompt sets."""
