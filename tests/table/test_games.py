"""The table's games come from the registry: a round opens for every registered game."""

from __future__ import annotations

import pytest

from controller.games.registry import GAME_IDS, game_spec
from controller.kernel.errors import ConfigurationError
from controller.table import games
from tests.table.driver import Driver


@pytest.mark.parametrize("game", GAME_IDS)
def test_a_round_requested_without_boxes_gets_the_registry_default(game: str) -> None:
    driver = Driver.for_game(game)
    driver.new_shoe()
    assert driver.request_round().ok
    assert driver.machine.state.boxes == games.default_boxes(game)
    assert games.default_boxes(game) == game_spec(game).default_boxes
    opened = driver.published_events("round_opened")[-1]
    assert opened["bets"] == games.available_bets(game, 1)


def test_a_game_without_rules_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="no rules for the game 'poker'"):
        games.new_round("poker", 1)
    with pytest.raises(ConfigurationError, match="no rules for the game 'poker'"):
        games.available_bets("poker", 1)
