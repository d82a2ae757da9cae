"""The table's texts read back into their codes (``controller.kernel.vocabulary``): every
template, filled in, is read back as its own code and values, never as another's."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import pytest

from controller.kernel.vocabulary import (
    ANSWERS,
    NEEDS,
    SHOE_ENDS,
    answer_code,
    need_code,
    shoe_end_code,
)

# Values as the table fills them in, the awkward ones included: a supervisor's reason with
# the template's own punctuation in it, two holds, a split hand.
SAMPLES: Mapping[str, str] = {
    "by": "bob: spilled drink (resume to lift it); alice: a break",
    "count": "3",
    "taken": "1",
    "revision": "6",
    "shoe": "12",
    "round": "407",
    "phase": "SHOE_READY",
    "command": "end_shoe",
    "resolution": "no_cards_drawn",
    "hold": "dealer_change",
    "holds": "dealer_change, closing",
    "staff_id": "D-1043",
    "position": "box2.hand1",
}


@pytest.mark.parametrize(
    ("templates", "read_back"),
    [(ANSWERS, answer_code), (SHOE_ENDS, shoe_end_code), (NEEDS, need_code)],
    ids=["answers", "shoe_ends", "needs"],
)
def test_every_template_filled_in_reads_back_as_its_own_code(
    templates: Mapping[str, str], read_back: Callable[[str], tuple[str, dict[str, str]] | None]
) -> None:
    for code, words in templates.items():
        names = re.findall(r"\{(\w+)\}", words)
        values = {name: SAMPLES[name] for name in names}
        assert read_back(words.format(**values)) == (code, values), code


def test_words_no_code_says_read_back_as_none() -> None:
    assert answer_code("cannot accept it: a ninth copy") is None
    assert answer_code("round x opened") is None  # a round is a number
    assert shoe_end_code("the shoe caught fire") is None
