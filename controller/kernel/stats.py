"""The one percentile every benchmark reports with, so their figures compare.

It imports nothing beyond the standard library, so every layer (controller, drivers, vision,
simulators) may use it without pulling in anything heavy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def percentile(values: Iterable[float], percent: float) -> float:
    """The ``percent``-th percentile (0 to 100) of ``values``, by linear interpolation.

    The method is numpy's default (``np.percentile(values, percent)``, "linear") and the
    standard library's ``statistics.quantiles(method="inclusive")``: sorted, the values sit at
    ranks 0 to n-1; the percentile is at rank ``(n - 1) * percent / 100``, interpolated
    between its two neighbours. So the 0th is the minimum, the 100th the maximum, and every
    percentile lies within the measured range however few the samples, which a benchmark of
    a few batches needs. The values need not be sorted.

    ValueError for no values, or a ``percent`` outside 0 to 100.
    """
    ordered = sorted(values)
    if not ordered:
        raise ValueError("the percentile of no values is undefined")
    if not 0.0 <= percent <= 100.0:
        raise ValueError(f"a percentile is between 0 and 100, not {percent}")
    rank = (len(ordered) - 1) * percent / 100.0
    below = math.floor(rank)
    above = min(below + 1, len(ordered) - 1)
    weight = rank - below
    return ordered[below] + (ordered[above] - ordered[below]) * weight
