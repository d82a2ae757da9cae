"""Baccarat at the table: the shoe's burn, rounds driven live by the rules, the cut card."""

from __future__ import annotations

import pytest

from controller.games.baccarat import BaccaratRound, available_bets
from controller.kernel.cards import parse_card
from controller.table.effects import LockShoe, TellDealer, UnlockShoe
from controller.table.state import Phase
from tests.table.driver import Driver, card_faces_in, deal_until_settled, shuffled_shoe


def positions_told(driver: Driver, since: int) -> list[str]:
    return [
        effect.position
        for effect in driver.effects[since:]
        if isinstance(effect, TellDealer) and effect.action == "deal"
    ]


@pytest.mark.parametrize(
    "cards",
    [
        ["9S", "TD", "KC", "3H"],  # player natural 9: both stand
        ["2S", "3D", "3C", "4H", "5S"],  # player 5 draws, banker 7 stands
        ["2S", "3D", "3C", "TH", "6S", "8C"],  # player draws 6, banker 3 draws
        ["TS", "TD", "TC", "TH", "TS", "TD"],  # both 0: both draw, a tie
    ],
)
def test_a_round_deals_where_the_rules_say_and_settles_every_bet(
    table: Driver, cards: list[str]
) -> None:
    assert table.request_round().ok
    start = len(table.effects)
    table.expire("betting")
    rules = BaccaratRound("traditional", 1)
    expected_positions = []
    for text in cards:
        expected_positions.append(rules.next_step().position)
        rules.deal(parse_card(text))
    assert rules.complete
    table.draw(*cards)

    told = positions_told(table, start)
    assert told == expected_positions
    assert table.phase is Phase.SHOE_READY
    (settled,) = table.published_events("round_settled")
    assert settled["result"] == rules.settlement()
    assert set(settled["result"]["bets"]) == set(available_bets(1))
    assert table.machine.state.count.cards_seen == 3 + len(cards)


def test_the_shoe_is_unlocked_only_while_cards_are_due(table: Driver) -> None:
    table.request_round()
    assert table.machine.state.shoe_locked
    effects = table.expire("betting")
    assert any(isinstance(effect, UnlockShoe) for effect in effects)
    effects = table.draw("9S", "TD", "KC", "3H")
    assert any(isinstance(effect, LockShoe) for effect in effects)
    assert table.machine.state.shoe_locked


def test_burn_at_a_new_shoe_counts_the_revealed_cards_value_and_publishes_no_face() -> None:
    driver = Driver.for_game("baccarat")
    assert driver.command("new_shoe").ok
    assert driver.phase is Phase.BURN_REVEAL
    start = len(driver.effects)
    # Not a run of one suit in rank order: that would be a shoe in new decks' order.
    burn = ["KD", "2C", "7H", "4S", "9D", "5C", "JS", "8C", "3H", "TC", "6D"]
    driver.draw(burn[0])
    assert driver.phase is Phase.BURNING
    assert driver.machine.state.burn_left == 10  # K burns ten
    driver.draw(*burn[1:-1])
    assert driver.phase is Phase.BURNING
    driver.draw(burn[-1])
    assert driver.phase is Phase.SHOE_READY
    assert driver.published_events("burn_completed")[0]["cards"] == 11
    for effect in driver.effects[start:]:
        text = card_faces_in(effect)
        for face in burn:
            assert f'"{face}"' not in text, (face, effect)
    # The faces are kept (journaled via the events) but never published.
    assert [str(card) for card in driver.machine.state.burn_cards] == burn
    assert driver.machine.state.count.cards_seen == 11


def test_one_burn_card_too_many_pauses_and_is_burned_on_resume() -> None:
    driver = Driver.for_game("baccarat")
    driver.new_shoe("AS", ("2D",))  # an ace burns one card
    driver.draw("3D")
    assert driver.phase is Phase.PAUSED
    pause = driver.machine.state.pause
    assert pause.reason.value == "card_out_of_turn"
    assert "one burn card too many" in pause.message
    assert not driver.command("resume").ok  # the held card must be dealt with
    assert not driver.command("resume", resolution="accept").ok  # no round expects it
    assert driver.command("resume", resolution="burn").ok
    assert driver.phase is Phase.SHOE_READY
    assert driver.request_round().ok


def test_no_round_before_the_burn_is_complete() -> None:
    driver = Driver.for_game("baccarat")
    driver.command("new_shoe")
    driver.draw("5S", "2D")
    before = driver.machine.snapshot()
    answer = driver.request_round()
    assert not answer.ok and "BURNING" in answer.message
    assert driver.machine.snapshot() == before


def test_cut_card_mid_round_makes_that_round_the_last_and_ends_the_shoe(table: Driver) -> None:
    table.open_and_close_betting()
    table.draw("9S", "TD")
    table.cut_card()
    assert table.machine.state.final_round == 1
    assert table.phase is Phase.DEALING  # the round goes on
    table.draw("KC", "3H")
    assert table.phase is Phase.AWAITING_SHUFFLE
    assert table.published_events("round_settled")
    assert table.published_events("shoe_ended")[0]["shoe_id"] == 1
    assert not table.request_round().ok
    table.new_shoe()
    assert table.machine.state.shoe_id == 2


def test_one_more_round_after_the_cut_card_when_the_table_says_so() -> None:
    driver = Driver.for_game("baccarat", rounds_after_cut_card=1)
    driver.new_shoe()
    shoe = shuffled_shoe(3)[20:]
    driver.open_and_close_betting()
    driver.draw(shoe.pop(0))
    driver.cut_card()
    deal_until_settled(driver, shoe)
    assert driver.phase is Phase.SHOE_READY
    driver.open_and_close_betting()
    deal_until_settled(driver, shoe)
    assert driver.phase is Phase.AWAITING_SHUFFLE


def test_cut_card_between_rounds_makes_the_next_round_the_last(table: Driver) -> None:
    table.open_and_close_betting()
    table.draw("9S", "TD", "KC", "3H")
    table.cut_card()
    assert table.machine.state.final_round == 2
    table.open_and_close_betting()
    table.draw("8S", "TD", "KC", "3H")
    assert table.phase is Phase.AWAITING_SHUFFLE


def test_side_bets_close_by_the_round_number_in_the_shoe(table: Driver) -> None:
    shoe = shuffled_shoe(7)[3:]
    for _ in range(41):
        table.open_and_close_betting()
        deal_until_settled(table, shoe)
    opened = table.published_events("round_opened")
    assert [payload["round_number"] for payload in opened] == list(range(1, 42))
    assert "player_bonus" in opened[39]["bets"]  # round 40
    assert "player_bonus" not in opened[40]["bets"]  # round 41: the limit is 40
    assert opened[40]["bets"] == list(available_bets(41))
    settled = table.published_events("round_settled")
    assert "player_bonus" not in settled[-1]["result"]["bets"]


def test_round_and_shoe_ids_never_repeat_within_a_run(table: Driver) -> None:
    shoe = shuffled_shoe(11)[3:]
    table.open_and_close_betting()
    assert table.command("cancel", reason="test").ok
    table.open_and_close_betting()
    deal_until_settled(table, shoe)
    assert table.command("new_shoe").ok
    table.draw("2S", "3S", "4S")
    table.open_and_close_betting()
    round_ids = [payload["round_id"] for payload in table.published_events("round_opened")]
    shoe_ids = [payload["shoe_id"] for payload in table.published_events("shoe_started")]
    assert round_ids == [1, 2, 3]
    assert shoe_ids == [1, 2]


def test_a_ninth_copy_in_the_burn_pauses_without_publishing_its_face() -> None:
    driver = Driver.for_game("baccarat")
    driver.command("new_shoe")
    start = len(driver.effects)
    driver.draw("TS", *["AS"] * 9)
    assert driver.phase is Phase.PAUSED
    assert driver.machine.state.pause.reason.value == "impossible_card"
    assert driver.machine.state.burn_left == 2  # the ninth copy was not counted
    for effect in driver.effects[start:]:
        text = card_faces_in(effect)
        assert '"TS"' not in text and "AS" not in text, effect
    assert driver.command("resume").ok
    driver.draw("2C", "3C")
    assert driver.phase is Phase.SHOE_READY
