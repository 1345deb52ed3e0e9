"""docs/participant_pages.md shows every worker screen the browser tests look at (browser_page.look_at),
at the size the test sees it, and nothing else: each picture it links exists, each picture in its folder is
linked, and each screen a test names has its picture. The pictures themselves are made by those tests
(DIALEVAL_GALLERY, the command in the page), so they show the pages the tests passed."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "participant_pages.md"
FOLDER = REPO / "docs" / "images" / "participant_pages"


def test_the_gallery_links_every_screen_the_tests_look_at_and_nothing_else():
    linked = set(re.findall(r"\(images/participant_pages/([\w-]+\.png)\)", DOC.read_text()))
    pictures = {path.name for path in FOLDER.glob("*.png")}
    assert linked == pictures, {"linked, no picture": linked - pictures, "picture, not linked": pictures - linked}
    screens = set()
    for test in (REPO / "tests" / "crowdsourcing").glob("test_*browser*.py"):
        for names in re.findall(r"look_at\(page, ([^\n]+)\)", test.read_text()):  # a name, or one per language
            screens |= set(re.findall(r'"(\w+)"', names))
    assert screens and screens == {name.rsplit("-", 1)[0] for name in pictures}
