"""Fixtures of the console tests: the whole studio (:mod:`tests.support.console`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.console import ConsoleStudio, start_console_studio


@pytest.fixture
def console_studio(tmp_path: Path) -> Iterator[ConsoleStudio]:
    """A locked-down broker, tables t1 (baccarat) and t2 (blackjack-classic) online in
    ``SHOE_READY``, the dealer and the platform around them, and ``livetable console``
    serving at ``console_studio.url`` (see :class:`tests.support.console.ConsoleStudio`).
    Everything is stopped after the test; the console must stop cleanly on SIGTERM."""
    studio = start_console_studio(tmp_path / "studio")
    try:
        yield studio
    finally:
        studio.close()
