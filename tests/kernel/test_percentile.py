"""The benchmarks' one percentile: numpy's default method, within the measured range."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.kernel.stats import percentile

SAMPLES = st.lists(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=60
)


@given(SAMPLES, st.floats(min_value=0.0, max_value=100.0))
def test_it_is_numpys_default_linear_interpolation(values: list[float], percent: float) -> None:
    assert math.isclose(
        percentile(values, percent), float(np.percentile(values, percent)), abs_tol=1e-6
    )


@given(SAMPLES.filter(lambda values: len(values) > 1))
def test_deciles_are_the_standard_librarys_inclusive_quantiles(values: list[float]) -> None:
    deciles = statistics.quantiles(values, n=10, method="inclusive")
    for tenth, expected in enumerate(deciles, start=1):
        assert math.isclose(percentile(values, 10 * tenth), expected, abs_tol=1e-6)


@given(SAMPLES, st.floats(min_value=0.0, max_value=100.0))
def test_every_percentile_lies_within_the_samples(values: list[float], percent: float) -> None:
    assert min(values) <= percentile(values, percent) <= max(values)


def test_small_samples_by_hand() -> None:
    assert percentile([3.0], 99) == 3.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.5  # unsorted input is fine
    assert percentile([1.0, 2.0, 3.0, 4.0], 0) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 100) == 4.0
    assert percentile(range(101), 90) == 90.0


@pytest.mark.parametrize(("values", "percent"), [([], 50), ([1.0], -1), ([1.0], 101)])
def test_no_values_or_a_percent_out_of_range_is_refused(
    values: list[float], percent: float
) -> None:
    with pytest.raises(ValueError):
        percentile(values, percent)
