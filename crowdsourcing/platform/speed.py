"""How long people wait for a bot: the patience threshold the launch's endpoint check and the dashboard
warn at, and the launch's measurement of an endpoint's speed (time to first token, tokens per second)."""
from __future__ import annotations

# Nielsen (Usability Engineering, 1993, ch. 5): 10 s is about the limit for keeping a person's attention on
# a dialogue; past it they turn to other things. A chat partner silent that long loses the participant.
PATIENCE_SECONDS = 10.0
