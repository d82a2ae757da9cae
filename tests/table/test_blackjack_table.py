"""Blackjack at the table: decisions asked of the platform with a deadline, the timeout
auto-play rule, Boundless "one more card?" loops, and a hole card no one sees before its
reveal. The positions and results come from the rules engine, driven live."""

from __future__ import annotations

import json

import pytest

from controller.games.base import DecisionNeeded
from controller.games.blackjack import BlackjackRound
from controller.games.registry import BLACKJACK, games_in
from controller.kernel.cards import parse_card
from controller.table.effects import AskCamera, PublishEvent, PublishState, StartTimer
from controller.table.state import Phase
from tests.table.driver import Driver, deal_until_settled, shuffled_shoe, table_for

GAMES = games_in(BLACKJACK)


def step(driver: Driver):
    return driver.machine.state.round.next_step()


def test_classic_two_boxes_deal_order_decisions_and_result_come_from_the_rules() -> None:
    driver = table_for("blackjack-classic")
    driver.open_and_close_betting(boxes=2)
    rules = BlackjackRound("blackjack-classic", 2)
    cards = ["9S", "5C", "7D", "2H", "8C", "KH"]  # box1 9, box2 5, hole 7, 2, 8, up K
    for text in cards:
        assert driver.expected_position() == rules.next_step().position
        rules.deal(parse_card(text))
        driver.draw(text)
    assert driver.phase is Phase.DECIDING
    request = driver.published_events("decision_requested")[-1]
    assert request["kind"] == "play" and request["box"] == 1
    assert request["options"] == sorted(rules.next_step().options)
    assert request["deadline"] == driver.now + 8.0
    # Box 1 (11) doubles, box 2 (13) stands.
    for box, token, card in ((1, "D", "TD"), (2, "S", None)):
        driver.decide("play", box, 1, token)
        rules.decide(box, 1, token)
        if card:
            driver.draw(card)
            rules.deal(parse_card(card))
    while not rules.complete:  # the dealer (17 showing) stands
        driver.draw("4S")
        rules.deal(parse_card("4S"))
    settled = driver.published_events("round_settled")[-1]["result"]
    assert settled == json.loads(json.dumps(rules.settlement()))
    assert settled["boxes"][0]["net"] == 2.0  # doubled 21 against 17
    assert driver.phase is Phase.SHOE_READY


def test_illegal_and_untimely_decisions_are_rejected_and_change_nothing() -> None:
    driver = table_for("blackjack-classic")
    driver.draw("9S")  # during betting? no: the table is between rounds
    assert driver.phase is Phase.PAUSED
    driver.command("resume", resolution="burn")
    driver.open_and_close_betting(boxes=1)
    driver.draw("9S", "7D", "5C")
    before = driver.machine.snapshot()
    driver.decide("play", 1, 1, "H")  # a card is due, not a decision
    assert driver.rejections() and driver.machine.snapshot() == before
    driver.draw("KH")
    before = driver.machine.snapshot()
    for kind, box, hand, token in [
        ("play", 1, 1, "P"),  # 9 and 5 do not split
        ("play", 2, 1, "H"),  # no box 2
        ("insurance", 1, 1, "Y"),  # not the pending kind
        ("play", 1, 1, "banana"),
    ]:
        driver.decide(kind, box, hand, token)
        assert driver.rejections(), (kind, box, token)
        assert driver.machine.snapshot() == before
    from controller.table.events import PlatformDecided

    driver.send(PlatformDecided(99, "play", 1, 1, "S", driver.tick()))
    assert driver.rejections() and driver.machine.snapshot() == before


def test_decision_timeout_applies_the_auto_play_rule() -> None:
    driver = table_for("blackjack-classic")
    driver.open_and_close_betting(boxes=1)
    driver.draw("4S", "7D", "5C", "KH")  # box 9 against a ten
    timers = [effect for effect in driver.last if isinstance(effect, StartTimer)]
    assert timers[-1].purpose == "decision" and timers[-1].duration_s == 8.0
    driver.expire("decision")
    taken = driver.published_events("decision_taken")[-1]
    assert taken["auto"] and taken["decision"] == "H"  # 11 or less hits
    driver.draw("2D")  # 11: hits again
    driver.expire("decision")
    assert driver.published_events("decision_taken")[-1]["decision"] == "H"
    driver.draw("3D")  # 14: stands
    driver.expire("decision")
    assert driver.published_events("decision_taken")[-1]["decision"] == "S"
    settled = driver.published_events("round_settled")[-1]["result"]  # dealer 17 stands
    assert settled["boxes"][0]["hands"][0]["cards"] == ["4S", "5C", "2D", "3D"]


def test_a_late_decision_after_the_timeout_is_rejected() -> None:
    driver = table_for("blackjack-classic")
    driver.open_and_close_betting(boxes=1)
    driver.draw("TS", "7D", "8C", "KH")
    driver.expire("decision")  # 18 stands by itself
    driver.decide("play", 1, 1, "H")
    assert driver.rejections()


def test_insurance_is_offered_on_an_ace_and_declined_on_timeout() -> None:
    driver = table_for("blackjack-classic")
    driver.open_and_close_betting(boxes=1)
    driver.draw("TS", "7D", "8C", "AH")
    request = driver.published_events("decision_requested")[-1]
    assert request["kind"] == "insurance"
    driver.expire("decision")
    assert driver.published_events("decision_taken")[-1]["decision"] == "N"
    assert driver.published_events("decision_requested")[-1]["kind"] == "play"


@pytest.mark.parametrize("game", GAMES)
def test_player_blackjack_natural(game: str) -> None:
    driver = table_for(game)
    driver.open_and_close_betting(boxes=1)
    shoe = [parse_card(text) for text in ("AS", "9D", "KC", "7H", "TH", "TC")]
    deal_until_settled(driver, shoe)
    settled = driver.published_events("round_settled")[-1]["result"]
    if game == "blackjack-boundless":
        assert settled["player_cards"][:2] == ["AS", "KC"]
    else:
        assert settled["boxes"][0]["hands"][0]["result"] == "blackjack"
        assert settled["boxes"][0]["net"] == 1.5


def test_boundless_dealer_blackjack_ends_the_round_at_once() -> None:
    driver = table_for("blackjack-boundless")
    driver.open_and_close_betting()
    driver.draw("9S", "KD", "7C", "AH")  # P 9, D-up K, P 7, D-hole A
    assert driver.phase is Phase.SHOE_READY
    settled = driver.published_events("round_settled")[-1]["result"]
    assert settled["dealer"]["blackjack"] is True
    assert not driver.published_events("decision_requested")


def test_boundless_more_cards_loop() -> None:
    driver = table_for("blackjack-boundless")
    driver.open_and_close_betting()
    driver.draw("2S", "9D", "3C", "7H")  # player 5, dealer 9 up
    kinds = []
    for card in ("4D", "2D", "3H"):
        request = driver.published_events("decision_requested")[-1]
        kinds.append(request["kind"])
        driver.decide("more_cards", 1, 1, "Y")
        assert driver.expected_position() == "player"
        driver.draw(card)
    assert kinds == ["more_cards"] * 3
    driver.decide("more_cards", 1, 1, "N")  # the sequence is 2 3 4 2 3 = 14
    assert driver.expected_position() == "dealer"
    driver.draw("8C")  # dealer 9 + 7 + 8 = 24: busts
    settled = driver.published_events("round_settled")[-1]["result"]
    assert settled["player_cards"] == ["2S", "3C", "4D", "2D", "3H"]
    assert settled["dealer"]["busted"] is True
    assert len(driver.published_events("decision_taken")) == 4


def test_boundless_more_cards_timeout_pauses_instead_of_guessing() -> None:
    # The platform answers for every player (auto-playing those who time out); its silence
    # is a system fault. A guess could strand a player who split: pause for the supervisor.
    driver = table_for("blackjack-boundless")
    driver.open_and_close_betting()
    driver.draw("8S", "9D", "8C", "7H")  # shared 8 8: players may have split
    asked = len(driver.published_events("decision_requested"))
    driver.expire("decision")
    assert driver.phase is Phase.PAUSED
    assert driver.published_events("table_paused")[-1]["reason"] == "platform_silent"
    assert not driver.published_events("decision_taken")
    driver.draw("3C")  # a card now changes nothing: it is held out of turn
    assert driver.phase is Phase.PAUSED
    assert driver.command("resume", resolution="burn").ok
    # Resumed: the question is asked again, with a new deadline; the answer is taken.
    assert driver.phase is Phase.DECIDING
    assert len(driver.published_events("decision_requested")) == asked + 1
    driver.decide("more_cards", 1, 1, "N")
    assert driver.expected_position() == "dealer"


def test_boundless_platform_silence_can_be_cancelled_with_every_bet_refunded() -> None:
    driver = table_for("blackjack-boundless")
    driver.open_and_close_betting()
    driver.draw("8S", "9D", "8C", "7H")
    driver.expire("decision")
    assert driver.command("cancel", reason="platform down").ok
    voided = driver.published_events("round_voided")[-1]
    assert voided["refund"] == "all"
    assert set(voided["bets"].values()) == {0.0}
    assert driver.phase is Phase.SHOE_READY


def test_classic_split_deals_to_each_hand() -> None:
    driver = table_for("blackjack-classic")
    driver.open_and_close_betting(boxes=1)
    driver.draw("8S", "7D", "8C", "6H")
    driver.decide("play", 1, 1, "P")
    assert driver.expected_position() == "box1.hand1"
    driver.draw("3C")
    driver.decide("play", 1, 1, "S")
    assert driver.expected_position() == "box1.hand2"
    driver.draw("TC")
    driver.decide("play", 1, 2, "S")
    driver.draw("TD")  # dealer 7 + 6 + 10 = 23
    settled = driver.published_events("round_settled")[-1]["result"]
    assert [hand["cards"] for hand in settled["boxes"][0]["hands"]] == [
        ["8S", "3C"],
        ["8C", "TC"],
    ]


def test_cut_card_mid_round_in_blackjack_ends_the_shoe_after_it() -> None:
    driver = table_for("blackjack-21")
    driver.open_and_close_betting(boxes=1)
    shoe = shuffled_shoe(5)
    driver.draw(shoe.pop(0), shoe.pop(0))
    driver.cut_card()
    deal_until_settled(driver, shoe)
    assert driver.phase is Phase.AWAITING_SHUFFLE


# -- the hole card ------------------------------------------------------------------------


HOLE = "QD"  # used nowhere else in these rounds


def assert_hole_never_published_before_reveal(driver: Driver, events: list) -> None:
    for event in events:
        live = driver.machine.state.round
        effects = driver.send(event)
        revealed = driver.machine.state.round is None or driver.machine.state.round.hole_revealed
        if live is None or revealed:
            continue
        for effect in effects:
            if isinstance(effect, PublishState | PublishEvent):
                assert f'"{HOLE}"' not in json.dumps(effect.to_dict()), effect


@pytest.mark.parametrize("game", GAMES)
def test_the_hole_card_appears_in_no_published_effect_before_the_reveal(game: str) -> None:
    driver = table_for(game, camera_cross_check=True)
    driver.open_and_close_betting(boxes=1)
    from controller.table.events import CardDrawn, PlatformDecided, TimerExpired

    order = {
        "blackjack-classic": ["5S", HOLE, "3C", "6H"],
        "blackjack-21": ["5S", "6H", "3C", HOLE],
        "blackjack-boundless": ["5S", "6H", "3C", HOLE],
    }[game]
    events: list = [CardDrawn(parse_card(text), None, driver.tick()) for text in order]
    assert_hole_never_published_before_reveal(driver, events)
    assert driver.phase is Phase.DECIDING
    kind = "more_cards" if game == "blackjack-boundless" else "play"
    yes = "Y" if kind == "more_cards" else "H"
    no = "N" if kind == "more_cards" else "S"
    round_id = driver.machine.state.round_id
    assert_hole_never_published_before_reveal(
        driver,
        [
            PlatformDecided(round_id, kind, 1, 1, yes, driver.tick()),
            CardDrawn(parse_card("2C"), None, driver.tick()),
            TimerExpired(999, driver.tick()),  # stale: ignored
            PlatformDecided(round_id, kind, 1, 1, no, driver.tick()),
        ],
    )
    # Only now, with the dealer's play, may the hole card be published.
    assert driver.machine.state.round.hole_revealed
    assert f'"{HOLE}"' in json.dumps(driver.last[-1].to_dict())
    deal_until_settled(driver, [parse_card(c) for c in ("TS", "TH", "TC")])
    assert driver.published_events("round_settled")


def no_published_hole(driver: Driver, start: int) -> None:
    for effect in driver.effects[start:]:
        if isinstance(effect, PublishState | PublishEvent):
            assert f'"{HOLE}"' not in json.dumps(effect.to_dict()), effect


def rules_result(game: str, cards: list[str], decisions: list[tuple[int, int, str]]) -> dict:
    """The settlement a fresh rules round gives for these cards and decisions."""
    rules = BlackjackRound(game, 1)
    cards_left, decisions_left = list(cards), list(decisions)
    while not rules.complete:
        if isinstance(rules.next_step(), DecisionNeeded):
            rules.decide(*decisions_left.pop(0))
        else:
            rules.deal(parse_card(cards_left.pop(0)))
    return json.loads(json.dumps(rules.settlement()))


def test_a_misread_hole_card_is_read_by_the_camera_when_the_dealer_reveals_it() -> None:
    driver = table_for("blackjack-boundless")
    driver.open_and_close_betting()
    driver.draw("5S", "6H", "3C")  # P 5, D-up 6: no dealer blackjack is possible
    start = len(driver.effects)
    driver.misread()  # the hole card
    assert driver.phase is Phase.DECIDING  # play goes on
    driver.decide("more_cards", 1, 1, "Y")
    driver.draw("9D")
    effects = driver.decide("more_cards", 1, 1, "N")
    assert driver.phase is Phase.READING
    assert AskCamera("dealer", "hole_reveal", 2) in effects
    no_published_hole(driver, start)
    # Turned over but not read yet: the dealer's hand shows it unread, not the stand-in.
    states = [e.state for e in effects if isinstance(e, PublishState)]
    assert states, "the reveal publishes the table's state"
    dealer = states[-1]["round"]["dealer"]
    assert dealer["cards"] == ["6H", None]
    assert dealer["total"] is None
    driver.camera("dealer", HOLE)  # 6 + Q = 16: the dealer draws
    assert driver.published_events("hole_card_read")[-1]["card"] == HOLE
    assert driver.expected_position() == "dealer"
    driver.draw("8C")
    settled = driver.published_events("round_settled")[-1]["result"]
    assert settled == rules_result(
        "blackjack-boundless", ["5S", "6H", "3C", HOLE, "9D", "8C"], [(1, 1, "Y"), (1, 1, "N")]
    )
    assert driver.machine.state.count.seen[parse_card(HOLE)] == 1


@pytest.mark.parametrize(("hole", "dealer_blackjack"), [("AD", True), (HOLE, False)])
def test_a_misread_hole_card_the_peek_needs_is_entered_by_the_supervisor(
    hole: str, dealer_blackjack: bool
) -> None:
    driver = table_for("blackjack-classic")
    driver.open_and_close_betting(boxes=1)
    driver.draw("5S")
    start = len(driver.effects)
    driver.misread()  # the hole card, dealt second in classic
    assert driver.phase is Phase.DEALING
    driver.draw("3C", "KH")  # up card K: the rules peek, so the hole matters now
    assert driver.phase is Phase.PAUSED
    pause = driver.machine.state.pause
    assert pause.reason.value == "hole_card_misread"
    assert not driver.command("resume").ok
    assert driver.command("resume", resolution="enter_card", card=hole).ok
    no_published_hole(driver, start)
    if dealer_blackjack:
        settled = driver.published_events("round_settled")[-1]["result"]
        assert settled["dealer"]["blackjack"] is True
        assert settled == rules_result("blackjack-classic", ["5S", hole, "3C", "KH"], [])
    else:
        assert driver.phase is Phase.DECIDING


@pytest.mark.parametrize("ending", ["enter_card", "cancel"])
def test_a_hole_card_the_camera_cannot_read_at_its_reveal(ending: str) -> None:
    driver = table_for("blackjack-21")
    driver.open_and_close_betting(boxes=1)
    driver.draw("TS", "6H", "9C")
    driver.misread()
    driver.decide("play", 1, 1, "S")
    assert driver.phase is Phase.READING
    driver.camera("dealer", None)
    assert driver.phase is Phase.PAUSED
    assert driver.machine.state.pause.unread == "the dealer's hole card"
    if ending == "cancel":
        assert driver.command("cancel").ok
        assert driver.published_events("round_voided")
        return
    assert driver.command("resume", resolution="enter_card", card="5D").ok
    driver.draw("8C")  # 6 + 5 + 8 = 19
    settled = driver.published_events("round_settled")[-1]["result"]
    assert settled == rules_result("blackjack-21", ["TS", "6H", "9C", "5D", "8C"], [(1, 1, "S")])


def test_boundless_settles_only_the_side_bets_offered_in_the_round() -> None:
    from controller.games.boundless_side_bets import SIDE_BET_LIMITS

    driver = table_for("blackjack-boundless")
    cards = shuffled_shoe(11)
    shortest = min(SIDE_BET_LIMITS.values())
    for _ in range(shortest + 1):
        driver.open_and_close_betting()
        deal_until_settled(driver, cards, decide="N")
    opened = driver.published_events("round_opened")
    settled = driver.published_events("round_settled")
    assert len(opened) == len(settled) == shortest + 1
    first, last = opened[0]["bets"], opened[-1]["bets"]
    assert set(SIDE_BET_LIMITS) <= set(first)
    assert set(last) < set(first)  # a side bet is no longer offered after its limit
    for offered, result in ((first, settled[0]), (last, settled[-1])):
        assert set(result["result"]["side_bets"]) == set(offered) - {"main"}
