"""The corner locator on real rendered pixels."""

from __future__ import annotations

import numpy as np
import pytest

from controller.games.cards import ALL_FACES
from vision.locate import (
    PATCH_HEIGHT,
    PATCH_WIDTH,
    cut_patch,
    find_corners,
    normalise_patches,
)
from vision.synth import SceneOptions, render_scene

CLEAN = SceneOptions(
    occlusion_probability=0.0,
    glare_probability=0.0,
    blur_sigma=(0.0, 0.5),
    noise_sigma=(0.0, 2.0),
    motion_blur_probability=0.0,
)


@pytest.mark.parametrize("seed", range(8))
def test_both_index_corners_are_found_with_x_along_the_short_edge(seed: int) -> None:
    design = ("anglo", "kde-standard", "paris", "tigullio")[seed % 4]
    scene = render_scene(design, ALL_FACES[seed * 5], np.random.default_rng(seed), CLEAN)
    candidates = find_corners(scene.image)
    width = float(np.linalg.norm(scene.corners[1] - scene.corners[0]))
    for corner_number, across in (
        (0, scene.corners[1] - scene.corners[0]),
        (2, scene.corners[3] - scene.corners[2]),
    ):
        target = scene.corners[corner_number]
        near = [c for c in candidates if np.linalg.norm(np.array(c.point) - target) < 0.08 * width]
        assert near, f"index corner {corner_number} not found"
        unit = across / np.linalg.norm(across)
        assert float(np.array(near[0].x_axis) @ unit) > 0.9
        assert 0.85 < near[0].card_width / width < 1.2


def test_plain_felt_has_no_corners() -> None:
    rng = np.random.default_rng(1)
    felt = np.clip(rng.normal((40, 110, 30), 4, (300, 300, 3)), 0, 255).astype(np.uint8)
    assert find_corners(felt) == []


def test_patches_are_upright_and_normalised() -> None:
    scene = render_scene("kde-standard", ALL_FACES[0], np.random.default_rng(3), CLEAN)
    candidates = find_corners(scene.image)
    patches = np.stack([cut_patch(scene.image, c) for c in candidates])
    assert patches.shape[1:] == (PATCH_HEIGHT, PATCH_WIDTH, 3)
    batch = normalise_patches(patches)
    assert batch.shape == (len(candidates), 3, PATCH_HEIGHT, PATCH_WIDTH)
    assert batch.dtype == np.float32
    assert abs(float(batch.mean())) < 0.5
