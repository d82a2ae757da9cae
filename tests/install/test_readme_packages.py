"""The README tells a new developer what `scripts/test` installs: exactly the script's
APT_PACKAGES, read from the script (so a package added there fails this test until the
README names it too), on how many workers the suite runs and how long it takes."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "scripts" / "test"
README = REPO_ROOT / "README.md"


def script_packages() -> list[str]:
    """APT_PACKAGES=(...) of scripts/test, as bash reads the array."""
    (array,) = re.findall(r"^APT_PACKAGES=\((.*?)\)", SCRIPT.read_text(), re.MULTILINE | re.DOTALL)
    return shlex.split(array, comments=True)


def readme_paragraph() -> str:
    """The README's paragraph about `scripts/test`, joined into one line."""
    paragraphs = re.split(r"\n\s*\n", README.read_text())
    (paragraph,) = [p for p in paragraphs if p.startswith("`scripts/test` creates")]
    return " ".join(paragraph.split())


def readme_packages() -> list[str]:
    """The packages in the parentheses after "the Debian packages the tests need"."""
    found = re.search(r"the Debian packages the tests need[^(]*\(([^)]*)\)", readme_paragraph())
    assert found is not None, readme_paragraph()
    return re.findall(r"`([^`]+)`", found[1])


def test_the_script_lists_its_packages() -> None:
    packages = script_packages()
    assert "mosquitto" in packages and len(packages) == len(set(packages)), packages


def test_the_readme_lists_exactly_the_packages_the_script_installs() -> None:
    assert readme_packages() == script_packages()


WORDS = {1: "one", 2: "two", 3: "three", 4: "four"}


def test_the_readme_says_how_many_workers_run_the_suite_and_how_long_it_takes() -> None:
    (workers,) = re.findall(r'-n "\$\{PYTEST_WORKERS:-(\d+)\}"', SCRIPT.read_text())
    paragraph = readme_paragraph()
    assert f"`pytest` on {WORDS[int(workers)]} workers" in paragraph, paragraph
    assert re.search(r"the whole suite takes about \d+ minutes on a 2-core machine", paragraph)
