"""The generic model's threshold rule (vision.training.calibrate)."""

from __future__ import annotations

import math

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
