"""A chatbot's text on the dashboard as the worker pages show it (crowdsourcing/frontend/src/components/BotText.jsx):
safe markdown (bold, italics, lists, code, tables, quotes) through markdown-it-py with HTML off, so a tag in a reply
is shown as text and nothing in it is interpreted; links, images and link references off, so the researcher's page
offers nothing to click or load from a bot (its Content-Security-Policy would refuse the load anyway). No sanitiser
is needed after it: no HTML of the text's own passes."""
from __future__ import annotations

from markdown_it import MarkdownIt
from markupsafe import Markup

from parlai_dialeval.report import bidi_shown

_MARKDOWN = MarkdownIt("default", {"html": False, "linkify": False, "typographer": False, "breaks": True}).disable(
    ["link", "image", "autolink", "reference"])


def bot_text(text) -> Markup:
    """The reply rendered, in a block of its own direction (as ``<bdi>`` gives a participant's text); bidi controls
    shown as the reports show them."""
    html = _MARKDOWN.render(bidi_shown("" if text is None else str(text)))
    return Markup('<div class="md" dir="auto">') + Markup(html) + Markup("</div>")
