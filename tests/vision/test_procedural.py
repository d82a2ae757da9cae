"""The procedural training decks (vision/training/procedural.py) are what the shipped network
learned most of its index glyphs from: if their indices fell outside the patch the classifier
sees, or a red suit came out black, the network would learn wrong labels without a word.

Training-time code: needs Pillow (in the test extra) and a font. The decks are drawn with
DejaVu only (fonts-dejavu-core, which scripts/test installs), so every machine tests the
same decks, whatever other fonts it has.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from controller.kernel.cards import ALL_FACES, parse_card
from vision.locate import PATCH_U, PATCH_V
from vision.training import procedural
from vision.training.procedural import random_style, render_procedural_card

HEIGHT_PX = 320
DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
# Seed 1002 is a four-colour deck (green clubs, blue diamonds); 1000, 1018, 1033 and 1039
# draw their suits from parameters, the others from a font.
SEEDS = (*range(1000, 1040, 3), 1002)


@pytest.fixture(autouse=True)
def dejavu_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    assert DEJAVU.is_dir(), "install fonts-dejavu-core (scripts/test does)"
    monkeypatch.setattr(procedural, "FONT_ROOT", DEJAVU)
    procedural.rank_fonts.cache_clear()
    procedural.suit_fonts.cache_clear()
    yield
    procedural.rank_fonts.cache_clear()
    procedural.suit_fonts.cache_clear()


def _index_ink(card_bgra: np.ndarray, paper_rgb: tuple[int, int, int]) -> np.ndarray:
    """Pixels that are not paper in the top-left corner block where the index is printed,
    clear of the card's edge (a border may be drawn there) and of a two's or three's pips
    (centred at half the width, at least 0.39 widths from the left)."""
    width = card_bgra.shape[1]
    paper_bgr = np.array(paper_rgb[::-1], np.int32)
    ink = np.abs(card_bgra[:, :, :3].astype(np.int32) - paper_bgr).sum(axis=2) > 60
    ink &= card_bgra[:, :, 3] == 255
    ink[:3, :] = False
    ink[:, :3] = False
    return ink[: int(0.75 * width), : int(0.36 * width)]


@pytest.mark.parametrize("seed", SEEDS)
def test_the_index_lies_inside_the_patch_the_classifier_reads(seed: int) -> None:
    style = random_style(seed)
    for label in ("2C", "2H", "3S", "3D"):
        card = render_procedural_card(style, parse_card(label), HEIGHT_PX)
        width = card.shape[1]
        ys, xs = np.nonzero(_index_ink(card, style.paper))
        assert len(xs) > 50, f"seed {seed} {label}: no index printed"
        # In card widths from the corner, as vision.locate measures the patch.
        assert xs.max() / width <= PATCH_U[1], f"seed {seed} {label}: index too wide"
        assert ys.max() / width <= PATCH_V[1], f"seed {seed} {label}: index too tall"


@pytest.mark.parametrize("seed", SEEDS)
def test_each_suit_is_printed_in_its_colour(seed: int) -> None:
    style = random_style(seed)
    for label in ("2H", "2D", "2S", "2C"):
        card = render_procedural_card(style, parse_card(label), HEIGHT_PX)
        ink = _index_ink(card, style.paper)
        blue, green, red = (card[: ink.shape[0], : ink.shape[1], c][ink].mean() for c in range(3))
        if label[1] == "H" or (label[1] == "D" and not style.four_colour):
            assert red > green + 60 and red > blue + 60, f"seed {seed} {label} is not red"
        elif label[1] == "S" or (label[1] == "C" and not style.four_colour):
            assert max(red, green, blue) < 150, f"seed {seed} {label} is not dark"
        elif label[1] == "C":
            assert green > red + 40 and green > blue + 40, f"seed {seed} {label} is not green"
        else:
            assert blue > red + 60 and blue > green + 60, f"seed {seed} {label} is not blue"


def test_the_index_is_printed_again_in_the_opposite_corner_turned_round() -> None:
    style = random_style(1001)
    card = render_procedural_card(style, parse_card("2C"), HEIGHT_PX)
    top_left = _index_ink(card, style.paper)
    bottom_right = _index_ink(np.ascontiguousarray(card[::-1, ::-1]), style.paper)
    overlap = (top_left & bottom_right).sum() / (top_left | bottom_right).sum()
    assert overlap > 0.8


def test_a_deck_is_the_same_deck_every_time_and_its_52_cards_differ() -> None:
    assert random_style(1003) == random_style(1003)
    assert random_style(1003) != random_style(1004)
    first = [render_procedural_card(random_style(1003), c, 96) for c in ALL_FACES]
    again = [render_procedural_card(random_style(1003), c, 96) for c in ALL_FACES]
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    distinct = {image.tobytes() for image in first}
    assert len(distinct) == 52


def test_a_procedural_card_has_the_outline_the_simulated_cards_have() -> None:
    # One outline for every card drawn here (vision.artwork), the camera simulator's included.
    import cv2

    from vision.artwork import rounded_card_alpha

    style = random_style(1005)
    card = render_procedural_card(style, parse_card("KH"), HEIGHT_PX)
    height, width = card.shape[:2]
    drawn = height * procedural._RENDER_SCALE  # drawn larger, then reduced
    outline = rounded_card_alpha(drawn, round(drawn * style.aspect))
    outline = cv2.resize(outline, (width, height), interpolation=cv2.INTER_AREA)
    assert card[0, 0, 3] == 0 and card[-1, -1, 3] == 0  # rounded corners are transparent
    assert card[height // 2, width // 2, 3] == 255
    assert np.abs(card[:, :, 3].astype(int) - outline.astype(int)).max() <= 1
