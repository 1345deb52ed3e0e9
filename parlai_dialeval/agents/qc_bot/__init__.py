"""``-m dialeval:qc_bot``: the degraded quality-control model of Ji et al. (2022)."""
