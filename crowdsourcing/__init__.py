"""Mephisto crowdsourcing tasks, launched with `dialeval launch TASK`."""
