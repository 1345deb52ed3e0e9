"""``-m dialeval:fed``: an agent that scores the dialogues it observes with the FED metric."""
