"""The shoe's own hand result against the table's settlement: a disagreement is published.

An Angel Eye shoe reports its own result of each hand (``G``: winner and pairs). The table
computes the result itself from the cards and never trusts the shoe's; but when the two
disagree, something is wrong (a card entered by hand, a misread position, a shoe dealing
from another hand...) and the supervisor must hear of it.

The table's state machine is not involved: the shoe's result reaches
:meth:`ShoeResultCheck.shoe_reported` on the table's thread, in queue order with the cards
(the driver hands it over after the events before it, see ``ShoeDriver(on_result=...)``), and
the table's settlement reaches :meth:`ShoeResultCheck.settled` when its ``round_settled`` is
published. A disagreement is logged and submitted as
``ShoeFault("result_mismatch", "the shoe says ...; the table settled round ... as ...")``,
which the table journals and publishes as ``shoe_fault`` like any fault of the shoe: between
rounds a notice, inside a round a pause.

Pairing: the latest settlement waits for the next shoe result and the other way round. A shoe
that sends no results (or a lost ``G``) leaves settlements unpaired, which is not an error;
two shoe results with no settlement between them are (the table settled nothing the shoe
finished). The shoe's result names baccarat's hands: a table whose game's hands are others
(Dragon Tiger's, as its presentation declares them) checks nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from controller.kernel.presentation import presentation
from controller.table.events import ShoeFault

logger = logging.getLogger(__name__)

RESULT_MISMATCH: Final = "result_mismatch"
# The hands an Angel Eye hand result names.
SHOE_HANDS: Final = ("player", "banker")


@dataclass(frozen=True, slots=True)
class HandResult:
    """Winner and pairs, the part of a result both sides can state."""

    winner: str  # player, banker, tie, force-quit, or unknown
    player_pair: bool
    banker_pair: bool

    @property
    def text(self) -> str:
        words = {"player": "player wins", "banker": "banker wins", "tie": "tie"}.get(
            self.winner, self.winner
        )
        pairs = [
            f"{side} pair"
            for side, flag in (("player", self.player_pair), ("banker", self.banker_pair))
            if flag
        ]
        return ", ".join([words, *pairs])


def _pair(cards: Sequence[Any]) -> bool:
    # A pair: the hand's first two cards share a rank ("KH", "KS"); the suit is the last letter.
    return len(cards) >= 2 and str(cards[0])[:-1] == str(cards[1])[:-1]


def settled_result(payload: Mapping[str, Any]) -> tuple[str | None, HandResult] | None:
    """The round id and hand result of a ``round_settled`` payload; None if it is no
    baccarat result (another game's settlement has no winner and pairs to compare)."""
    result = payload.get("result")
    if not isinstance(result, Mapping) or result.get("winner") not in ("player", "banker", "tie"):
        return None
    player, banker = result.get("player") or (), result.get("banker") or ()
    return payload.get("round_id"), HandResult(result["winner"], _pair(player), _pair(banker))


class ShoeResultCheck:
    """Pairs the shoe's results with the table's settlements; submits a fault on a
    disagreement. Call both methods on the table's thread."""

    def __init__(self, submit: Callable[[object], None], game: str | None = None) -> None:
        self.submit = submit
        # The shoe's words (player, banker) are this game's hands, or there is nothing to
        # compare; ``None``: a caller that checks whatever baccarat result it is given.
        shown = presentation(game)
        self.enabled = game is None or (shown is not None and shown.hands == SHOE_HANDS)
        self.checked = 0
        self.mismatches = 0
        self._settlement: tuple[str | None, HandResult] | None = None
        self._shoe: tuple[HandResult, str, float] | None = None

    def settled(self, payload: Mapping[str, Any]) -> None:
        """The table published ``round_settled`` with ``payload``."""
        if not self.enabled:
            return
        settlement = settled_result(payload)
        if settlement is None:
            return
        self._settlement = settlement
        if self._shoe is not None:
            shoe, self._shoe = self._shoe, None
            self._compare(*shoe)

    def shoe_reported(
        self, winner: str, player_pair: bool, banker_pair: bool, text: str, at: float
    ) -> None:
        """The shoe reported its own result of a hand (``text``: in its own words)."""
        if not self.enabled:
            logger.info("the shoe's result, not this game's to compare: %s", text)
            return
        shoe = HandResult(winner, player_pair, banker_pair)
        if self._settlement is None:
            if self._shoe is not None:
                _, old_text, old_at = self._shoe
                self._fault(
                    f"the shoe says {old_text}, but the table settled no round for it", old_at
                )
            self._shoe = (shoe, text, at)
            return
        self._compare(shoe, text, at)

    def _compare(self, shoe: HandResult, text: str, at: float) -> None:
        settlement, self._settlement = self._settlement, None
        assert settlement is not None
        round_id, table = settlement
        self.checked += 1
        if shoe.winner == "force-quit":
            self._fault(
                f"the shoe aborted the hand; the table settled {round_id} as {table.text}", at
            )
        elif shoe != table:
            self._fault(f"the shoe says {text}; the table settled {round_id} as {table.text}", at)
        else:
            logger.info("the shoe's result agrees with the table's for %s: %s", round_id, text)

    def _fault(self, message: str, at: float) -> None:
        self.mismatches += 1
        logger.error("shoe result mismatch: %s", message)
        self.submit(ShoeFault(RESULT_MISMATCH, message, at))
