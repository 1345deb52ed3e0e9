"""docs/report_gallery.md shows every page tests/crowdsourcing/test_report_gallery_browser.py looks at, and
nothing else: each picture it links exists, each picture in its folder is linked, each report the test
writes (and the dashboard) has its picture. The pictures are made by that test (DIALEVAL_GALLERY)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "report_gallery.md"
FOLDER = REPO / "docs" / "images" / "report_gallery"
TEST = REPO / "tests" / "crowdsourcing" / "test_report_gallery_browser.py"


def test_the_report_gallery_links_every_page_the_test_looks_at_and_nothing_else():
    linked = set(re.findall(r"\(images/report_gallery/([\w-]+\.png)\)", DOC.read_text()))
    pictures = {path.name for path in FOLDER.glob("*.png")}
    assert linked == pictures, {"linked, no picture": linked - pictures, "picture, not linked": pictures - linked}
    looked_at = set(re.findall(r'^\s+"(\w+)": \["', TEST.read_text(), re.M)) | {"dashboard"}
    assert len(looked_at) > 3 and looked_at == {name.removesuffix(".png") for name in pictures}
