"""The model's settings file: what it may say, and what the network is given."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from controller.errors import ConfigurationError
from vision.locate import PATCH_HEIGHT, PATCH_WIDTH, normalise_patches
from vision.model import DEFAULT_MODEL, CornerClassifier


def _model_with(tmp_path: Path, **settings: object) -> Path:
    model = tmp_path / "generic.onnx"
    shutil.copy(DEFAULT_MODEL, model)
    model.with_suffix(".json").write_text(json.dumps({"threshold": 0.99, **settings}))
    return model


def _patches() -> np.ndarray:
    rng = np.random.default_rng(3)
    return rng.integers(0, 256, (2, PATCH_HEIGHT, PATCH_WIDTH, 3), dtype=np.uint8)


def test_patches_are_blurred_as_the_settings_say_before_the_network(tmp_path: Path) -> None:
    import cv2

    patches = _patches()
    plain = CornerClassifier(_model_with(tmp_path))
    assert plain.input_blur == 0.0
    assert np.array_equal(plain.prepare(patches), normalise_patches(patches))

    blurred = CornerClassifier(_model_with(tmp_path, input_blur=1.2))
    expected = normalise_patches(np.stack([cv2.GaussianBlur(p, (0, 0), 1.2) for p in patches]))
    assert np.allclose(blurred.prepare(patches), expected)
    assert not np.allclose(blurred.prepare(patches), plain.prepare(patches))


@pytest.mark.parametrize("value", [-1.0, 9.0, "much"])
def test_a_nonsense_input_blur_is_a_configuration_error(tmp_path: Path, value: object) -> None:
    with pytest.raises(ConfigurationError, match="settings"):
        CornerClassifier(_model_with(tmp_path, input_blur=value))
