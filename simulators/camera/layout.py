"""The simulated tables seen from straight above: every position's spot, for each game.

:func:`layout_for` gives the layout of a game; every position is a card slot named
``<hand>.card<n>`` (:func:`drivers.camera.card_slot` maps the rules' position and card number
to it). The renderer draws the felt and lays the cards by it, and the simulated camera's region
map comes from it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from controller.games.registry import GAME_IDS, find_game
from controller.kernel.errors import ConfigurationError
from controller.kernel.presentation import SIDES, Felt

GAMES: Final = GAME_IDS
"""The games the simulator lays out: every game of the registry."""

# A poker-size card is 63 x 88 mm.
CARD_ASPECT: Final = 63.0 / 88.0


@dataclass(frozen=True, slots=True)
class Spot:
    """Where one position's card lies on the table, in pixels of the table's top view.

    ``angle`` is the card's nominal rotation in degrees (90: dealt sideways, as baccarat's
    third cards are).
    """

    position: str
    x: float
    y: float
    angle: float = 0.0


@dataclass(frozen=True, slots=True)
class TableLayout:
    """The table seen from straight above: its size, the card size, every position's spot.

    ``deal_order`` is the order a round normally fills the spots (the order the simulator's
    command line deals a list of cards in); ``labels`` are the words printed on the felt.
    """

    game: str
    width: int
    height: int
    card_height: int
    spots: Mapping[str, Spot]
    deal_order: tuple[str, ...]
    labels: tuple[tuple[str, float, float], ...] = ()

    @property
    def card_width(self) -> int:
        return round(self.card_height * CARD_ASPECT)


def _hand_cascade(prefix: str, x: float, y: float, cards: int, dx: float, dy: float) -> list[Spot]:
    return [
        Spot(f"{prefix}.card{c}", x + (c - 1) * dx, y + (c - 1) * dy) for c in range(1, cards + 1)
    ]


def layout_for(game: str, width: int = 1280, height: int = 720) -> TableLayout:
    """The simulator's layout of ``game`` (see ``docs/camera.md`` for the position names).

    Every position is a card slot named ``<hand>.card<n>``, the hand as the rules name it
    (:func:`drivers.camera.card_slot` maps the rules' position and card number to it):

    * a game of hands face to face (its presentation's ``SIDES`` shape, e.g. ``baccarat``):
      ``<hand>.card1``.. for each of its hands, as many cards as its felt holds (baccarat:
      ``player.card1``..``player.card3``, ``banker.card1``..``banker.card3``, third cards
      sideways).
    * ``blackjack-classic``: 5 boxes, ``box{b}.hand{h}.card{c}`` (2 hands, 6 cards each).
    * ``blackjack-21``: 7 boxes, ``box{b}.hand{h}.card{c}`` (3 hands, 6 cards each).
    * ``blackjack-boundless``: one shared hand, ``player.card1``..``player.card12``.
    * every blackjack game: ``dealer.card1``..``dealer.card7``.

    A blackjack game's boxes are its registry entry's ``max_boxes``, and the hands a box may
    split into its rules' ``max_hands``.
    """
    if not (160 <= width <= 8192 and 120 <= height <= 8192):
        raise ConfigurationError(f"simulated frame {width}x{height} is outside 160x120..8192x8192")
    spec = find_game(game)
    if spec is None:
        raise ConfigurationError(f"no camera layout for game {game!r}; known: {', '.join(GAMES)}")
    spots: list[Spot] = []
    labels: list[tuple[str, float, float]] = []
    shown = spec.presentation
    if shown.shape == SIDES and shown.felt is not None:
        return _sides(game, width, height, shown.hands, shown.felt)
    from controller.games.blackjack_hand import rules_for

    rules = rules_for(game)
    boxes = spec.max_boxes
    # A shared hand (Boundless) is one long row; a box's hand has room for 6 cards.
    hands, cards = (1, 12) if rules.shared_hand else (rules.max_hands, 6)
    card_height = round(height * (0.17 if boxes <= 5 else 0.15))
    card_width = card_height * CARD_ASPECT
    # A blackjack hand is a cascade: each card a little right of and above the one before,
    # so every index corner stays in sight.
    dx, dy = card_width * 0.32, -card_height * 0.16
    dealer_y = height * 0.22
    dealer_x = width / 2 - 3 * card_width * 0.55
    spots += [
        Spot(f"dealer.card{c}", dealer_x + (c - 1) * card_width * 0.55, dealer_y)
        for c in range(1, 8)
    ]
    labels.append(("DEALER", width / 2, dealer_y - card_height * 0.7))
    if rules.shared_hand:
        row_y = height * 0.72
        start_x = width / 2 - 5.5 * card_width * 0.55
        spots += [
            Spot(f"player.card{c}", start_x + (c - 1) * card_width * 0.55, row_y)
            for c in range(1, cards + 1)
        ]
        labels.append(("PLAYER", width / 2, row_y + card_height * 0.75))
        order = ("player.card1", "dealer.card1", "player.card2", "dealer.card2")
    else:
        for b in range(1, boxes + 1):
            # Boxes sit on an arc around the dealer, box 1 on the dealer's left (our right).
            fraction = (b - 0.5) / boxes
            box_x = width * (0.93 - 0.86 * fraction)
            box_y = height * (0.62 + 0.16 * math.sin(math.pi * fraction))
            labels.append((str(b), box_x, box_y + card_height * 0.8))
            for h in range(1, hands + 1):
                hand_x = box_x + (h - (hands + 1) / 2) * card_width * 0.8
                spots += _hand_cascade(f"box{b}.hand{h}", hand_x, box_y, cards, dx, dy)
        # Each box's first card, the dealer's first, each box's second, the dealer's second
        # (which of the dealer's two is the face-down hole card depends on the game).
        first = [f"box{b}.hand1.card1" for b in range(1, boxes + 1)]
        second = [f"box{b}.hand1.card2" for b in range(1, boxes + 1)]
        order = (*first, "dealer.card1", *second, "dealer.card2")
    return TableLayout(game, width, height, card_height, _spot_map(spots), order, tuple(labels))


def _sides(game: str, width: int, height: int, hands: Sequence[str], felt: Felt) -> TableLayout:
    """A game of hands face to face: each hand's cards in a row, the sideways ones below it;
    the hands spread evenly across the felt, dealt one card to each in turn."""
    card_height = round(height * 0.2)
    card_width = card_height * CARD_ASPECT
    # Neighbouring cards are laid a little closer than a card's width: they touch or
    # overlap, as they do when a dealer works quickly.
    pitch = card_width * 0.92
    row = height * 0.48
    upright = felt.cards if felt.sideways_from is None else felt.sideways_from - 1
    spots: list[Spot] = []
    labels: list[tuple[str, float, float]] = []
    for index, hand in enumerate(hands):
        # Two hands sit at 30 % and 70 % of the width, as a baccarat felt has them.
        centre = width * (0.5 + (index - (len(hands) - 1) / 2) * 0.4)
        for c in range(1, upright + 1):
            spots.append(Spot(f"{hand}.card{c}", centre + (c - (upright + 1) / 2) * pitch, row))
        for c in range(upright + 1, felt.cards + 1):
            below = row + card_height * (0.95 + 0.7 * (c - upright - 1))
            spots.append(Spot(f"{hand}.card{c}", centre, below, 90.0))
        labels.append((hand.upper(), centre, row - card_height * 0.8))
    order = tuple(f"{hand}.card{c}" for c in range(1, felt.cards + 1) for hand in hands)
    return TableLayout(game, width, height, card_height, _spot_map(spots), order, tuple(labels))


def _spot_map(spots: Sequence[Spot]) -> Mapping[str, Spot]:
    return MappingProxyType({spot.position: spot for spot in spots})
