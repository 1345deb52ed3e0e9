"""HTML reports that a person reads first: headings, text, tables and PNG figures side by side.

Figures are written as PNG files next to report.html and linked, so the report opens fast even for
large studies (tables should hold aggregates, never raw rows). Everything is written atomically.
"""
from __future__ import annotations

import html
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from parlai_dialeval.utils.atomic import atomic_open, atomic_path  # noqa: E402

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
figure{margin:1em 0}figcaption{font-size:.9em;color:#555}img{max-width:100%}
.note{background:#fff8e1;border-left:4px solid #f0b400;padding:.5em 1em}
"""


class Report:
    def __init__(self, title: str, out_dir: str | Path):
        self.title = title
        self.out_dir = Path(out_dir)
        self.parts: list[str] = []

    def heading(self, text: str, level: int = 2) -> None:
        self.parts.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def text(self, text: str, note: bool = False) -> None:
        css = ' class="note"' if note else ""
        self.parts.append(f"<p{css}>{html.escape(text)}</p>")

    def table(self, frame: pd.DataFrame, caption: str | None = None, floatfmt: str = "{:.3f}",
              index: bool = False) -> None:
        if caption:
            self.parts.append(f"<p><b>{html.escape(caption)}</b></p>")
        self.parts.append(frame.to_html(index=index, float_format=floatfmt.format, border=0,
                                        na_rep="", escape=True))

    def figure(self, fig, name: str, caption: str = "") -> Path:
        """Save a matplotlib figure as NAME.png beside the report and show it."""
        path = self.out_dir / f"{name}.png"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
        plt.close(fig)
        self.parts.append(f'<figure><img src="{html.escape(path.name)}" alt="{html.escape(caption or name)}">'
                          f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        return path

    def write(self, name: str = "report.html") -> Path:
        path = self.out_dir / name
        with atomic_open(path) as handle:
            handle.write(f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(self.title)}"
                         f"</title><style>{_STYLE}</style></head><body><h1>{html.escape(self.title)}</h1>"
                         + "\n".join(self.parts) + "</body></html>\n")
        return path
