"""HTML reports that a person reads first, rendered by Jinja2 templates with autoescaping.

One layout for every command: ``templates/base.html`` (title, warnings, sections, files); each report
has its own template that extends it (``templates/<name>.html``) and holds that report's fixed prose. A
command fills a ``Report`` with sections in reading order (headings, text, notes, tables, figures) and
warnings; ``write`` renders the template. Figures are PNG files written next to report.html and linked,
so the report opens fast for large studies (tables hold aggregates, never raw rows). Everything is
written atomically, and every name and value from the data is escaped (models may be named anything).
See docs/reports.md for how to add a report.
"""
from __future__ import annotations

import functools
import re
import unicodedata
import warnings
from contextlib import contextmanager
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # reports are written on servers without a display
import pandas as pd  # noqa: E402
from jinja2 import Environment, FileSystemLoader, select_autoescape  # noqa: E402
from markupsafe import Markup  # noqa: E402

from parlai_dialeval.atomic import atomic_open, atomic_path  # noqa: E402

TEMPLATES = Path(__file__).with_name("templates")
MISSING_GLYPH = re.compile(r"Glyph (\d+) .*missing from font")  # matplotlib's warning for a character it cannot draw
# a table of more columns than this does not fit a 1,280 px page (the reports' body is 1,100 px): it is split
# into parts, its leading label columns (at most KEY_COLUMNS) repeated in each
MAX_COLUMNS = 9
KEY_COLUMNS = 4
# a table of more rows than this is shown in part, saying so: nobody reads 5,000 rows in a page (the CSV files hold
# them), and pandas' to_html took 17 s for the million-vote study's tables
MAX_ROWS = 200
# parts of column names said in words in the HTML (the CSV files keep the names themselves)
WORDS = {"ci": "CI", "sd": "SD", "se": "SE", "a": "A", "b": "B", "wmt": "WMT", "bt": "Bradley-Terry", "icc": "ICC",
         "pct": "%", "n": "n", "num": "number of", "avg": "mean", "std": "SD", "z": "z", "alpha": "alpha"}


# Embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069) in a participant's or model's name would
# turn the page's own text after it around (an RLO makes "_sandbox" read "xobdnas_"): shown, never obeyed.
_BIDI_CONTROLS = {code: f"\u2039U+{code:04X}\u203a" for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


def bidi_shown(value):
    """Every value a template outputs (its ``finalize``): bidi controls in text as visible ‹U+202E›."""
    return value.translate(_BIDI_CONTROLS) if isinstance(value, str) else value


def bdi(value) -> Markup:
    """A participant's text escaped in a <bdi>: its right-to-left letters do not reorder the text around it."""
    return Markup("<bdi>%s</bdi>") % bidi_shown(value)


@functools.cache  # one a process: its templates are compiled once, not at every report (4% of an analysis)
def environment() -> Environment:
    """The Jinja2 environment of the reports: templates from parlai_dialeval/templates, HTML autoescaped,
    bidi controls shown."""
    env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True, finalize=bidi_shown)
    env.filters["bdi"] = bdi
    return env


# Warnings about a library's own future (deprecations) say nothing about the data: dropped, not reported.
_NOT_ABOUT_THE_DATA = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


@contextmanager
def caught_warnings():
    """Collect the warnings raised inside the block (none reach stderr) as distinct report lines."""
    lines: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield lines
    lines.extend(dict.fromkeys(f"A statistics library warned: {w.category.__name__}: {w.message}" for w in caught
                               if not issubclass(w.category, _NOT_ABOUT_THE_DATA)))


def in_words(name) -> str:
    """A column's name as the HTML shows it: ``ci_low`` -> ``CI low``, ``model_a`` -> ``model A``."""
    if not isinstance(name, str):
        return name
    return " ".join(WORDS.get(part, part) for part in name.split("_") if part) or name


def column_parts(frame: pd.DataFrame, index: bool) -> list[pd.DataFrame]:
    """The table whole when it has at most MAX_COLUMNS columns, else in parts of that many, each starting
    with its leading label (non-numeric) columns so that every row of every part says what it is about."""
    if frame.shape[1] <= MAX_COLUMNS:
        return [frame]
    keys = []
    if not index:
        for column in frame.columns[:KEY_COLUMNS]:
            if pd.api.types.is_numeric_dtype(frame[column]) and not pd.api.types.is_bool_dtype(frame[column]):
                break
            keys.append(column)
    rest = [c for c in frame.columns if c not in keys]
    width = MAX_COLUMNS - len(keys)
    return [frame[keys + rest[k:k + width]] for k in range(0, len(rest), width)]


class Report:
    """Sections of one report in reading order, rendered by ``template`` (default: the plain layout)."""

    def __init__(self, title: str, out_dir: str | Path, template: str = "report.html", **context):
        self.title = title
        self.out_dir = Path(out_dir)
        self.template = template
        self.context = context
        self.sections: list[dict] = []
        self.warnings: list[str] = []
        self.missing_glyphs: set[str] = set()  # characters a figure drew as boxes: no installed font has them
        self.files: list[str] = []
        self.verdicts: list[str] = []

    def verdict(self, text: str) -> None:
        """The conclusion in words, shown first (parlai_dialeval/verdict.py writes it)."""
        self.verdicts.append(text)

    def heading(self, text: str, level: int = 2) -> None:
        self.sections.append({"kind": "heading", "text": text, "level": min(max(level, 2), 4)})

    def text(self, text: str, note: bool = False) -> None:
        self.sections.append({"kind": "note" if note else "text", "text": text})

    def warn(self, text: str) -> None:
        """A warning shown in a box at the top of the report (small n, zero variance, nothing testable)."""
        if text not in self.warnings:
            self.warnings.append(text)

    def table(self, frame: pd.DataFrame, caption: str | None = None, floatfmt: str = "{:.3f}",
              index: bool = False, empty: str = "No rows.") -> None:
        """A table, or the ``empty`` sentence when the frame has no rows. pandas escapes every cell. A table with
        ``question`` and ``unit`` columns and several rows of one question is shown as one table per question and
        unit, named in its caption, rather than the question repeated in every row. Past MAX_ROWS rows, the first
        ones, and a note of how many there are."""
        if frame is None or frame.empty:
            self.sections.append({"kind": "text", "text": (caption.rstrip(".") + ": " if caption else "") + empty})
            return
        if not isinstance(frame.columns, pd.MultiIndex) and {"question", "unit"} <= set(frame.columns) \
                and frame.duplicated(["question", "unit"]).any():
            for (question, unit), part in frame.groupby(["question", "unit"], sort=False, dropna=False):
                named = f"{question} ({unit})" + (f": {caption}" if caption else "")
                self._table(part.drop(columns=["question", "unit"]), named, floatfmt, index)
            return
        self._table(frame, caption, floatfmt, index)

    def _table(self, frame: pd.DataFrame, caption: str | None, floatfmt: str, index: bool) -> None:
        rows = len(frame)
        frame = frame.head(MAX_ROWS)
        frame = frame.rename(columns=in_words) if not isinstance(frame.columns, pd.MultiIndex) else frame
        parts = column_parts(frame, index)
        for number, part in enumerate(parts, 1):
            rendered = part.to_html(index=index, float_format=floatfmt.format, border=0, na_rep="", escape=True)
            shown = caption if len(parts) == 1 or not caption else f"{caption} (part {number} of {len(parts)})"
            self.sections.append({"kind": "table", "caption": shown, "html": Markup(rendered),
                                  "rows": rows, "shown": len(frame), "last_part": number == len(parts)})

    def figure(self, fig, name: str, caption: str = "") -> Path:
        """Save a matplotlib figure as NAME.png beside the report and show it."""
        path = self.out_dir / f"{name}.png"
        with atomic_path(path) as tmp, warnings.catch_warnings(record=True) as caught:  # makes the folder, owner-only
            warnings.simplefilter("always")
            fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
        for w in caught:  # matplotlib's "Glyph 65309 missing from font(s) DejaVu Sans" becomes one report warning
            if found := MISSING_GLYPH.match(str(w.message)):
                self.missing_glyphs.add(chr(int(found.group(1))))
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        import matplotlib.pyplot as plt  # here, not at the top: only figures need pyplot (0.5 s to import)

        plt.close(fig)
        self.sections.append({"kind": "figure", "src": path.name, "caption": caption or name})
        return path

    def file(self, name: str) -> None:
        """List an output file in the report's Files section."""
        if name not in self.files:
            self.files.append(name)

    @contextmanager
    def library_warnings(self):
        """Turn warnings that statistics libraries raise inside the block into one report warning each,
        instead of noise on stderr."""
        with caught_warnings() as caught:
            yield
        for message in caught:
            self.warn(message)

    def render(self) -> str:
        template = environment().get_template(self.template)
        said = self.warnings
        if self.missing_glyphs:
            said = said + ["Figures draw these characters as empty boxes (no font installed where the analysis ran has "
                           "them): " + ", ".join(f"{c} ({unicodedata.name(c, f'U+{ord(c):04X}')})"
                                                 for c in sorted(self.missing_glyphs))
                           + ". The CSV files hold them as written."]
        return template.render(title=self.title, sections=self.sections, warnings=said,
                               verdicts=self.verdicts, files=self.files, **self.context)

    def write(self, name: str = "report.html") -> Path:
        path = self.out_dir / name
        with atomic_open(path) as handle:  # makes the folder, owner-only
            handle.write(self.render())
        return path
