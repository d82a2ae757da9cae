"""Every game is shown from its own presentation (controller/kernel/presentation.py): one
for each game of the registry, naming the bets and hands the rules themselves name."""

from __future__ import annotations

import pytest

from controller.games.base import CardNeeded
from controller.games.registry import GAME_IDS, GAMES, GameSpec
from controller.kernel.cards import ALL_FACES
from controller.kernel.presentation import (
    CARD_KEYS,
    PRESENTATIONS,
    SHAPES,
    SIDES,
    presentation,
    shoe_target,
)
from controller.tools.event_text import describe_event, settled_summary
from simulators.camera.layout import layout_for

SPECS = list(GAMES.values())


def test_every_game_of_the_registry_has_its_presentation_and_no_other() -> None:
    assert tuple(PRESENTATIONS) == GAME_IDS
    for spec in SPECS:
        assert spec.presentation.game == spec.id
        assert spec.presentation.shape in SHAPES
        assert spec.label == spec.presentation.label


@pytest.mark.parametrize("spec", SPECS, ids=GAME_IDS)
def test_the_bets_named_are_the_bets_the_rules_settle(spec: GameSpec) -> None:
    assert tuple(spec.presentation.bets) == spec.bet_ids()
    assert all(name and name != bet for bet, name in spec.presentation.bets.items())


def _played(spec: GameSpec) -> tuple[list[str], dict]:
    """A round of a game dealt without decisions, played from one deck in order: the
    positions its rules asked for and its settlement."""
    round_ = spec.new_round(1)
    positions, deck = [], iter(ALL_FACES)
    while isinstance(step := round_.next_step(), CardNeeded):
        positions.append(step.position)
        round_.deal(next(deck))
    return positions, dict(round_.settlement())


@pytest.mark.parametrize("spec", [s for s in SPECS if s.presentation.shape == SIDES])
def test_a_sides_game_names_the_hands_its_rules_deal_to(spec: GameSpec) -> None:
    shown = spec.presentation
    positions, result = _played(spec)
    assert set(positions) == set(shown.hands)
    assert positions[: len(shown.hands)] == list(shown.hands)  # dealt in the order shown
    for hand in shown.hands:
        assert hand in shown.card_keys
        assert isinstance(result[hand], list) and isinstance(result[shown.total_key(hand)], int)
    assert result["winner"] in (*shown.hands, "tie")
    # The felt has a slot for every card the rules may deal to a hand, in deal order.
    layout = layout_for(spec.id)
    assert layout.deal_order[: len(positions)] == tuple(
        f"{position}.card{positions[:i + 1].count(position)}"
        for i, position in enumerate(positions)
    )
    assert {slot.split(".")[0] for slot in layout.spots} == set(shown.hands)
    assert shown.felt is not None and len(layout.spots) == len(shown.hands) * shown.felt.cards


def test_the_words_of_a_result_come_from_its_game() -> None:
    data = {
        "round_id": 7,
        "result": {
            "player": ["4S", "5D"],
            "banker": ["KC", "7H"],
            "player_total": 9,
            "banker_total": 7,
            "winner": "player",
        },
    }
    said = settled_summary(data, "baccarat")
    assert said == "round 7: player 4S 5D (9) vs banker KC 7H (7): player"
    event = {"type": "round_settled", "data": data}
    assert describe_event(event, "baccarat") == settled_summary(data, "baccarat")
    # A table whose game is not known yet: no hands are guessed from the result's shape.
    assert describe_event(event) == "round 7: settled"


def test_cards_are_found_under_every_games_card_keys() -> None:
    assert {"player", "banker", "cards", "player_cards"} <= CARD_KEYS


def test_the_shoe_is_told_each_hand_as_its_game_declares() -> None:
    assert shoe_target("banker") == shoe_target("banker.card3") == "banker"
    assert shoe_target("player") == shoe_target("box2.hand1") == shoe_target(None) == "player"
    assert presentation("no-such-game") is None and presentation(3) is None
