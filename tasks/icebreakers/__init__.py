"""``-t dialeval:icebreakers``: ice-breaker topics drawn from model personas (Ji et al. 2022, section 6)."""
