"""Waiting in tests for something another thread or process does: one helper, one message.

A test that waits polls for what must happen, up to a generous limit, and fails saying what
did not happen; it never sleeps for a fixed time and hopes. To show that something did *not*
happen, wait for something that must happen after it would have (a later event, a marker
sent down the same channel), then check.

What arrives on a queue is awaited with :func:`wait_for_item`, which takes the items in order
and keeps the ones before the match, so a test can then check everything that came first.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# How often to ask: short beside any timeout a test gives, long enough not to spin a core.
POLL_INTERVAL_S = 0.01


def wait_until(
    predicate: Callable[[], T], timeout_s: float, what: str, *, interval_s: float = POLL_INTERVAL_S
) -> T:
    """Poll ``predicate`` until it returns something true, and return that.

    Fails the test with ``what`` (the thing awaited, e.g. "the dealer reaches the shoe") when
    ``timeout_s`` passes first. The predicate is asked once more after the deadline, so a
    slow machine that got there at the last moment passes.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout_s:g} s for {what}, in vain")
        time.sleep(interval_s)


def take_until(
    source: queue.Queue[T],
    predicate: Callable[[T], object],
    timeout_s: float,
    *,
    taken: list[T] | None = None,
) -> T | None:
    """Take items off ``source``, in order, until one satisfies ``predicate``; return it.

    Returns None if none did within ``timeout_s`` (for a bounded pause that is no failure,
    e.g. pacing a producer). Every item taken, the match included, is appended to ``taken``,
    so the caller keeps what came before it.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        try:
            item = source.get(timeout=max(left, 0.0))
        except queue.Empty:
            return None
        if taken is not None:
            taken.append(item)
        if predicate(item):
            return item
        if left <= 0:
            return None  # one item was asked for after the deadline, as wait_until asks


def wait_for_item(
    source: queue.Queue[T],
    predicate: Callable[[T], object],
    timeout_s: float,
    what: str,
    *,
    taken: list[T] | None = None,
) -> T:
    """Like :func:`take_until`, but a queue that yields no matching item in time fails the
    test with ``what`` (the item awaited), as :func:`wait_until` does."""
    item = take_until(source, predicate, timeout_s, taken=taken)
    if item is None:
        raise AssertionError(f"waited {timeout_s:g} s for {what}, in vain")
    return item
