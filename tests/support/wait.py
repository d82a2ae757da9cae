"""Waiting in tests for something another thread or process does: one helper, one message.

A test that waits polls for what must happen, up to a generous limit, and fails saying what
did not happen; it never sleeps for a fixed time and hopes. To show that something did *not*
happen, wait for something that must happen after it would have (a later event, a marker
sent down the same channel), then check.
"""

from __future__ import annotations

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
