"""A shoe that was never shuffled stops the table before its first round settles.

The check itself (``controller/games/shuffle_check.py``) is tested in
``tests/games/test_shuffle_check.py``; here the table runs it on the cards of a new shoe as
they leave it, the reveal and the burn included, and pauses with its own reason."""

from __future__ import annotations

import random

import pytest

from controller.kernel.cards import Card
from controller.table.state import Phase
from simulators.shoe.orders import factory_shoe
from tests.table.driver import Driver, deal_until_settled, shuffled_shoe


def factory_cut_at(start: int) -> list[Card]:
    shoe = factory_shoe(8)
    return shoe[start:] + shoe[:start]


def start_shoe(driver: Driver, cards: list[Card]) -> None:
    """Declare a new shoe and draw its reveal and burn from ``cards`` (consumed)."""
    assert driver.command("new_shoe").ok
    while driver.phase in (Phase.BURN_REVEAL, Phase.BURNING):
        driver.draw(cards.pop(0))


def paused_for_the_shuffle(driver: Driver) -> list[dict]:
    return [
        event
        for event in driver.published_events("table_paused")
        if event["reason"] == "unshuffled_shoe"
    ]


# An ace revealed burns one card: four cards of the round follow, the fewest before a
# baccarat round can settle. Cut at the deck's first ace (AS), its first two cards are AS 2S.
@pytest.mark.parametrize("start", [0, 12, 13, 25, 26, 38, 39, 51, 100, 207, 311, 415])
def test_a_factory_shoe_pauses_before_the_first_round_settles(start: int) -> None:
    driver = Driver.for_game("baccarat")
    cards = factory_cut_at(start)
    start_shoe(driver, cards)
    if driver.phase is Phase.SHOE_READY:
        assert driver.request_round().ok
        driver.expire("betting")
        deal_until_settled(driver, cards)
    assert driver.phase is Phase.PAUSED, driver.phase
    assert driver.published_events("round_settled") == []
    (paused,) = paused_for_the_shuffle(driver)
    assert "not shuffled" in paused["message"]
    assert driver.machine.state.shoe_locked
    stop = [line for line in driver.dealer_lines() if line.action == "stop"]
    assert stop and "not shuffled" in stop[-1].message


def test_a_supervisor_confirms_the_shoe_and_the_round_goes_on() -> None:
    driver = Driver.for_game("baccarat")
    cards = factory_cut_at(0)  # AS revealed, 2S burnt
    start_shoe(driver, cards)
    assert driver.request_round().ok
    driver.expire("betting")
    deal_until_settled(driver, cards)
    assert driver.phase is Phase.PAUSED
    dealt_before = len(driver.published_events("card_dealt"))
    assert driver.command("resume").ok
    deal_until_settled(driver, cards)
    assert len(driver.published_events("round_settled")) == 1
    assert len(driver.published_events("card_dealt")) >= dealt_before
    # Confirmed: the check is over for this shoe; the factory order goes on unpaused.
    for _ in range(3):
        assert driver.request_round().ok
        driver.expire("betting")
        deal_until_settled(driver, cards)
    assert len(paused_for_the_shuffle(driver)) == 1
    assert len(driver.published_events("round_settled")) == 4


def test_a_supervisor_may_cancel_the_round_and_end_the_shoe() -> None:
    driver = Driver.for_game("baccarat")
    cards = factory_cut_at(0)
    start_shoe(driver, cards)
    assert driver.request_round().ok
    driver.expire("betting")
    deal_until_settled(driver, cards)
    assert driver.phase is Phase.PAUSED
    assert driver.command("cancel", reason="shoe not shuffled").ok
    assert driver.command("end_shoe").ok
    assert driver.phase is Phase.AWAITING_SHUFFLE
    # The next shoe, shuffled, is checked afresh and deals without a pause.
    shuffled = shuffled_shoe(4)
    start_shoe(driver, shuffled)
    for _ in range(8):
        assert driver.request_round().ok
        driver.expire("betting")
        deal_until_settled(driver, shuffled)
    assert len(paused_for_the_shuffle(driver)) == 1


@pytest.mark.parametrize("game", ["baccarat", "blackjack-classic"])
def test_shuffled_shoes_deal_without_an_unshuffled_pause(game: str) -> None:
    rng = random.Random(11)
    for _ in range(5):
        driver = Driver.for_game(game, decision_s=8.0)
        cards = shuffled_shoe(rng.randrange(1 << 30))
        start_shoe(driver, cards)
        for _ in range(6):
            assert driver.request_round().ok
            driver.expire("betting")
            deal_until_settled(driver, cards)
            assert driver.phase is not Phase.PAUSED
        assert paused_for_the_shuffle(driver) == []


def test_a_journal_of_machine_revision_5_replays_without_the_check() -> None:
    from controller.table.machine import TableMachine
    from tests.table.driver import config_for

    driver = Driver(TableMachine(config_for("baccarat"), revision=5))
    cards = factory_cut_at(0)
    start_shoe(driver, cards)
    assert driver.request_round().ok
    driver.expire("betting")
    deal_until_settled(driver, cards)
    assert paused_for_the_shuffle(driver) == []
    assert len(driver.published_events("round_settled")) == 1
