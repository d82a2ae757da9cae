"""The shoe's own result (Angel Eye ``G``) against the table's settlement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controller.games.baccarat import play_baccarat
from controller.kernel.cards import parse_card
from controller.service.assembly import Effects, assemble
from controller.service.config import LivetableConfig
from controller.service.shoe_results import RESULT_MISMATCH, ShoeResultCheck
from controller.table.config import TableConfig
from controller.table.effects import EffectBatch, Published, PublishEvent
from controller.table.events import (
    CardDrawn,
    RoundRequested,
    ShoeFault,
    SupervisorCommanded,
    TimerExpired,
)
from controller.table.state import Phase
from drivers.shoe.protocols.angel_eye.codec import GameResult
from drivers.shoe.sessions import ShoeResult

# Player 4S 9D (3), Banker 2H KD (2): both draw, Player 3C (6), Banker 5H (7): banker wins.
HAND = ["4S", "2H", "9D", "KD", "3C", "5H"]


def settled(winner: str, player: list[str], banker: list[str], round_id: str = "r1") -> dict:
    return {"round_id": round_id, "result": {"winner": winner, "player": player, "banker": banker}}


def test_check_pairs_results_and_settlements_either_way_round() -> None:
    faults: list[object] = []
    check = ShoeResultCheck(faults.append)
    check.settled(settled("banker", ["4S", "9D"], ["2H", "KD"]))
    check.shoe_reported("banker", False, False, "banker wins", 1.0)
    assert faults == [] and check.checked == 1
    # The shoe's result may arrive first (the table was waiting for the camera): it waits.
    check.shoe_reported("player", False, True, "player wins, banker pair", 2.0)
    check.settled(settled("player", ["9S", "KD"], ["QH", "QS"], "r2"))
    assert faults == [] and check.checked == 2
    check.settled(settled("tie", ["9S", "KD"], ["QH", "9C"], "r3"))
    check.shoe_reported("banker", True, False, "banker wins, player pair", 3.0)
    (fault,) = faults
    assert isinstance(fault, ShoeFault) and fault.code == RESULT_MISMATCH
    assert fault.message == "the shoe says banker wins, player pair; the table settled r3 as tie"
    # Two shoe results and no settlement between them: the first one was never settled.
    check.shoe_reported("banker", False, False, "banker wins", 4.0)
    check.shoe_reported("player", False, False, "player wins", 5.0)
    assert "settled no round" in faults[-1].message  # type: ignore[attr-defined]
    # A game with no winner to compare (blackjack) is ignored.
    check.settled({"round_id": "r9", "result": {"boxes": []}})


def test_a_shoe_result_the_table_settled_differently_is_published(tmp_path: Path) -> None:
    config = LivetableConfig(
        table=TableConfig(table_id="t1", game="baccarat", journal_path=tmp_path / "t1.journal")
    )
    published: list[Published] = []
    now = [100.0]

    def at() -> float:
        now[0] += 1.0
        return now[0]

    def publish(batch: EffectBatch) -> None:
        published.extend(e for e in batch.effects if isinstance(e, Published))

    with assemble(config, lambda devices: Effects(devices, publish), shoe=False) as table:
        table.start(at())
        runtime = table.runtime
        machine = runtime.table.machine
        runtime.handle(SupervisorCommanded("sam/1", "new_shoe", "sam", "supervisor", at()))
        burn = iter(["2S", "3D", "4D"])
        while machine.state.phase in (Phase.BURN_REVEAL, Phase.BURNING):
            runtime.handle(CardDrawn(parse_card(next(burn)), None, at()))
        runtime.handle(RoundRequested("platform/1", "platform", at()))
        (timer,) = machine.state.timers
        runtime.handle(TimerExpired(timer, at()))
        for card in HAND:
            runtime.handle(CardDrawn(parse_card(card), None, at()))
        assert machine.state.phase is Phase.SHOE_READY
        assert play_baccarat(HAND).winner == "banker"
        settlements = [p for p in published if isinstance(p, PublishEvent)]
        assert any(p.name == "round_settled" for p in settlements)

        # The shoe, on its own thread, says the player won: the driver hands the result over.
        table.devices.shoe_result(ShoeResult(GameResult.of("player"), 12, at()))
        while not runtime.events.empty():
            runtime.step(0.0)
    faults = [
        p.payload for p in published if isinstance(p, PublishEvent) and p.name == "shoe_fault"
    ]
    assert len(faults) == 1, published
    fault: dict[str, Any] = faults[0]
    assert fault["code"] == RESULT_MISMATCH
    assert fault["message"].startswith("the shoe says player wins; the table settled ")
    assert fault["message"].endswith(" as banker wins")
    assert table.devices.result_check.mismatches == 1


def test_a_game_whose_hands_the_shoe_does_not_name_is_not_checked() -> None:
    """An Angel Eye result names baccarat's hands (player, banker): a Dragon Tiger table
    pairs none of its settlements with it, so the shoe's reports of each hand never raise a
    fault there (two reports with no baccarat settlement between them would otherwise)."""
    from controller.games.dragon_tiger import play_dragon_tiger

    faults: list[object] = []
    check = ShoeResultCheck(faults.append, game="dragon-tiger")
    for number, (dragon, tiger) in enumerate((("7H", "7D"), ("KH", "2C"), ("5S", "5S"))):
        check.settled({"round_id": number, "result": play_dragon_tiger([dragon, tiger])})
        check.shoe_reported("banker", False, False, "banker wins", float(number))
    assert faults == [] and check.checked == 0
    # A baccarat table's check is on, as before.
    baccarat = ShoeResultCheck(faults.append, game="baccarat")
    baccarat.settled(settled("tie", ["9S", "KD"], ["QH", "9C"], "r3"))
    baccarat.shoe_reported("banker", False, False, "banker wins", 9.0)
    assert baccarat.checked == 1 and len(faults) == 1
