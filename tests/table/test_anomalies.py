"""Every anomaly pauses the table with a reason code; a supervisor resumes it or cancels
the round. While paused the shoe is locked and no card changes the round."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from controller.kernel.cards import parse_card
from controller.table.effects import AskCamera, LockShoe, PublishEvent, StartTimer
from controller.table.events import (
    CardsLost,
    ControllerStarted,
    ShoeFault,
    ShoeOffline,
    ShoeOnline,
)
from controller.table.state import Phase
from tests.table.driver import Driver, table_for


def assert_paused(driver: Driver, reason: str) -> None:
    assert driver.phase is Phase.PAUSED
    assert driver.machine.state.pause.reason.value == reason
    assert driver.machine.state.shoe_locked
    assert any(isinstance(effect, LockShoe) for effect in driver.last)
    paused = driver.published_events("table_paused")[-1]
    assert paused["reason"] == reason and paused["message"]


def assert_cancel_refunds(driver: Driver) -> None:
    round_id = driver.machine.state.round_id
    answer = driver.command("cancel", reason="cannot resolve")
    assert answer.ok and answer.by == "sam"
    voided = driver.published_events("round_voided")[-1]
    assert voided["round_id"] == round_id
    assert voided["refund"] == "all"
    assert voided["bets"] and set(voided["bets"].values()) == {0.0}
    assert driver.phase is Phase.SHOE_READY
    assert driver.machine.state.round is None
    assert not driver.published_events("round_settled")
    # The next round gets a new id.
    assert driver.request_round().ok
    assert driver.machine.state.round_id == round_id + 1


def finish_round(driver: Driver) -> None:
    assert driver.phase is Phase.DEALING
    assert driver.expected_position() == "player"
    driver.draw("KC", "3H")
    settled = driver.published_events("round_settled")[-1]["result"]
    assert settled["player"] == ["9S", "KC"] and settled["banker"] == ["TD", "3H"]


def cards_of_round(driver: Driver) -> list:
    return list(driver.machine.state.round_log)


# -- cards out of turn ---------------------------------------------------------------------


@pytest.mark.parametrize("ending", ["resume", "cancel"])
def test_card_during_betting(table: Driver, ending: str) -> None:
    table.request_round()
    table.draw("5H")
    assert_paused(table, "card_out_of_turn")
    assert "during betting" in table.machine.state.pause.message
    assert "5H" not in str(table.published_events("table_paused"))
    if ending == "cancel":
        assert_cancel_refunds(table)
        return
    assert table.command("resume", resolution="burn").ok
    assert table.phase is Phase.BETTING
    table.expire("betting")
    table.draw("9S", "TD", "KC", "3H")
    assert table.published_events("round_settled")


@pytest.mark.parametrize("ending", ["accept", "burn", "cancel"])
def test_card_while_paused_changes_nothing_until_resolved(dealing: Driver, ending: str) -> None:
    assert dealing.command("pause", reason="check the layout").ok
    assert_paused(dealing, "supervisor")
    log = cards_of_round(dealing)
    dealing.draw("KC")
    assert dealing.phase is Phase.PAUSED
    assert cards_of_round(dealing) == log  # no card changes the round while paused
    assert dealing.machine.state.pause.reason.value == "card_out_of_turn"
    assert not dealing.command("resume").ok  # the held card needs a resolution
    if ending == "cancel":
        assert_cancel_refunds(dealing)
    elif ending == "accept":
        assert dealing.command("resume", resolution="accept").ok
        assert_still_paused_by_the_supervisor(dealing)
        assert dealing.expected_position() == "banker"
        dealing.draw("3H")
        assert dealing.published_events("round_settled")[-1]["result"]["player"] == ["9S", "KC"]
    else:
        assert dealing.command("resume", resolution="burn").ok
        assert_still_paused_by_the_supervisor(dealing)
        finish_round(dealing)


def assert_still_paused_by_the_supervisor(driver: Driver) -> None:
    """The card is resolved; the supervisor's pause it came in holds until a plain resume."""
    assert driver.phase is Phase.PAUSED
    assert driver.machine.state.pause.reason.value == "supervisor"
    assert "check the layout" in driver.machine.state.pause.message
    assert driver.command("resume").ok


@pytest.mark.parametrize("ending", ["burn", "cancel_refused"])
def test_card_after_the_rounds_last_card(table: Driver, ending: str) -> None:
    table.open_and_close_betting()
    table.draw("9S", "TD", "KC", "3H", "7C")
    assert_paused(table, "card_out_of_turn")
    assert "after the round's last card" in table.machine.state.pause.message
    if ending == "cancel_refused":
        answer = table.command("cancel")
        assert not answer.ok and "no round" in answer.message
        return
    assert table.command("resume", resolution="burn").ok
    assert table.phase is Phase.SHOE_READY


def test_card_before_a_new_shoe_is_declared() -> None:
    driver = Driver.for_game("baccarat")
    driver.draw("7C")
    assert_paused(driver, "card_out_of_turn")
    assert "before a new shoe" in driver.machine.state.pause.message
    assert not driver.command("new_shoe").ok
    assert driver.command("resume", resolution="burn").ok
    driver.new_shoe()


def test_cut_card_during_the_burn_pauses() -> None:
    driver = Driver.for_game("baccarat")
    driver.command("new_shoe")
    driver.draw("4S")
    driver.cut_card()
    assert_paused(driver, "card_out_of_turn")
    assert driver.command("resume").ok
    assert driver.phase is Phase.BURNING
    assert driver.machine.state.burn_left == 4


# -- impossible cards, misreads, the camera -------------------------------------------------


@pytest.mark.parametrize("ending", ["resume", "cancel"])
def test_a_ninth_copy_pauses_and_is_not_dealt(ending: str) -> None:
    driver = Driver.for_game("baccarat")
    driver.command("new_shoe")
    driver.draw("8S", *["AS"] * 8)  # eight burn cards: every copy of AS
    assert driver.phase is Phase.SHOE_READY
    driver.open_and_close_betting()
    driver.draw("9S")
    before = cards_of_round(driver)
    driver.draw("AS")
    assert_paused(driver, "impossible_card")
    assert cards_of_round(driver) == before
    assert driver.machine.state.count.remaining(driver.machine.state.burn_cards[1]) == 0
    if ending == "cancel":
        assert_cancel_refunds(driver)
        return
    assert driver.command("resume").ok
    assert driver.expected_position() == "banker"
    driver.draw("TD", "KC", "3H")
    assert driver.published_events("round_settled")


def test_misread_resolved_by_the_camera(dealing: Driver) -> None:
    dealing.misread()
    assert dealing.phase is Phase.READING
    asks = [effect for effect in dealing.last if isinstance(effect, AskCamera)]
    assert asks == [AskCamera("player", "misread", 2)]
    dealing.camera("player", "KC")
    assert dealing.phase is Phase.DEALING
    dealt = dealing.published_events("card_dealt")[-1]
    assert dealt["card"] == "KC" and dealt["source"] == "camera"
    dealing.draw("3H")
    assert dealing.published_events("round_settled")[-1]["result"]["player"] == ["9S", "KC"]


@pytest.mark.parametrize("ending", ["enter_card", "cancel"])
def test_misread_the_camera_cannot_resolve(dealing: Driver, ending: str) -> None:
    dealing.misread()
    dealing.camera("player", None)
    assert_paused(dealing, "misread")
    assert not dealing.command("resume").ok
    if ending == "cancel":
        assert_cancel_refunds(dealing)
        return
    answer = dealing.command("resume", resolution="enter_card", card="KC")
    assert answer.ok, answer
    assert dealing.published_events("card_dealt")[-1]["source"] == "supervisor"
    dealing.draw("3H")
    assert dealing.published_events("round_settled")[-1]["result"]["player"] == ["9S", "KC"]


def test_the_camera_that_never_answers_a_misread_pauses(dealing: Driver) -> None:
    dealing.misread()
    dealing.expire("camera")
    assert_paused(dealing, "misread")


@pytest.mark.parametrize("ending", ["resume", "cancel"])
def test_camera_and_shoe_disagreeing_when_cross_checking(
    make_table: Callable[..., Driver], ending: str
) -> None:
    driver = make_table(camera_cross_check=True)
    driver.open_and_close_betting()
    effects = driver.draw("9S")
    assert AskCamera("player", "cross_check", 1) in effects
    driver.camera("player", "9S")  # agreement: nothing happens
    assert driver.phase is Phase.DEALING
    driver.draw("TD")
    driver.camera("banker", "TH")
    assert_paused(driver, "camera_mismatch")
    assert "TD" in driver.machine.state.pause.message
    if ending == "cancel":
        assert_cancel_refunds(driver)
        return
    assert driver.command("resume").ok
    driver.draw("KC", "3H")
    assert driver.published_events("round_settled")


def test_a_late_answer_about_another_card_of_the_hand_is_not_the_misread_card(
    make_table: Callable[..., Driver],
) -> None:
    """The camera answers in order: a cross-check of the player's first card may arrive
    while the table waits for the camera to read the player's misread third card. Matched
    by position alone, the first card's face was dealt as the third card (a second 2S)."""
    driver = make_table(camera_cross_check=True)
    driver.open_and_close_betting()
    driver.draw("2S", "3D", "3H", "4C")  # player 5, banker 7: the player draws
    effects = driver.misread()
    assert AskCamera("player", "misread", 3) in effects

    def dealt(effects: list[object]) -> list[dict[str, object]]:
        return [
            e.payload for e in effects if isinstance(e, PublishEvent) and e.name == "card_dealt"
        ]

    assert not dealt(driver.camera("player", "2S", card_number=1))  # card 1's cross-check
    assert driver.phase is Phase.READING
    assert [d["card"] for d in dealt(driver.camera("player", "7D", card_number=3))] == ["7D"]
    # An answer about a card nobody asked for is refused, not taken.
    assert driver.camera("player", "9C", card_number=2)
    assert driver.rejections()


def test_no_cross_check_when_it_is_off(dealing: Driver) -> None:
    effects = dealing.draw("KC")
    assert not [effect for effect in effects if isinstance(effect, AskCamera)]
    dealing.camera("player", "2C")
    assert dealing.rejections()
    assert dealing.phase is Phase.DEALING


# -- the shoe and the dealer ------------------------------------------------------------------


@pytest.mark.parametrize("ending", ["resume", "cancel"])
def test_shoe_offline(dealing: Driver, ending: str) -> None:
    dealing.send(ShoeOffline("/dev/ttyUSB0", "unplugged", dealing.tick()))
    assert_paused(dealing, "shoe_offline")
    if ending == "cancel":
        dealing.send(ShoeOnline("/dev/ttyUSB0", dealing.tick()))
        assert_cancel_refunds(dealing)
        return
    answer = dealing.command("resume")
    assert not answer.ok and "offline" in answer.message
    effects = dealing.send(ShoeOnline("/dev/ttyUSB0", dealing.tick()))
    assert LockShoe() in effects  # the reconnected shoe is told again to stay locked
    assert dealing.phase is Phase.PAUSED
    # A card may have left the shoe while the cable was out, unannounced: a person says.
    answer = dealing.command("resume")
    assert not answer.ok and "no_cards_drawn" in answer.message
    assert dealing.command("resume", resolution="no_cards_drawn").ok
    finish_round(dealing)


def test_a_card_drawn_while_the_shoe_was_offline_is_entered_by_hand(dealing: Driver) -> None:
    expected = dealing.machine.state.round.next_step()
    dealing.send(ShoeOffline("/dev/ttyUSB0", "unplugged", dealing.tick()))
    dealing.send(ShoeOnline("/dev/ttyUSB0", dealing.tick()))
    answer = dealing.command("resume", resolution="enter_card", card="9D")
    assert answer.ok, answer
    (dealt,) = dealing.published_events("card_dealt")[-1:]
    assert (dealt["card"], dealt["position"], dealt["source"]) == (
        "9D",
        expected.position,
        "supervisor",
    )
    # Still paused until the supervisor confirms that no other card left the shoe.
    assert dealing.phase is Phase.PAUSED
    assert not dealing.command("resume").ok
    assert dealing.command("resume", resolution="no_cards_drawn").ok
    assert dealing.phase is Phase.DEALING


def test_no_cards_drawn_is_refused_when_the_shoe_was_not_offline(dealing: Driver) -> None:
    assert dealing.command("pause", reason="check").ok
    answer = dealing.command("resume", resolution="no_cards_drawn")
    assert not answer.ok and "not offline" in answer.message


def test_shoe_offline_between_rounds_blocks_the_next_round(table: Driver) -> None:
    table.send(ShoeOffline("/dev/ttyUSB0", "silent", table.tick()))
    assert table.phase is Phase.SHOE_READY
    assert not table.request_round().ok
    table.send(ShoeOnline("/dev/ttyUSB0", table.tick()))
    assert table.request_round().ok


@pytest.mark.parametrize("ending", ["resume", "cancel"])
def test_shoe_fault(dealing: Driver, ending: str) -> None:
    dealing.send(ShoeFault("E7", "card jam", dealing.tick()))
    assert_paused(dealing, "shoe_fault")
    assert "card jam" in dealing.machine.state.pause.message
    if ending == "cancel":
        assert_cancel_refunds(dealing)
        return
    assert dealing.command("resume").ok
    finish_round(dealing)


@pytest.mark.parametrize("ending", ["burn", "cancel"])
def test_cards_lost(dealing: Driver, ending: str) -> None:
    dealing.send(CardsLost((17, 18), dealing.tick()))
    assert_paused(dealing, "cards_lost")
    assert not dealing.command("resume").ok
    assert not dealing.command("resume", resolution="accept").ok  # unread: cannot be dealt
    if ending == "cancel":
        assert_cancel_refunds(dealing)
        return
    assert dealing.command("resume", resolution="burn").ok
    finish_round(dealing)


@pytest.mark.parametrize("ending", ["resume", "cancel"])
def test_dealer_idle_past_the_deadline(dealing: Driver, ending: str) -> None:
    timers = [effect for effect in dealing.effects if isinstance(effect, StartTimer)]
    assert timers[-1].purpose == "dealer_idle" and timers[-1].duration_s == 60.0
    dealing.expire("dealer_idle")
    assert_paused(dealing, "dealer_idle")
    if ending == "cancel":
        assert_cancel_refunds(dealing)
        return
    assert dealing.command("resume").ok
    finish_round(dealing)


def test_an_old_dealer_idle_timer_is_ignored(dealing: Driver) -> None:
    stale = dealing.timer_id("dealer_idle")
    dealing.draw("KC")  # a new card restarts the deadline
    from controller.table.events import TimerExpired

    assert dealing.send(TimerExpired(stale, dealing.tick(100))) == []
    assert dealing.phase is Phase.DEALING


@pytest.mark.parametrize("ending", ["resume", "cancel"])
def test_restart_in_mid_round_pauses_recovered(dealing: Driver, ending: str) -> None:
    # A shoe that accounts for every card (native): nothing else to confirm (for the
    # others, see test_restart_gaps.py).
    dealing.send(ControllerStarted(dealing.tick(), gaps_visible=True))
    assert_paused(dealing, "recovered")
    if ending == "cancel":
        assert_cancel_refunds(dealing)
        return
    assert dealing.command("resume").ok
    finish_round(dealing)


def test_restart_between_rounds_does_not_pause(table: Driver) -> None:
    table.send(ControllerStarted(table.tick()))
    assert table.phase is Phase.SHOE_READY


def test_a_shoe_that_reports_the_wrong_gate_state_is_asked_again(dealing: Driver) -> None:
    from controller.table.effects import UnlockShoe
    from controller.table.events import ShoeLockChanged

    assert dealing.send(ShoeLockChanged(False, dealing.tick())) == []  # as wanted: dealing
    dealing.command("pause", reason="check")
    assert dealing.send(ShoeLockChanged(False, dealing.tick())) == [LockShoe()]
    assert dealing.send(ShoeLockChanged(True, dealing.tick())) == []
    dealing.command("resume")
    assert dealing.send(ShoeLockChanged(True, dealing.tick())) == [UnlockShoe()]


def test_a_cleared_shoe_fault_is_news_and_leaves_the_pause_to_the_supervisor(
    dealing: Driver,
) -> None:
    from drivers.shoe.events import ShoeFault, ShoeFaultCleared

    driver = dealing
    driver.send(ShoeFault("E2", "overdraw", driver.tick()))
    assert driver.phase is Phase.PAUSED
    effects = driver.send(ShoeFaultCleared("E2", driver.tick()))
    assert driver.phase is Phase.PAUSED
    assert driver.published_events("shoe_fault_cleared") == [{"code": "E2"}]
    assert not [e for e in effects if type(e).__name__ == "EventRejected"]
    assert driver.command("resume").ok
    assert driver.phase is Phase.DEALING


def test_a_pause_that_needs_two_resolutions_takes_them_one_after_the_other(
    dealing: Driver,
) -> None:
    """The shoe went offline while a card was due, and once it was back the dealer drew a
    card while the table was still paused: the pause needs a burn and a confirmation. Each
    is applied as it comes (each alone used to be refused for the other)."""
    dealing.send(ShoeOffline("/dev/ttyUSB0", "unplugged", dealing.tick()))
    dealing.send(ShoeOnline("/dev/ttyUSB0", dealing.tick()))
    dealing.draw("5D")  # while paused: held out of turn
    pause = dealing.machine.state.pause
    assert pause.offline_gap and pause.held == (parse_card("5D"),)
    burned = dealing.command("resume", resolution="burn")
    assert burned.ok and "still needed" in burned.message, burned
    assert dealing.phase is Phase.PAUSED
    assert dealing.published_events("cards_burned")[-1] == {"count": 1}
    assert dealing.machine.state.pause.needs() == [
        "confirm no card left the shoe while it was offline (no_cards_drawn), or enter_card "
        "each card that did"
    ]
    assert not dealing.command("resume").ok  # nothing resolved: refused, as before
    assert dealing.command("resume", resolution="no_cards_drawn").ok
    finish_round(dealing)


def test_a_misread_that_was_no_card_is_dismissed_and_the_round_waits_for_its_card(
    dealing: Driver,
) -> None:
    # A frame the scanner could not read that no card sent (a forged or glitched frame):
    # the supervisor sees no card on the felt and says so, rather than cancel the round.
    drawn = dealing.machine.state.count.cards_seen
    dealing.misread()
    dealing.camera("player", None)
    assert_paused(dealing, "misread")
    (needs,) = dealing.machine.public_state()["paused"]["needs"]
    assert "enter_card" in needs and "no_cards_drawn" in needs, needs
    answer = dealing.command("resume", resolution="no_cards_drawn")
    assert answer.ok, answer
    assert dealing.phase is Phase.DEALING and dealing.expected_position() == "player"
    assert dealing.machine.state.count.cards_seen == drawn  # nothing counted
    assert not dealing.machine.state.shoe_locked
    finish_round(dealing)


def test_a_misread_hole_card_cannot_be_dismissed() -> None:
    # The hole card is on the felt, face down: it is read, never wished away.
    driver = table_for("blackjack-classic")
    driver.open_and_close_betting(boxes=1)
    driver.draw("5S")
    driver.misread()  # the hole card, dealt second in classic
    driver.draw("3C", "KH")  # up card K: the rules peek, so the hole matters now
    assert driver.machine.state.pause.reason.value == "hole_card_misread"
    (needs,) = driver.machine.public_state()["paused"]["needs"]
    assert "no_cards_drawn" not in needs, needs
    refused = driver.command("resume", resolution="no_cards_drawn")
    assert not refused.ok and "enter_card" in refused.message, refused
    assert driver.command("resume", resolution="enter_card", card="9D").ok


def test_no_cards_drawn_in_a_pause_with_an_outage_too_confirms_the_outage_first(
    dealing: Driver,
) -> None:
    # A restart in a misread pause, with a shoe that cannot account for cards drawn while
    # the table was down: the same words confirm that outage, as before; the unread card,
    # which lies on the felt, is then entered (or, were it none, dismissed).
    dealing.misread()
    dealing.camera("player", None)
    dealing.send(ControllerStarted(dealing.tick(), gaps_visible=False))
    pause = dealing.machine.state.pause
    assert pause.unread == "player" and pause.offline_gap
    answer = dealing.command("resume", resolution="no_cards_drawn")
    assert answer.ok and "still needed: enter_card" in answer.message, answer
    pause = dealing.machine.state.pause
    assert dealing.phase is Phase.PAUSED and pause.unread == "player" and not pause.offline_gap
    assert dealing.command("resume", resolution="enter_card", card="KC").ok
    dealing.draw("3H")
    settled = dealing.published_events("round_settled")[-1]["result"]
    assert settled["player"] == ["9S", "KC"] and settled["banker"] == ["TD", "3H"]


def test_the_dealer_hears_plain_words_not_the_ports_error(dealing: Driver) -> None:
    """The dealer's line says what to do in plain words; a device's own error text is for
    the supervisor's pause and the logs, not for the person at the felt."""
    raw = "port lost: device reports readiness to read but returned no data"
    dealing.send(ShoeOffline("/dev/ttyUSB0", raw, dealing.tick()))
    (stop,) = [line for line in dealing.dealer_lines() if line.action == "stop"]
    assert stop.message == "stop: the shoe is offline; call the supervisor"
    (paused,) = dealing.published_events("table_paused")
    assert raw in paused["message"]  # the supervisor still reads what the port said
    assert dealing.command("pause", reason="a spilled drink").ok
    (stop,) = [line for line in dealing.dealer_lines() if line.action == "stop"]
    assert "a spilled drink" in stop.message  # a person's words are for the dealer too
