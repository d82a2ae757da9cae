"""Boundless blackjack: many players on one common card sequence.

docs/rules-blackjack.md, "Boundless: one common sequence", restates the rules. The live
:class:`~controller.games.blackjack.BlackjackRound` deals the shared initial player hand, the
dealer's cards and, while the platform answers ``more_cards`` with yes, one common player card
at a time. Each seated player's hands take cards from that sequence in order, as far as that
player's own decisions go (after a split: hand 1 to its end, then hand 2).
:class:`PlayerResolver` plays one player's decisions over the sequence with the very same
:class:`~controller.games.blackjack_hand.BoxPlay` as the boxed games, and says whether that
player wants one more common card; :func:`players_need_card` answers the platform's question
for a whole table; :func:`resolve_player` settles one player once the round is complete.
The side bets are in :mod:`controller.games.boundless_side_bets`.

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from controller.games.blackjack_hand import (
    BLACKJACK,
    BOUNDLESS,
    BlackjackRules,
    BoxPlay,
    Hand,
    PlayerDecider,
    TokenDecisions,
    dealer_must_draw,
    hand_net,
    hand_total,
    insurance_net,
    is_blackjack,
    rules_for,
)
from controller.kernel.cards import Card
from controller.kernel.errors import RulesError


@dataclass(frozen=True, slots=True)
class PlayerResult:
    """One Boundless player's outcome: hands, net per hand, insurance and total net."""

    hands: tuple[tuple[Card, ...], ...]
    hand_nets: tuple[float, ...]
    outcomes: tuple[str, ...]
    insurance_net: float
    net: float
    cards_used: int

    def as_json(self) -> dict[str, Any]:
        return {
            "net": self.net,
            "insurance_net": self.insurance_net,
            "hands": [
                {"cards": [str(card) for card in cards], "net": net, "result": outcome}
                for cards, net, outcome in zip(
                    self.hands, self.hand_nets, self.outcomes, strict=True
                )
            ],
            "cards_used": self.cards_used,
        }


class PlayerResolver:
    """One seated player's hands over the growing common sequence.

    Built from the shared initial two cards and the dealer's up card; :meth:`advance` plays
    as far as the common sequence and the player's decisions go and returns whether the
    player wants one more common card. Never advance it when the dealer has BJ: the round
    ended at once and nobody plays.
    """

    __slots__ = ("decide", "insurance", "next_index", "play", "rules", "up")

    def __init__(
        self,
        initial: Sequence[Card],
        up: Card,
        decisions: PlayerDecider | Iterable[str] = (),
        insurance: bool = False,
        rules: BlackjackRules | str = BOUNDLESS,
    ) -> None:
        self.rules = rules_for(rules)
        if len(initial) < 2:
            raise RulesError("a Boundless player needs the two shared initial cards")
        hand = Hand(initial[:2])
        if hand.is_blackjack:
            hand.state = BLACKJACK
        self.up = up
        self.play = BoxPlay(self.rules, hand, up)
        self.next_index = 2
        self.decide: PlayerDecider = (
            decisions if callable(decisions) else TokenDecisions(decisions)  # type: ignore[arg-type]
        )
        self.insurance = insurance

    @property
    def finished(self) -> bool:
        return self.play.current >= len(self.play.hands)

    def advance(self, common: Sequence[Card]) -> bool:
        """Play on over ``common``; True if this player wants one more common card."""
        play = self.play
        hands = play.hands
        while play.current < len(hands):
            if play.needs_card:
                if self.next_index >= len(common):
                    return True
                play.add_card(common[self.next_index])
                self.next_index += 1
            else:
                options = play.options()
                default = play.default()
                token = self.decide(hands[play.current], self.up, options, default)
                if token not in options:
                    raise RulesError(f"decision {token!r} is not legal now (legal: {options})")
                play.decide(token)
        return False

    def net(self, dealer: Sequence[Card]) -> float:
        """This player's total net (hands and insurance) against the dealer's complete hand;
        the cheap path of :meth:`result` for simulations."""
        dealer_blackjack = is_blackjack(dealer)
        dealer_total = hand_total(dealer)[0]
        net = insurance_net(self.insurance and dealer[0].rank == "A", dealer_blackjack)
        for hand in self.play.hands:
            net += hand_net(hand, dealer_total, dealer_blackjack)[0]
        return net

    def result(self, dealer: Sequence[Card]) -> PlayerResult:
        """Settle against the dealer's complete hand."""
        dealer_blackjack = is_blackjack(dealer)
        dealer_total = hand_total(dealer)[0]
        up_is_ace = dealer[0].rank == "A"
        insurance = insurance_net(self.insurance and up_is_ace, dealer_blackjack)
        nets = []
        outcomes = []
        for hand in self.play.hands:
            net, outcome = hand_net(hand, dealer_total, dealer_blackjack)
            nets.append(net)
            outcomes.append(outcome)
        return PlayerResult(
            hands=tuple(tuple(hand.cards) for hand in self.play.hands),
            hand_nets=tuple(nets),
            outcomes=tuple(outcomes),
            insurance_net=insurance,
            net=sum(nets) + insurance,
            cards_used=self.next_index,
        )


def players_need_card(resolvers: Iterable[PlayerResolver], common: Sequence[Card]) -> bool:
    """The platform's answer to ``more_cards``: does any player want one more common card?

    Every resolver is advanced (not only up to the first that wants a card) so an illegal
    decision surfaces at the card where it was taken.
    """
    wants = [resolver.advance(common) for resolver in resolvers]
    return any(wants)


def resolve_player(
    common: Sequence[Card],
    dealer: Sequence[Card],
    decisions: PlayerDecider | Iterable[str] = (),
    insurance: bool = False,
    rules: BlackjackRules | str = BOUNDLESS,
) -> PlayerResult:
    """One player's hands and results from the complete round.

    ``common`` is the whole common player sequence (the two shared initial cards first),
    ``dealer`` the dealer's complete hand in the order dealt (up card first), ``decisions``
    the player's tokens in the order asked (then the timeout auto-play) or a decider.
    Players with different decisions on the same sequence each resolve on their own.
    Raises :class:`RulesError` when the sequence ended while this player still wanted a card
    or the dealer's hand is not complete.
    """
    if len(common) < 2:
        raise RulesError("the common sequence needs at least the two shared initial cards")
    if len(dealer) < 2:
        raise RulesError("the dealer's hand needs at least the up card and the hole card")
    resolver = PlayerResolver(common, dealer[0], decisions, insurance, rules)
    dealer_blackjack = is_blackjack(dealer)
    if not dealer_blackjack:
        if dealer_must_draw(dealer):
            raise RulesError(
                f"the dealer's hand {' '.join(map(str, dealer))} is not complete (below 17)"
            )
        if resolver.advance(common):
            raise RulesError(
                "the common sequence ended while this player still wanted a card: "
                f"{len(common)} cards is too few"
            )
    return resolver.result(dealer)
