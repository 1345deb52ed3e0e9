"""One module per statistic of an analysis's result, each declaring ``SECTION`` (results/section.py)."""
