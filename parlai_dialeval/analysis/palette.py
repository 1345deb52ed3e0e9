"""Colours every figure draws with: Okabe & Ito's palette (Color Universal Design, 2008), told apart by
people with any of the common colour-vision deficiencies and, with the markers and line styles beside it,
in greyscale print."""
from __future__ import annotations

# orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple, black
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000")
# darker first: on white, the yellow and sky blue lines are the faint ones, so they come last
LINES = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
