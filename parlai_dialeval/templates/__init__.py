"""Jinja2 templates of the HTML reports (see parlai_dialeval/report.py and docs/reports.md); a package
only so that the templates are installed with the code."""
