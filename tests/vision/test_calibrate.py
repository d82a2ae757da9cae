"""The threshold rule of the generic model's calibration and an enrolled deck's."""

from __future__ import annotations

import math

from vision.recognise import threshold_above
from vision.training.calibrate import MINIMUM_THRESHOLD, choose_threshold


def test_a_wrong_reading_whose_corners_disagree_still_counts() -> None:
    # It abstains, but only because the other corner spoke: with that corner hidden, the
    # confident wrong corner would be answered.
    readings = [(0.999, True, "recognised"), (0.97, False, "corners disagree")]
    threshold, worst = choose_threshold(readings, math.log(20.0))
    assert worst == 0.97
    assert threshold > 0.99


def test_an_ambiguous_reading_does_not_count() -> None:
    readings = [(0.999, True, "recognised"), (0.97, False, "ambiguous")]
    assert choose_threshold(readings, math.log(20.0)) == (MINIMUM_THRESHOLD, 0.0)


def test_the_threshold_is_the_margin_in_odds_above_the_worst_wrong_reading() -> None:
    # Odds 1:1 times 200 is 200:1.
    assert math.isclose(threshold_above(0.5, math.log(200.0), 0.95), 200 / 201)
    # Odds 3:1 times 20 is 60:1, over the minimum.
    assert math.isclose(threshold_above(0.75, math.log(20.0), 0.9), 60 / 61)
    # No wrong reading, or a weak one: the minimum decides.
    assert threshold_above(0.0, math.log(200.0), 0.95) == 0.95
    assert threshold_above(0.001, math.log(200.0), 0.95) == 0.95
    # A wrong reading scoring 1.0 leaves a threshold within 1e-12 of 1, so that only a
    # score of exactly 1.0 passes it, yet a probability a deck file accepts.
    assert 1.0 - 1e-12 < threshold_above(1.0, math.log(200.0), 0.95) <= 1.0
