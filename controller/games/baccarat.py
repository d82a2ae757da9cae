"""Baccarat (punto banco, 8 decks) as a live round driven card by card, and its 18 bets.

docs/rules-baccarat.md restates the rules it implements. The live table asks ``next_step()``
for the position of the next card (``"player"`` or ``"banker"``; baccarat never needs a
decision), feeds each card with ``deal`` and reads ``settlement()`` once ``complete``.
`livetable rules replay`, `livetable rtp` and the benchmarks run this very class; the exact
RTP enumeration calls the same :func:`settle_bets` on every distinct outcome.

Settlement is a net result per unit staked: a 1:1 win is ``1.0``, a refund ``0.0``, a loss
``-1.0``, 0.95:1 is ``0.95`` and 7:2 is ``3.5``.

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from controller.games.base import CardNeeded, Step
from controller.games.replay_request import check_choice, check_keys
from controller.kernel.cards import Card, parse_card
from controller.kernel.errors import RulesError

GAME: Final = "baccarat"
TRADITIONAL: Final = "traditional"
NO_COMMISSION: Final = "no-commission"
MODES: Final = (TRADITIONAL, NO_COMMISSION)

PLAYER_CARD: Final = CardNeeded("player")
BANKER_CARD: Final = CardNeeded("banker")

# Bet id -> the last round of a shoe in which it may be placed (docs/rules-baccarat.md,
# Side-bet limits: the rule page's "maximum limitation per round"); None: every round.
BET_LIMITS: Final[Mapping[str, int | None]] = MappingProxyType(
    {
        "player": None,
        "banker": None,
        "tie": None,
        "player_pair": 60,
        "banker_pair": 60,
        "either_pair": 50,
        "perfect_pair": 50,
        "player_natural": 50,
        "banker_natural": 50,
        "player_bonus": 40,
        "banker_bonus": 40,
        "lucky_six": 50,
        "lucky_six_2": 50,
        "lucky_six_3": 50,
        "lucky_seven": 50,
        "lucky_seven_2": 50,
        "lucky_seven_3": 50,
        "super_lucky_seven": 50,
    }
)
BET_IDS: Final[tuple[str, ...]] = tuple(BET_LIMITS)

# Point value by rank: A = 1, 2-9 face value, T/J/Q/K = 0. Keyed by rank so the hot path
# does one dict lookup instead of Card.baccarat_value's index search.
_POINTS: Final[Mapping[str, int]] = MappingProxyType(
    {rank: (index + 1 if index < 9 else 0) for index, rank in enumerate("A23456789TJQK")}
)

# The Banker's third-card table (docs/rules-baccarat.md, Third-card rule): Banker two-card
# total -> the point values of the Player's third card on which the Banker draws (it stands
# on the others).
BANKER_DRAWS_ON: Final[Mapping[int, frozenset[int]]] = MappingProxyType(
    {
        0: frozenset(range(10)),
        1: frozenset(range(10)),
        2: frozenset(range(10)),
        3: frozenset({0, 1, 2, 3, 4, 5, 6, 7, 9}),
        4: frozenset({2, 3, 4, 5, 6, 7}),
        5: frozenset({4, 5, 6, 7}),
        6: frozenset({6, 7}),
        7: frozenset(),
    }
)


def _after_two_cards(player_total: int, banker_total: int) -> CardNeeded | None:
    if player_total >= 8 or banker_total >= 8:
        return None  # a natural: both hands stand
    if player_total <= 5:
        return PLAYER_CARD
    return BANKER_CARD if banker_total <= 5 else None  # the Player stood on 6 or 7


# Precomputed so the live path is two index operations per decision point.
_AFTER_TWO_CARDS: Final = tuple(tuple(_after_two_cards(p, b) for b in range(10)) for p in range(10))
_BANKER_DRAWS: Final = tuple(
    tuple(third in BANKER_DRAWS_ON.get(banker, frozenset()) for third in range(10))
    for banker in range(10)
)
_INITIAL_ORDER: Final = (PLAYER_CARD, BANKER_CARD, PLAYER_CARD, BANKER_CARD)


class Outcome(NamedTuple):
    """Everything any of the 18 bets depends on; hashable, so settlements are cached."""

    player_total: int
    banker_total: int
    player_cards: int
    banker_cards: int
    player_pair: bool
    banker_pair: bool
    perfect_pair: bool  # either hand's first two cards are the same face (rank and suit)

    @property
    def winner(self) -> str:
        if self.player_total > self.banker_total:
            return "player"
        if self.banker_total > self.player_total:
            return "banker"
        return "tie"

    @property
    def player_natural(self) -> bool:
        # Two cards totalling 8 or 9 always end the round, so the count identifies a natural.
        return self.player_cards == 2 and self.player_total >= 8

    @property
    def banker_natural(self) -> bool:
        return self.banker_cards == 2 and self.banker_total >= 8


def _bonus(own: int, other: int, own_natural: bool) -> float:
    """Player/Banker Bonus for the hand with total ``own`` against ``other``."""
    if own_natural:
        if own > other:
            return 1.0
        if own == other:
            return 0.0  # a natural tie refunds
        return -1.0
    margin = own - other
    return _BONUS_BY_MARGIN.get(margin, -1.0)


# Non-natural win by this margin pays this many units; smaller margins lose.
_BONUS_BY_MARGIN: Final[Mapping[int, float]] = MappingProxyType(
    {9: 30.0, 8: 10.0, 7: 6.0, 6: 4.0, 5: 2.0, 4: 1.0}
)


def _win(pays: float, won: bool) -> float:
    return pays if won else -1.0


@lru_cache(maxsize=8192)
def settle_bets(outcome: Outcome, mode: str) -> Mapping[str, float]:
    """Net result per unit staked of all 18 bets for ``outcome`` (read-only mapping)."""
    if mode not in MODES:
        raise RulesError(f"unknown baccarat mode {mode!r}: expected one of {', '.join(MODES)}")
    player, banker = outcome.player_total, outcome.banker_total
    player_cards, banker_cards = outcome.player_cards, outcome.banker_cards
    winner = outcome.winner
    player_wins, banker_wins, tie = winner == "player", winner == "banker", winner == "tie"

    if not banker_wins:
        banker_net = 0.0 if tie else -1.0
    elif mode == TRADITIONAL:
        banker_net = 0.95  # the 5 % commission
    else:
        banker_net = 0.5 if banker == 6 else 1.0  # no commission, but a winning 6 pays 1:2

    banker_six = banker_wins and banker == 6
    player_seven = player_wins and player == 7
    total_cards = player_cards + banker_cards
    any_pair = outcome.player_pair or outcome.banker_pair
    bets = {
        "player": 1.0 if player_wins else (0.0 if tie else -1.0),
        "banker": banker_net,
        "tie": _win(8.0, tie),
        "player_pair": _win(11.0, outcome.player_pair),
        "banker_pair": _win(11.0, outcome.banker_pair),
        "either_pair": _win(5.0, any_pair),
        "perfect_pair": _win(25.0, outcome.perfect_pair),
        "player_natural": _win(3.5, outcome.player_natural),
        "banker_natural": _win(3.5, outcome.banker_natural),
        "player_bonus": _bonus(player, banker, outcome.player_natural),
        "banker_bonus": _bonus(banker, player, outcome.banker_natural),
        "lucky_six": (12.0 if banker_cards == 2 else 20.0) if banker_six else -1.0,
        "lucky_six_2": _win(22.0, banker_six and banker_cards == 2),
        "lucky_six_3": _win(50.0, banker_six and banker_cards == 3),
        "lucky_seven": (6.0 if player_cards == 2 else 15.0) if player_seven else -1.0,
        "lucky_seven_2": _win(15.0, player_seven and player_cards == 2),
        "lucky_seven_3": _win(30.0, player_seven and player_cards == 3),
        "super_lucky_seven": (
            _SUPER_LUCKY_SEVEN_BY_CARDS[total_cards] if player_seven and banker == 6 else -1.0
        ),
    }
    return MappingProxyType(bets)


# Super Lucky Seven: Player wins with 7 against a Banker 6, by cards in both hands together.
_SUPER_LUCKY_SEVEN_BY_CARDS: Final[Mapping[int, float]] = MappingProxyType(
    {4: 30.0, 5: 40.0, 6: 100.0}
)


def available_bets(round_number: int) -> tuple[str, ...]:
    """The bets that may be placed in round ``round_number`` (1-based) of a shoe."""
    if round_number < 1:
        raise RulesError(f"round numbers start at 1, not {round_number}")
    return tuple(bet for bet, limit in BET_LIMITS.items() if limit is None or round_number <= limit)


def bet_available(bet: str, round_number: int) -> bool:
    """Whether ``bet`` may be placed in round ``round_number``; RulesError for an unknown id."""
    if bet not in BET_LIMITS:
        raise RulesError(f"unknown baccarat bet {bet!r}")
    return bet in available_bets(round_number)


class BaccaratResult(NamedTuple):
    """A finished round: the hands, the winner and the net per unit of every placeable bet.

    A named tuple rather than a frozen dataclass: it is built once per round on the hot path
    of simulations and benchmarks, and a tuple is several times cheaper to build.
    """

    mode: str
    round_number: int
    player: tuple[Card, ...]
    banker: tuple[Card, ...]
    outcome: Outcome
    bets: Mapping[str, float]

    @property
    def winner(self) -> str:
        return self.outcome.winner

    @property
    def cards_used(self) -> int:
        return len(self.player) + len(self.banker)

    def as_dict(self) -> dict[str, Any]:
        """The JSON shape of `livetable rules replay`."""
        return {
            "player": [str(card) for card in self.player],
            "banker": [str(card) for card in self.banker],
            "player_total": self.outcome.player_total,
            "banker_total": self.outcome.banker_total,
            "winner": self.outcome.winner,
            "cards_used": self.cards_used,
            "bets": dict(self.bets),
        }


class BaccaratRound:
    """One baccarat round, driven card by card (implements ``base.LiveRound``).

    ``round_number`` is the round's 1-based number in the shoe: it decides which side bets
    were available (:data:`BET_LIMITS`), and :meth:`settlement` lists only those.
    """

    __slots__ = (
        "_banker",
        "_banker_points",
        "_dealt",
        "_expected",
        "_player",
        "_player_points",
        "mode",
        "round_number",
    )

    game: str = GAME

    def __init__(self, mode: str = TRADITIONAL, round_number: int = 1) -> None:
        if mode not in MODES:
            raise RulesError(f"unknown baccarat mode {mode!r}: expected one of {', '.join(MODES)}")
        if not isinstance(round_number, int) or round_number < 1:
            raise RulesError(f"round numbers start at 1, not {round_number!r}")
        self.mode = mode
        self.round_number = round_number
        self._player: list[Card] = []
        self._banker: list[Card] = []
        self._player_points = 0  # running sum of point values, reduced modulo 10 when read
        self._banker_points = 0
        self._dealt = 0
        self._expected: CardNeeded | None = PLAYER_CARD

    def next_step(self) -> Step:
        """``CardNeeded("player")``, ``CardNeeded("banker")`` or ``None`` once complete."""
        return self._expected

    def deal(self, card: Card) -> None:
        """Put ``card`` where :meth:`next_step` said; RulesError once the round is complete."""
        expected = self._expected
        if expected is None:
            raise RulesError("the baccarat round is complete: no more cards are dealt")
        try:
            value = _POINTS[card.rank]
        except (AttributeError, KeyError, TypeError):
            raise RulesError(f"not a card: {card!r}") from None
        if expected is PLAYER_CARD:
            self._player.append(card)
            self._player_points += value
        else:
            self._banker.append(card)
            self._banker_points += value
        dealt = self._dealt = self._dealt + 1
        if dealt < 4:
            self._expected = _INITIAL_ORDER[dealt]
        elif dealt == 4:
            self._expected = _AFTER_TWO_CARDS[self._player_points % 10][self._banker_points % 10]
        elif expected is PLAYER_CARD:
            # The Banker acts on its two-card total and the Player's third card's value.
            banker_total = self._banker_points % 10
            self._expected = BANKER_CARD if _BANKER_DRAWS[banker_total][value] else None
        else:
            self._expected = None

    def decide(self, box: int, hand: int, token: str) -> None:
        """Baccarat asks for no decisions: always RulesError."""
        raise RulesError("baccarat takes no decisions: only cards are dealt")

    @property
    def complete(self) -> bool:
        return self._expected is None

    @property
    def player_total(self) -> int:
        return self._player_points % 10

    @property
    def banker_total(self) -> int:
        return self._banker_points % 10

    @property
    def cards_used(self) -> int:
        return self._dealt

    def _settled(self) -> tuple[Outcome, Mapping[str, float]]:
        if self._expected is not None:
            raise RulesError(
                f"the baccarat round is not complete: the next card goes to the "
                f"{self._expected.position}"
            )
        player, banker = self._player, self._banker
        player_pair = player[0].rank == player[1].rank
        banker_pair = banker[0].rank == banker[1].rank
        key = (
            self.mode,
            self._player_points % 10,
            self._banker_points % 10,
            len(player),
            len(banker),
            player_pair,
            banker_pair,
            (player_pair and player[0].suit == player[1].suit)
            or (banker_pair and banker[0].suit == banker[1].suit),
        )
        settled = _SETTLED.get(key)
        if settled is None:
            outcome = Outcome(*key[1:])
            settled = _SETTLED[key] = (outcome, settle_bets(outcome, self.mode))
        return settled

    def outcome(self) -> Outcome:
        """What the bets depend on; RulesError before the round is complete."""
        return self._settled()[0]

    def result(self) -> BaccaratResult:
        """The finished round with the net of every bet available in this round."""
        outcome, all_bets = self._settled()
        if self.round_number <= _SMALLEST_LIMIT:
            bets: Mapping[str, float] = all_bets
        else:
            available = available_bets(self.round_number)
            bets = MappingProxyType({bet: all_bets[bet] for bet in available})
        return BaccaratResult(
            self.mode, self.round_number, tuple(self._player), tuple(self._banker), outcome, bets
        )

    def public_view(self) -> dict[str, Any]:
        """JSON-ready state; baccarat deals every card face up, so nothing is hidden."""
        expected = self._expected
        view: dict[str, Any] = {
            "game": GAME,
            "mode": self.mode,
            "round_number": self.round_number,
            "player": [str(card) for card in self._player],
            "banker": [str(card) for card in self._banker],
            "player_total": self.player_total,
            "banker_total": self.banker_total,
            "next": None if expected is None else expected.position,
            "complete": expected is None,
        }
        if expected is None:
            view["winner"] = self.outcome().winner
        return view

    def cards_held(self, position: str) -> int:
        """How many cards ``"player"`` or ``"banker"`` holds now; RulesError for any other
        position."""
        if position == "player":
            return len(self._player)
        if position == "banker":
            return len(self._banker)
        raise RulesError(f"baccarat has no hand {position!r}: only player and banker")

    def settlement(self) -> dict[str, Any]:
        """The replay JSON shape: hands, totals, winner, cards used and net per unit of
        every bet available in this round; RulesError before the round is complete."""
        return self.result().as_dict()


# (mode, outcome fields) -> (outcome, settlement): at most 2 x 3,200 entries, and a plain
# tuple key is much cheaper to build on the hot path than an Outcome.
_SETTLED: Final[dict[tuple[Any, ...], tuple[Outcome, Mapping[str, float]]]] = {}

_SMALLEST_LIMIT: Final = min(limit for limit in BET_LIMITS.values() if limit is not None)


def play_baccarat(
    cards: Iterable[Card | str], mode: str = TRADITIONAL, round_number: int = 1
) -> BaccaratResult:
    """Play one round from ``cards`` in shoe order; cards beyond need are ignored.

    RulesError for an unknown mode, an unknown card or too few cards.
    """
    round_ = BaccaratRound(mode, round_number)
    iterator = iter(cards)
    while (step := round_._expected) is not None:
        try:
            card = next(iterator)
        except StopIteration:
            raise RulesError(
                f"too few cards: {round_.cards_used} dealt and the round needs another "
                f"for the {step.position}"
            ) from None
        round_.deal(card if isinstance(card, Card) else parse_card(card))
    return round_.result()


# The keys of a replay line, in the order the command's help gives them.
REPLAY_KEYS: Final = ("game", "mode", "cards")


def replay(request: Mapping[str, Any]) -> dict[str, Any]:
    """Play one `livetable rules replay` line: ``{"game", "mode", "cards"}`` in, the
    round's :meth:`BaccaratResult.as_dict` out; :class:`RulesError` if it cannot be played."""
    check_keys(request, REPLAY_KEYS, "a baccarat line")
    mode = request.get("mode", TRADITIONAL)
    check_choice(mode, MODES, "baccarat mode")
    cards = request.get("cards")
    if not isinstance(cards, list):
        raise RulesError("'cards' must be a list of card strings like \"AS\"")
    return play_baccarat(cards, mode).as_dict()
