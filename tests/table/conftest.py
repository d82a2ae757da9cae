"""Tables the state machine's tests start from, shared by every test module here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.table.driver import Driver


@pytest.fixture
def make_table() -> Callable[..., Driver]:
    """Makes baccarat tables like ``table``, with ``TableConfig`` fields overridden
    (``make_table(camera_cross_check=True)``)."""

    def make(**overrides: Any) -> Driver:
        driver = Driver.for_game("baccarat", **overrides)
        driver.new_shoe()
        return driver

    return make


@pytest.fixture
def table(make_table: Callable[..., Driver]) -> Driver:
    """A baccarat table whose shoe is shuffled and burnt, awaiting its first round."""
    return make_table()


@pytest.fixture
def dealing(table: Driver) -> Driver:
    """The baccarat ``table`` in round 1 after two cards (player 9S, banker TD)."""
    table.open_and_close_betting()
    table.draw("9S", "TD")
    return table
