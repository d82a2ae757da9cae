"""Dragon Tiger (8 decks) as a live round driven card by card, and its four bets.

docs/rules-dragon-tiger.md restates the rules it implements. A round deals one card face up
to the Dragon, then one to the Tiger; the higher rank wins, ace low and king high, suits
unranked. Bets: Dragon 1:1 and Tiger 1:1 (on a tie half of each is lost), Tie 11:1 and Suited
Tie 50:1 (same rank and suit). The shoe's procedures (the burn at a new shoe, the cut card,
the pauses) are the table's, as in baccarat (``controller/games/shoe.py``).

Settlement is a net result per unit staked, as in baccarat: a 1:1 win is ``1.0``, half lost
``-0.5``, a loss ``-1.0``. `livetable rules replay`, `livetable rtp` and the benchmarks run
this very class; the exact RTP enumeration (``dragon_tiger_rtp``) settles every pair of
cards with the same :func:`settle_bets`.

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from controller.games.base import CardNeeded, Step
from controller.games.replay_request import check_keys
from controller.kernel.cards import Card, parse_card
from controller.kernel.errors import RulesError

GAME: Final = "dragon-tiger"
DRAGON: Final = "dragon"
TIGER: Final = "tiger"
TIE: Final = "tie"
SUITED_TIE: Final = "suited_tie"

DRAGON_CARD: Final = CardNeeded(DRAGON)
TIGER_CARD: Final = CardNeeded(TIGER)
_ORDER: Final = (DRAGON_CARD, TIGER_CARD)

BET_IDS: Final[tuple[str, ...]] = (DRAGON, TIGER, TIE, SUITED_TIE)
"""Every bet, each open in every round of a shoe (the game has no side-bet limits)."""

# What a winning bet pays per unit (docs/rules-dragon-tiger.md, Bets).
PAYS: Final[Mapping[str, float]] = MappingProxyType(
    {DRAGON: 1.0, TIGER: 1.0, TIE: 11.0, SUITED_TIE: 50.0}
)
# On a tie a Dragon or Tiger bet loses half (the other half is returned).
HALF_LOST: Final = -0.5


def rank_value(card: Card) -> int:
    """A card's rank as the game compares it: ace 1, 2-10 face value, J 11, Q 12, K 13."""
    return card.rank_index


def winner(dragon: Card, tiger: Card) -> str:
    """``dragon``, ``tiger`` or ``tie``: the higher rank wins; suits do not rank."""
    dragon_value, tiger_value = rank_value(dragon), rank_value(tiger)
    if dragon_value > tiger_value:
        return DRAGON
    if tiger_value > dragon_value:
        return TIGER
    return TIE


def settle_bets(dragon: Card, tiger: Card) -> Mapping[str, float]:
    """Net result per unit staked of the four bets for a Dragon and a Tiger card."""
    won = winner(dragon, tiger)
    if won == TIE:
        suited = dragon.suit == tiger.suit
        return MappingProxyType(
            {
                DRAGON: HALF_LOST,
                TIGER: HALF_LOST,
                TIE: PAYS[TIE],
                SUITED_TIE: PAYS[SUITED_TIE] if suited else -1.0,
            }
        )
    return MappingProxyType(
        {
            DRAGON: PAYS[DRAGON] if won == DRAGON else -1.0,
            TIGER: PAYS[TIGER] if won == TIGER else -1.0,
            TIE: -1.0,
            SUITED_TIE: -1.0,
        }
    )


def available_bets(round_number: int) -> tuple[str, ...]:
    """The bets that may be placed in round ``round_number`` (1-based) of a shoe: all."""
    if round_number < 1:
        raise RulesError(f"round numbers start at 1, not {round_number}")
    return BET_IDS


class DragonTigerRound:
    """One Dragon Tiger round, driven card by card (implements ``base.LiveRound``)."""

    __slots__ = ("_cards", "round_number")

    game: str = GAME

    def __init__(self, round_number: int = 1) -> None:
        if not isinstance(round_number, int) or round_number < 1:
            raise RulesError(f"round numbers start at 1, not {round_number!r}")
        self.round_number = round_number
        self._cards: list[Card] = []

    def next_step(self) -> Step:
        """``CardNeeded("dragon")``, then ``CardNeeded("tiger")``, then ``None``."""
        dealt = len(self._cards)
        return _ORDER[dealt] if dealt < 2 else None

    def deal(self, card: Card) -> None:
        """Put ``card`` where :meth:`next_step` said; RulesError once the round is complete."""
        if len(self._cards) >= 2:
            raise RulesError("the Dragon Tiger round is complete: no more cards are dealt")
        if not isinstance(card, Card):
            raise RulesError(f"not a card: {card!r}")
        self._cards.append(card)

    def decide(self, box: int, hand: int, token: str) -> None:
        """Dragon Tiger asks for no decisions: always RulesError."""
        raise RulesError("Dragon Tiger takes no decisions: only cards are dealt")

    @property
    def complete(self) -> bool:
        return len(self._cards) == 2

    def _hand(self, index: int) -> list[str]:
        return [str(card) for card in self._cards[index : index + 1]]

    def _total(self, index: int) -> int | None:
        return rank_value(self._cards[index]) if len(self._cards) > index else None

    def public_view(self) -> dict[str, Any]:
        """JSON-ready state; every card is dealt face up, so nothing is hidden. A hand's
        total is its card's rank (1-13), ``None`` before its card."""
        step = self.next_step()
        view: dict[str, Any] = {
            "game": GAME,
            "round_number": self.round_number,
            DRAGON: self._hand(0),
            TIGER: self._hand(1),
            "dragon_total": self._total(0),
            "tiger_total": self._total(1),
            "next": None if step is None else step.position,
            "complete": step is None,
        }
        if step is None:
            view["winner"] = winner(*self._cards)
        return view

    def cards_held(self, position: str) -> int:
        """How many cards ``"dragon"`` or ``"tiger"`` holds now (0 or 1); RulesError for any
        other position."""
        if position == DRAGON:
            return min(len(self._cards), 1)
        if position == TIGER:
            return max(len(self._cards) - 1, 0)
        raise RulesError(f"Dragon Tiger has no hand {position!r}: only dragon and tiger")

    def settlement(self) -> dict[str, Any]:
        """The replay JSON shape: the game, both hands and their ranks, the winner, whether a
        tie is suited, cards used and the net per unit of every bet; RulesError before the
        round is complete."""
        step = self.next_step()
        if step is not None:
            raise RulesError(
                f"the Dragon Tiger round is not complete: the next card goes to the "
                f"{step.position}"
            )
        dragon, tiger = self._cards
        won = winner(dragon, tiger)
        return {
            "game": GAME,
            DRAGON: [str(dragon)],
            TIGER: [str(tiger)],
            "dragon_total": rank_value(dragon),
            "tiger_total": rank_value(tiger),
            "winner": won,
            "suited_tie": won == TIE and dragon.suit == tiger.suit,
            "cards_used": 2,
            "bets": dict(settle_bets(dragon, tiger)),
        }


def play_dragon_tiger(cards: Iterable[Card | str], round_number: int = 1) -> dict[str, Any]:
    """Play one round from ``cards`` in shoe order (cards beyond two are ignored); its
    settlement. RulesError for an unknown card or too few cards."""
    round_ = DragonTigerRound(round_number)
    iterator = iter(cards)
    while (step := round_.next_step()) is not None:
        try:
            card = next(iterator)
        except StopIteration:
            raise RulesError(
                f"too few cards: the round needs another for the {step.position}"
            ) from None
        round_.deal(card if isinstance(card, Card) else parse_card(card))
    return round_.settlement()


# The keys of a replay line, in the order the command's help gives them.
REPLAY_KEYS: Final = ("game", "cards")


def replay(request: Mapping[str, Any]) -> dict[str, Any]:
    """Play one `livetable rules replay` line: ``{"game", "cards"}`` in, the round's
    :meth:`DragonTigerRound.settlement` out; :class:`RulesError` if it cannot be played."""
    check_keys(request, REPLAY_KEYS, "a Dragon Tiger line")
    cards = request.get("cards")
    if not isinstance(cards, list):
        raise RulesError("'cards' must be a list of card strings like \"AS\"")
    return play_dragon_tiger(cards)


def play_dealt(cards: Sequence[Card], start: int, rounds: int) -> int:
    """Play ``rounds`` live rounds dealing from ``cards[start:]`` (wrapping), each settled;
    the next index (`livetable bench rules`)."""
    position = start
    limit = len(cards) - 2
    for _ in range(rounds):
        if position > limit:
            position = 0
        round_ = DragonTigerRound()
        while round_.next_step() is not None:
            round_.deal(cards[position])
            position += 1
        round_.settlement()
    return position
