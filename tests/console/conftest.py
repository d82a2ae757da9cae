"""Fixtures of the console tests: the whole studio (:mod:`tests.support.console`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.console import ConsoleStudio, start_console_studio


@pytest.fixture
def console_studio_with(tmp_path: Path) -> Iterator[Callable[..., ConsoleStudio]]:
    """Start a studio with options: ``console_studio_with(idle_timeout_s=10,
    stale_after_s=2, tables={...}, protocol="3.1.1")`` (see
    :func:`tests.support.console.start_console_studio`); stopped after the test, whose
    console must stop cleanly on SIGTERM."""
    started: list[ConsoleStudio] = []

    def start(**options: Any) -> ConsoleStudio:
        studio = start_console_studio(tmp_path / f"studio-{len(started)}", **options)
        started.append(studio)
        return studio

    yield start
    for studio in started:
        studio.close()


@pytest.fixture
def console_studio(console_studio_with: Callable[..., ConsoleStudio]) -> ConsoleStudio:
    """A locked-down broker, tables t1 (baccarat) and t2 (blackjack-classic) online in
    ``SHOE_READY``, the dealer and the platform around them, and ``livetable console``
    serving at ``console_studio.url`` (see :class:`tests.support.console.ConsoleStudio`).
    Everything is stopped after the test; the console must stop cleanly on SIGTERM."""
    return console_studio_with()
