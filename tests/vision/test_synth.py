"""The scene synthesiser: reproducible, ground truth consistent with the pixels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from controller.kernel.cards import ALL_FACES, Card
from controller.kernel.errors import ConfigurationError
from vision.enrol import labelled_images
from vision.synth import SceneOptions, render_scene, write_dataset


def test_same_seed_same_scene_other_seed_other_scene() -> None:
    first = render_scene("anglo", Card("Q", "H"), np.random.default_rng(4))
    again = render_scene("anglo", Card("Q", "H"), np.random.default_rng(4))
    other = render_scene("anglo", Card("Q", "H"), np.random.default_rng(5))
    assert np.array_equal(first.image, again.image)
    assert not np.array_equal(first.image, other.image)


@pytest.mark.parametrize("seed", range(6))
def test_card_lies_inside_the_image_where_the_corners_say(seed: int) -> None:
    options = SceneOptions(occlusion_probability=0.0, glare_probability=0.0)
    scene = render_scene("kde-standard", ALL_FACES[seed * 7], np.random.default_rng(seed), options)
    height, width = scene.image.shape[:2]
    assert scene.image.dtype == np.uint8 and scene.image.shape[2] == 3
    assert (scene.corners >= 0).all()
    assert (scene.corners[:, 0] < width).all() and (scene.corners[:, 1] < height).all()
    # The card is much brighter than felt at its centre, and felt surrounds it.
    centre = scene.corners.mean(axis=0).astype(int)
    card_grey = scene.image[centre[1] - 3 : centre[1] + 4, centre[0] - 3 : centre[0] + 4].mean()
    assert scene.index_visibility == (1.0, 1.0)
    short = np.linalg.norm(scene.corners[1] - scene.corners[0])
    long = np.linalg.norm(scene.corners[3] - scene.corners[0])
    assert 1.05 < long / short < 2.0  # portrait, within the perspective jitter
    assert card_grey > scene.image[:4].mean() or card_grey > 60


def test_occlusion_reduces_visibility_sometimes() -> None:
    options = SceneOptions(occlusion_probability=1.0, occlusion_fraction=(0.3, 0.35))
    rng = np.random.default_rng(9)
    visibilities = [
        min(render_scene("anglo", ALL_FACES[i], rng, options).index_visibility) for i in range(24)
    ]
    assert all(0.0 <= v <= 1.0 for v in visibilities)
    assert min(visibilities) < 0.9


def test_too_small_a_scene_is_refused() -> None:
    with pytest.raises(ConfigurationError):
        render_scene("anglo", Card("A", "S"), np.random.default_rng(0), SceneOptions(size=(32, 32)))


def test_dataset_files_are_named_for_eval(tmp_path: Path) -> None:
    paths = write_dataset(tmp_path, "simplistic", 5, seed=1)
    assert [path.name for path in paths] == [
        "AS_00000.png",
        "2S_00001.png",
        "3S_00002.png",
        "4S_00003.png",
        "5S_00004.png",
    ]
    labels = {item.path.name: item.card for item in labelled_images(tmp_path)}
    assert labels == {path.name: card for path, card in zip(paths, ALL_FACES[:5], strict=True)}
