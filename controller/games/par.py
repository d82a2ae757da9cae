"""PAR-sheet figures of one bet: its pay lines, and from them RTP, hit frequency and deviation.

A *pay line* is one way a bet can end (a pattern, or a net result such as "win 1:1") with its
net per unit staked and its probability. A bet's lines cover every outcome once, so their
probabilities sum to 1 (:meth:`BetPar.check` says so when they do not). From them:

* **RTP** = 1 + Σ probability · net (the expected amount returned per unit staked);
* **hit frequency** = the probability that the bet wins something (net > 0); a push is not
  a hit;
* **standard deviation** per unit staked = √(E[net²] − E[net]²).

Probabilities are :class:`~fractions.Fraction` where the enumeration is exact in whole numbers
(then RTP and hit frequency are exact fractions too); the blackjack main game's recursion
works in floating point (see :mod:`controller.games.blackjack_exact`).

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from controller.kernel.errors import RulesError

Number = Fraction | float


@dataclass(frozen=True, slots=True)
class PayLine:
    """One way a bet ends: ``label`` (a pattern or result), its ``net`` per unit, its
    ``probability``."""

    label: str
    net: Number
    probability: Number

    @property
    def contribution(self) -> Number:
        """This line's share of the expected net: probability · net."""
        return self.probability * self.net


@dataclass(frozen=True, slots=True)
class BetPar:
    """Every pay line of one bet, and how they were computed (``method``, in words)."""

    bet: str
    lines: tuple[PayLine, ...]
    method: str

    @property
    def expected_net(self) -> Number:
        return sum((line.contribution for line in self.lines), Fraction(0))

    @property
    def rtp(self) -> Number:
        return 1 + self.expected_net

    @property
    def hit_frequency(self) -> Number:
        return sum((line.probability for line in self.lines if line.net > 0), Fraction(0))

    @property
    def total_probability(self) -> Number:
        return sum((line.probability for line in self.lines), Fraction(0))

    @property
    def variance(self) -> Number:
        mean = self.expected_net
        return sum((line.probability * line.net**2 for line in self.lines), Fraction(0)) - mean**2

    @property
    def standard_deviation(self) -> float:
        return math.sqrt(max(0.0, float(self.variance)))

    def check(self, tolerance: float = 1e-12) -> BetPar:
        """Self, once its lines are seen to cover every outcome (probabilities sum to 1)."""
        total = self.total_probability
        exact = isinstance(total, Fraction)
        if (exact and total != 1) or abs(float(total) - 1.0) > tolerance:
            raise RulesError(f"{self.bet}: pay lines cover {float(total)!r} of the outcomes")
        return self

    def as_json(self) -> dict[str, Any]:
        """JSON-ready figures: floats, and the exact fractions as strings where there are."""
        document: dict[str, Any] = {
            "rtp": float(self.rtp),
            "hit_frequency": float(self.hit_frequency),
            "standard_deviation": self.standard_deviation,
            "method": self.method,
            "lines": [
                {
                    "label": line.label,
                    "net": float(line.net),
                    "probability": float(line.probability),
                    "contribution": float(line.contribution),
                }
                for line in self.lines
            ],
        }
        if isinstance(self.rtp, Fraction):
            document["rtp_fraction"] = str(self.rtp)
        return document


def lines_by_net(
    bet: str,
    weights: Mapping[Number, Number],
    method: str,
    labels: Mapping[Number, str] | None = None,
) -> BetPar:
    """A bet whose outcomes are known only by net result: one line per net, highest first.

    ``weights`` maps net -> probability (or a whole-number weight; they are normalised).
    """
    total = sum(weights.values(), Fraction(0))
    if not total:
        raise RulesError(f"{bet}: no outcomes")
    lines = tuple(
        PayLine(
            (labels or {}).get(net) or net_words(net),
            net,
            weights[net] / total if isinstance(total, Fraction) else weights[net] / float(total),
        )
        for net in sorted(weights, reverse=True)
        if weights[net]
    )
    return BetPar(bet, lines, method)


def net_words(net: Number) -> str:
    """A net result in words: "wins 1.5", "push", "loses 1"."""
    if net == 0:
        return "push"
    amount = abs(net)
    text = f"{float(amount):g}" if isinstance(amount, float) else _fraction_words(amount)
    return f"wins {text}" if net > 0 else f"loses {text}"


def _fraction_words(amount: Fraction) -> str:
    if amount.denominator == 1:
        return str(amount.numerator)
    return f"{float(amount):g}"


def merge(pars: Iterable[BetPar]) -> dict[str, BetPar]:
    """bet -> its figures, in the order given."""
    return {par.bet: par for par in pars}
