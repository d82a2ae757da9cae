"""``AskCamera`` names the card's slot in its hand (``card_number``), counted as the rules
hold the hand now: the camera's region is ``card_slot(position, card_number)``."""

from __future__ import annotations

from controller.table.effects import AskCamera, Effect
from controller.table.state import Phase
from drivers.camera import card_slot
from tests.table.driver import table_for


def asks(effects: list[Effect]) -> list[AskCamera]:
    return [effect for effect in effects if isinstance(effect, AskCamera)]


def test_baccarat_cross_checks_name_each_card_slot_in_deal_order() -> None:
    driver = table_for("baccarat", camera_cross_check=True)
    driver.open_and_close_betting()
    # Player 2+3 = 5 draws a third card.
    slots = []
    for card in ("2S", "3D", "3H", "4C", "9D"):
        (ask,) = asks(driver.draw(card))
        assert ask.reason == "cross_check"
        slots.append(card_slot(ask.position, ask.card_number))
        driver.camera(ask.position, card)  # the camera agrees
    assert slots == [
        "player.card1",
        "banker.card1",
        "player.card2",
        "banker.card2",
        "player.card3",
    ]


def test_a_misread_third_card_is_looked_for_in_the_third_slot() -> None:
    driver = table_for("baccarat")
    driver.open_and_close_betting()
    driver.draw("2S", "3D", "3H", "4C")  # player 5 draws a third card
    (ask,) = asks(driver.misread())
    assert ask == AskCamera("player", "misread", 3)
    driver.camera("player", "9D")
    assert driver.published_events("card_dealt")[-1]["card"] == "9D"


def test_a_split_hand_counts_its_cards_from_the_split() -> None:
    # Classic deals box 1, the dealer's hole card, box 1, the dealer's up card.
    driver = table_for("blackjack-classic", camera_cross_check=True)
    driver.open_and_close_betting(boxes=1)
    for card in ("8S", "5D", "8H", "6C"):
        for ask in asks(driver.draw(card)):
            driver.camera(ask.position, card)
    assert [(a.position, a.card_number) for a in asks(driver.effects)] == [
        ("box1", 1),
        ("box1", 2),
        ("dealer", 2),  # the face-up card, after the hole card
    ]
    assert driver.phase is Phase.DECIDING
    driver.decide("play", 1, 1, "P")
    # Hand 1 holds 8S and hand 2 8H: the next card of hand 1 is its second, and is misread.
    assert driver.expected_position() == "box1.hand1"
    (ask,) = asks(driver.misread())
    assert ask == AskCamera("box1.hand1", "misread", 2)
    assert card_slot(ask.position, ask.card_number) == "box1.hand1.card2"
    driver.camera("box1.hand1", "2D")
    driver.decide("play", 1, 1, "H")
    (ask,) = asks(driver.draw("3S"))  # hand 1's third card, read by the shoe
    assert ask == AskCamera("box1.hand1", "cross_check", 3)
    driver.camera("box1.hand1", "3S")
    driver.decide("play", 1, 1, "S")
    # Hand 2 has one card (the 8H moved from the box's second slot): its next is its second.
    assert driver.expected_position() == "box1.hand2"
    (ask,) = asks(driver.draw("TS"))
    assert ask == AskCamera("box1.hand2", "cross_check", 2)
    assert card_slot(ask.position, ask.card_number) == "box1.hand2.card2"


def test_a_resplit_renumbers_the_hands_after_it() -> None:
    # Blackjack 21 (hands up to 3): box 1, the dealer's up card, box 1, the hole card.
    driver = table_for("blackjack-21")
    driver.open_and_close_betting(boxes=1)
    driver.draw("8S", "6C", "8H", "5D")
    driver.decide("play", 1, 1, "P")  # hand 1: 8S, hand 2: 8H
    driver.draw("8D")  # hand 1: 8S 8D
    driver.decide("play", 1, 1, "P")  # hand 1: 8S, hand 2: 8D (new), hand 3: 8H
    (ask,) = asks(driver.misread())
    assert ask == AskCamera("box1.hand1", "misread", 2)
    driver.camera("box1.hand1", "TC")  # 18
    driver.decide("play", 1, 1, "S")
    assert driver.expected_position() == "box1.hand2"
    driver.draw("TH")  # hand 2: 8D TH
    driver.decide("play", 1, 2, "S")
    assert driver.expected_position() == "box1.hand3"
    (ask,) = asks(driver.misread())
    assert ask == AskCamera("box1.hand3", "misread", 2)  # the 8H is that hand's first card
    assert card_slot(ask.position, ask.card_number) == "box1.hand3.card2"


def test_a_misread_hole_card_is_read_at_its_own_slot_when_revealed() -> None:
    # Classic: the hole card is the dealer's first card; the up card (6) allows no peek.
    driver = table_for("blackjack-classic")
    driver.open_and_close_betting(boxes=1)
    driver.draw("TS")
    driver.misread()  # the hole card
    driver.draw("9S", "6C")
    assert driver.phase is Phase.DECIDING
    effects = driver.decide("play", 1, 1, "S")
    assert driver.phase is Phase.READING
    (ask,) = asks(effects)
    assert ask == AskCamera("dealer", "hole_reveal", 1)
    assert ask.to_dict() == {
        "effect": "AskCamera",
        "position": "dealer",
        "reason": "hole_reveal",
        "card_number": 1,
    }


def test_the_dealers_third_card_misread_goes_to_the_third_slot() -> None:
    driver = table_for("blackjack-classic")
    driver.open_and_close_betting(boxes=1)
    driver.draw("TS", "5D", "9S", "6C")  # the dealer holds 5D (hole) and 6C
    driver.decide("play", 1, 1, "S")
    assert driver.expected_position() == "dealer"
    (ask,) = asks(driver.misread())
    assert ask == AskCamera("dealer", "misread", 3)
