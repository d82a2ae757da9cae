"""How each game is shown: its hands, its words, its felt and its bets' names, in one place.

Every front end shows a game from its entry here, never by guessing the game from the shape
of its data: the demo's view and its event words, the console (served to its page as JSON by
the console's server), the dealer simulator, the camera simulator's felt and the benches.
The rules (``controller/games``) and each game's :class:`~controller.games.registry.GameSpec`
sit above; this module is on the ground floor because the API's clients (the console, ``ctl``)
may not import the rules, yet must show a game as the rules' own entry says
(``docs/architecture.md``, the layers). A test checks that every game of the registry has its
entry here and that the names here are the rules' own.

A game is one of two shapes:

* :data:`SIDES`: named hands face to face (baccarat's Player and Banker, Dragon Tiger's Dragon
  and Tiger). A round's public view and its result hold each hand as a list of cards under the
  hand's name and its total under ``<hand>_total``; the result names the ``winner`` (a hand,
  or ``tie``). A new game of this shape needs no front end's code: only its entry here.
* :data:`BOXES`: blackjack's dealer against boxes of hands (or, Boundless, one shared player
  hand); its views nest the hands (``docs/mqtt-api.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

SIDES: Final = "sides"
BOXES: Final = "boxes"
SHAPES: Final = (SIDES, BOXES)


@dataclass(frozen=True, slots=True)
class Felt:
    """A :data:`SIDES` game's felt for the camera simulator: the hands side by side, each
    with room for ``cards`` cards; card ``sideways_from`` and later are laid sideways
    (baccarat's third card); ``None``: every card upright."""

    cards: int
    sideways_from: int | None = None


@dataclass(frozen=True, slots=True)
class Presentation:
    """How one game is shown to people and laid on the felt."""

    game: str
    """The game's id, as in its :class:`~controller.games.registry.GameSpec`."""
    label: str
    """Its plain name."""
    shape: str
    """:data:`SIDES` or :data:`BOXES`."""
    hands: tuple[str, ...]
    """The hands shown, as the rules name the positions, in the order they are dealt and
    shown: a :data:`SIDES` game's sides; a :data:`BOXES` game's hands besides the boxes."""
    card_keys: tuple[str, ...]
    """Keys under which a round's view or result lists cards (nested ones included)."""
    bets: Mapping[str, str]
    """Every bet the game settles, its id -> its name for people, in the rules' order."""
    felt: Felt | None = None
    """A :data:`SIDES` game's felt; a :data:`BOXES` game's comes from its rules' limits."""
    shoe_targets: Mapping[str, str] = field(default_factory=dict)
    """A hand -> the shoe's own word for where its cards go (the Angel Eye target: ``player``
    or ``banker``); a hand not named goes as ``player``."""

    def total_key(self, hand: str) -> str:
        """Where a :data:`SIDES` view or result holds ``hand``'s total."""
        return f"{hand}_total"

    def bet_name(self, bet: str) -> str:
        """The bet's name for people; an id this game does not know, as it is."""
        return self.bets.get(bet, bet)

    def as_json(self) -> dict[str, Any]:
        """The JSON the console's page reads (``GET /api/games``)."""
        return {
            "game": self.game,
            "label": self.label,
            "shape": self.shape,
            "hands": list(self.hands),
            "card_keys": list(self.card_keys),
            "bets": dict(self.bets),
        }


def _names(*pairs: tuple[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(pairs))


_BLACKJACK_MAIN: Final = ("main", "Main bet")
_BLACKJACK_CARDS: Final = ("cards", "player_cards")

PRESENTATIONS: Final[Mapping[str, Presentation]] = MappingProxyType(
    {
        shown.game: shown
        for shown in (
            Presentation(
                game="baccarat",
                label="Baccarat",
                shape=SIDES,
                hands=("player", "banker"),
                card_keys=("player", "banker"),
                bets=_names(
                    ("player", "Player"),
                    ("banker", "Banker"),
                    ("tie", "Tie"),
                    ("player_pair", "Player Pair"),
                    ("banker_pair", "Banker Pair"),
                    ("either_pair", "Either Pair"),
                    ("perfect_pair", "Perfect Pair"),
                    ("player_natural", "Player Natural"),
                    ("banker_natural", "Banker Natural"),
                    ("player_bonus", "Player Bonus"),
                    ("banker_bonus", "Banker Bonus"),
                    ("lucky_six", "Lucky Six"),
                    ("lucky_six_2", "Lucky Six (2 cards)"),
                    ("lucky_six_3", "Lucky Six (3 cards)"),
                    ("lucky_seven", "Lucky Seven"),
                    ("lucky_seven_2", "Lucky Seven (2 cards)"),
                    ("lucky_seven_3", "Lucky Seven (3 cards)"),
                    ("super_lucky_seven", "Super Lucky Seven"),
                ),
                felt=Felt(cards=3, sideways_from=3),
                shoe_targets=MappingProxyType({"banker": "banker"}),
            ),
            Presentation(
                game="blackjack-boundless",
                label="Boundless Blackjack",
                shape=BOXES,
                hands=("dealer", "player"),
                card_keys=_BLACKJACK_CARDS,
                bets=_names(
                    _BLACKJACK_MAIN,
                    ("pair", "Pair"),
                    ("bust_bonus", "Bust Bonus"),
                    ("lucky_trio", "Lucky Trio"),
                    ("poker_trio", "Poker Trio"),
                ),
            ),
            Presentation(
                game="blackjack-classic",
                label="Classic Blackjack",
                shape=BOXES,
                hands=("dealer",),
                card_keys=_BLACKJACK_CARDS,
                bets=_names(_BLACKJACK_MAIN),
            ),
            Presentation(
                game="blackjack-21",
                label="Blackjack 21",
                shape=BOXES,
                hands=("dealer",),
                card_keys=_BLACKJACK_CARDS,
                bets=_names(_BLACKJACK_MAIN),
            ),
            Presentation(
                game="dragon-tiger",
                label="Dragon Tiger",
                shape=SIDES,
                hands=("dragon", "tiger"),
                card_keys=("dragon", "tiger"),
                bets=_names(
                    ("dragon", "Dragon"),
                    ("tiger", "Tiger"),
                    ("tie", "Tie"),
                    ("suited_tie", "Suited Tie"),
                ),
                felt=Felt(cards=1),
                # A baccarat shoe's targets: the Dragon's card as the Player's, the Tiger's
                # as the Banker's.
                shoe_targets=MappingProxyType({"tiger": "banker"}),
            ),
        )
    }
)
"""Every game's presentation, in the registry's order."""

CARD_KEYS: Final = frozenset(key for shown in PRESENTATIONS.values() for key in shown.card_keys)
"""Every key under which any game's view or result lists cards."""


def _shoe_targets() -> Mapping[str, str]:
    targets: dict[str, str] = {}
    for shown in PRESENTATIONS.values():
        for hand, target in shown.shoe_targets.items():
            # Hands are named alike across games only where they are dealt alike.
            if targets.setdefault(hand, target) != target:
                raise ValueError(f"two games send the hand {hand!r} to two shoe targets")
    return MappingProxyType(targets)


SHOE_TARGETS: Final = _shoe_targets()
"""A hand of any game -> its shoe target (see :attr:`Presentation.shoe_targets`)."""


def presentation(game: object) -> Presentation | None:
    """How ``game`` is shown, or ``None`` for a game this build does not know."""
    return PRESENTATIONS.get(game) if isinstance(game, str) else None


def shoe_target(position: str | None) -> str:
    """The shoe's target for a card dealt to ``position`` (a hand, or a card slot of one such
    as ``banker.card3``); ``player`` for any other card (a burn, a blackjack box)."""
    hand = (position or "").split(".", 1)[0]
    return SHOE_TARGETS.get(hand, "player")
