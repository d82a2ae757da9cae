"""A progress bar for long commands, on a terminal only.

``with progress(total, "enrolling") as advance: ... advance()`` draws a rich progress bar
on stderr when stderr is a terminal, and does nothing otherwise, so that a command's output
piped into a file or read as JSON lines stays exactly as it was. The bar does not refresh
on a timer of its own (a benchmark's figures must not pay for it): it is redrawn when it
advances, at most ten times a second.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

T = TypeVar("T")

REDRAW_EVERY_S = 0.1


@contextlib.contextmanager
def progress(
    total: int | None, description: str, stream: TextIO | None = None
) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(steps=1)``; a bar on ``stream`` (stderr) only if it is a terminal."""
    stream = sys.stderr if stream is None else stream
    if not stream.isatty():
        yield lambda _steps=1: None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(file=stream),
        auto_refresh=False,
        transient=True,
    )
    drawn = 0.0
    with bar:
        task = bar.add_task(description, total=total)

        def advance(steps: int = 1) -> None:
            nonlocal drawn
            bar.advance(task, steps)
            now = time.monotonic()
            if now - drawn >= REDRAW_EVERY_S:
                drawn = now
                bar.refresh()

        bar.refresh()
        yield advance


def tracked(items: Iterable[T], total: int | None, description: str) -> Iterator[T]:
    """``items``, advancing a :func:`progress` bar as each is taken."""
    with progress(total, description) as advance:
        for item in items:
            yield item
            advance(1)
