"""docs/console.md shows exactly the screenshots the browser tests take for it."""

from __future__ import annotations

import re

from tests.console.test_browser import DOC_SCREENSHOTS
from tests.console.test_dealer_screen import DOC_SCREENSHOTS as DEALER_AND_WALL_SCREENSHOTS
from tests.support.daemon import REPO_ROOT

DOCS = REPO_ROOT / "docs"


def test_every_screenshot_the_docs_show_is_taken_by_a_browser_test_and_is_there() -> None:
    shown = set(re.findall(r"\]\((console/[\w.-]+\.png)\)", (DOCS / "console.md").read_text()))
    files = (*DOC_SCREENSHOTS.values(), *DEALER_AND_WALL_SCREENSHOTS.values())
    taken = {f"console/{file}" for file in files}
    assert len(taken) == len(files), "two tests write the same screenshot"
    assert shown == taken, (sorted(shown - taken), sorted(taken - shown))
    on_disk = {f"console/{path.name}" for path in (DOCS / "console").glob("*.png")}
    assert on_disk == taken, (sorted(on_disk - taken), sorted(taken - on_disk))
