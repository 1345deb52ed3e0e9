"""Settings for many participants at once (docs/scaling.md): named sets of launch overrides.

``before``: the launch as it was before issue 32 (the baseline of benchmarks/bench_load.py; no taking back of a
silent page's session, which came later and needs a ping time longer than Mephisto's 15 s);
``scaled``: what the load ramp showed a 2-core machine needs for hundreds of participants at once.
"""
from __future__ import annotations

PRESETS: dict[str, list[str]] = {
    "before": ["mephisto.blueprint.router_reconnect_seconds=10", "mephisto.blueprint.router_ping_seconds=15",
               "mephisto.blueprint.router_reclaim_seconds=0"],
    "scaled": ["mephisto.blueprint.cached_database=true"],
}


def overrides(name: str) -> list[str]:
    """The launch overrides of preset ``name``."""
    if name not in PRESETS:
        raise ValueError(f"unknown scaling preset {name!r}: expected one of {', '.join(PRESETS)}")
    return list(PRESETS[name])
