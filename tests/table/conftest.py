"""Tables the state machine's tests start from, shared by every test module here."""

from __future__ import annotations

import pytest

from tests.table.driver import Driver


@pytest.fixture
def table() -> Driver:
    """A baccarat table whose shoe is shuffled and burnt, awaiting its first round."""
    driver = Driver.for_game("baccarat")
    driver.new_shoe()
    return driver


@pytest.fixture
def dealing(table: Driver) -> Driver:
    """The baccarat ``table`` in round 1 after two cards (player 9S, banker TD)."""
    table.open_and_close_betting()
    table.draw("9S", "TD")
    return table
