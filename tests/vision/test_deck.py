"""Enrolled deck files and the enrolment head, without the network."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from controller.errors import ConfigurationError
from vision.deck import NO_INDEX_CLASS, EnrolledDeck
from vision.enrol import card_from_filename, fit_head, labelled_images


def _clusters(rng: np.random.Generator, per_class: int) -> tuple[np.ndarray, np.ndarray]:
    centres = rng.normal(0, 3, (NO_INDEX_CLASS + 1, 64))
    labels = np.repeat(np.arange(NO_INDEX_CLASS + 1), per_class)
    return (centres[labels] + rng.normal(0, 1, (len(labels), 64))).astype(np.float32), labels


def test_head_separates_classes_it_was_fitted_on_and_generalises() -> None:
    rng = np.random.default_rng(0)
    features, labels = _clusters(rng, 6)
    weights, bias, mean, scale = fit_head(features, labels, iterations=300)
    deck = EnrolledDeck(weights, bias, mean, scale, "digest", 0.9, {})
    # Fresh samples from the same clusters.
    rng2 = np.random.default_rng(0)
    centres = rng2.normal(0, 3, (NO_INDEX_CLASS + 1, 64))
    fresh = (centres[labels] + np.random.default_rng(1).normal(0, 1, (len(labels), 64))).astype(
        np.float32
    )
    predicted = deck.probabilities(fresh).argmax(axis=1)
    assert (predicted == labels).mean() > 0.97


def test_deck_file_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    features, labels = _clusters(rng, 3)
    weights, bias, mean, scale = fit_head(features, labels, iterations=50)
    deck = EnrolledDeck(weights, bias, mean, scale, "abc123", 0.97, {"name": "studio"})
    path = tmp_path / "deck.npz"
    deck.save(path)
    loaded = EnrolledDeck.load(path)
    assert loaded.model_digest == "abc123"
    assert loaded.threshold == pytest.approx(0.97)
    assert loaded.info == {"name": "studio"}
    assert np.allclose(loaded.probabilities(features), deck.probabilities(features), atol=1e-5)


def test_damaged_or_missing_deck_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not found"):
        EnrolledDeck.load(tmp_path / "missing.npz")
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ConfigurationError, match="not a deck file"):
        EnrolledDeck.load(damaged)


def test_file_names_must_start_with_a_card(tmp_path: Path) -> None:
    assert str(card_from_filename(Path("QH_0007.png"))) == "QH"
    assert str(card_from_filename(Path("10d_x.png"))) == "TD"
    with pytest.raises(ConfigurationError, match=r"holiday\.png"):
        card_from_filename(Path("holiday.png"))
    with pytest.raises(ConfigurationError, match="no images"):
        labelled_images(tmp_path)


def test_vision_cli_does_not_import_opencv() -> None:
    code = (
        "import sys, controller.cli, vision.cli, vision.bench; "
        "controller.cli.build_parser(); "
        "sys.exit(1 if 'cv2' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
