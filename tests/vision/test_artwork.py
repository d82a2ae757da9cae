"""Card artwork rendered from the installed SVG decks: real rsvg-convert, real pixels."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest

from controller.kernel.cards import Card
from controller.kernel.errors import ConfigurationError
from vision import artwork


def test_designs_from_both_packages_are_listed_and_bonded_never() -> None:
    designs = artwork.list_designs()
    assert "anglo" in designs
    assert "kde-standard" in designs
    assert len(designs) >= 30
    assert not any("bonded" in design.lower() for design in designs)


def test_bonded_is_excluded_even_when_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(artwork.AISLERIOT_DIR / "anglo.svgz", tmp_path / "anglo.svgz")
    shutil.copy(artwork.AISLERIOT_DIR / "anglo.svgz", tmp_path / "bonded.svgz")
    (tmp_path / "kde").mkdir()
    monkeypatch.setattr(artwork, "AISLERIOT_DIR", tmp_path)
    monkeypatch.setattr(artwork, "KDE_DIR", tmp_path / "kde")
    assert artwork.list_designs() == ["anglo"]
    with pytest.raises(ConfigurationError, match="reserved"):
        artwork.render_card("bonded", Card("Q", "H"), 100)


def test_unknown_design_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown card design"):
        artwork.render_card("no-such-deck", Card("A", "S"), 100)


@pytest.mark.parametrize("design", ["anglo", "kde-standard", "kde-xskat-french"])
def test_render_is_bgr_of_the_requested_height_and_card_shaped(design: str) -> None:
    image = artwork.render_card(design, Card("Q", "H"), 180)
    assert image.dtype == np.uint8
    assert image.ndim == 3 and image.shape[2] == 3
    assert image.shape[0] == 180
    assert 0.55 < image.shape[1] / image.shape[0] < 0.85  # a portrait playing card
    blue, green, red = (image[:, :, channel].astype(int) for channel in range(3))
    assert ((red - np.maximum(blue, green)) > 80).sum() > 100  # a heart card has red ink


def test_different_cards_render_differently() -> None:
    two = artwork.render_card("kde-standard", Card("2", "S"), 150)
    three = artwork.render_card("kde-standard", Card("3", "S"), 150)
    assert two.shape == three.shape
    assert np.abs(two.astype(int) - three.astype(int)).mean() > 1.0


def test_bgra_keeps_transparent_corners() -> None:
    image = artwork.render_card_bgra("anglo", Card("A", "S"), 200)
    assert image.shape[2] == 4
    assert image[0, 0, 3] < 128  # rounded corner
    assert image[100, image.shape[1] // 2, 3] == 255


def test_second_render_comes_from_the_disk_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVETABLE_CACHE_DIR", str(tmp_path))
    first = artwork.render_card("simplistic", Card("7", "D"), 120)
    cached = list((tmp_path / "cards" / "simplistic").glob("7D_120_*.png"))
    assert len(cached) == 1
    # Proof that the cache is read: a file changed on disk comes back as changed.
    import cv2

    marked = cv2.imread(str(cached[0]), cv2.IMREAD_UNCHANGED)
    marked[:10, :10] = (0, 255, 0, 255)
    cv2.imwrite(str(cached[0]), marked)
    second = artwork.render_card("simplistic", Card("7", "D"), 120)
    assert second.shape == first.shape
    assert tuple(second[5, 5]) == (0, 255, 0)


def test_every_face_of_a_design_has_an_element() -> None:
    with gzip.open(artwork.AISLERIOT_DIR / "anglo.svgz") as handle:
        text = handle.read().decode()
    from controller.kernel.cards import ALL_FACES

    for card in ALL_FACES:
        assert f'id="{artwork.element_id("anglo", card)}"' in text


def test_fully_opaque_render_without_alpha_channel_is_accepted() -> None:
    # rsvg-convert writes RGB, not RGBA, for some plastic cards (no transparent pixel).
    image = artwork.render_card_bgra("plastic", Card("5", "H"), 150)
    assert image.shape[0] == 150 and image.shape[2] == 4
    assert (image[:, :, 3] == 255).mean() > 0.9
