"""Enrolled deck files and the fine-tuning of the heads, without the network."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from controller.kernel.errors import ConfigurationError
from vision.deck import APPEARANCE_SIZE, NO_INDEX_CLASS, EnrolledDeck, Heads, appearance
from vision.enrol import card_from_filename, fine_tune, labelled_images


def _clusters(seed: int, per_class: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Embeddings around one centre per (rank, suit) face, plus "no index" ones."""
    centres = np.random.default_rng(0).normal(0, 3, (52 + 1, 64))
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(53), per_class)
    embeddings = (centres[labels] + rng.normal(0, 1, (len(labels), 64))).astype(np.float32)
    ranks = np.where(labels < 52, labels % 13, NO_INDEX_CLASS)
    suits = np.where(labels < 52, labels // 13, -1)
    return embeddings, ranks, suits, labels


def _zero_heads_over(inputs: int) -> Heads:
    return Heads(
        np.zeros((inputs, 14), np.float32),
        np.zeros(14, np.float32),
        np.zeros((inputs, 4), np.float32),
        np.zeros(4, np.float32),
    )


def _zero_heads() -> Heads:
    return _zero_heads_over(64)


def test_fine_tuned_heads_read_fresh_samples_of_the_deck() -> None:
    embeddings, ranks, suits, _ = _clusters(seed=1, per_class=6)
    heads = fine_tune(_zero_heads(), embeddings, ranks, suits, iterations=300)
    fresh, fresh_ranks, fresh_suits, _ = _clusters(seed=2, per_class=4)
    rank, suit = heads.probabilities(fresh)
    assert (rank.argmax(axis=1) == fresh_ranks).mean() > 0.97
    has_suit = fresh_suits >= 0
    assert (suit[has_suit].argmax(axis=1) == fresh_suits[has_suit]).mean() > 0.97


def _random_heads() -> Heads:
    return Heads(
        np.random.default_rng(3).normal(0, 1, (64, 14)).astype(np.float32),
        np.zeros(14, np.float32),
        np.random.default_rng(4).normal(0, 1, (64, 4)).astype(np.float32),
        np.zeros(4, np.float32),
    )


def test_no_example_keeps_the_generic_heads() -> None:
    generic = _random_heads()
    embeddings, ranks, suits, _ = _clusters(seed=5, per_class=1)
    tuned = fine_tune(generic, embeddings, ranks, suits, iterations=1)
    # One small step: the start is the generic heads, not a fresh layer.
    assert np.allclose(tuned.rank_weight, generic.rank_weight, atol=0.02)


def test_deck_file_round_trip(tmp_path: Path) -> None:
    embeddings, ranks, suits, _ = _clusters(seed=6, per_class=2)
    heads = fine_tune(_zero_heads(), embeddings, ranks, suits, iterations=50)
    deck = EnrolledDeck(heads, "abc123", 0.97, {"name": "studio"})
    path = tmp_path / "deck.npz"
    deck.save(path)
    loaded = EnrolledDeck.load(path)
    assert loaded.model_digest == "abc123"
    assert loaded.threshold == pytest.approx(0.97)
    assert loaded.info == {"name": "studio"}
    for mine, theirs in zip(
        loaded.heads.probabilities(embeddings), deck.heads.probabilities(embeddings), strict=True
    ):
        assert np.allclose(mine, theirs, atol=1e-6)


def test_a_save_stopped_half_way_leaves_the_deck_that_was_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    embeddings, ranks, suits, _ = _clusters(seed=6, per_class=1)
    heads = fine_tune(_zero_heads(), embeddings, ranks, suits, iterations=5)
    path = tmp_path / "deck.npz"
    EnrolledDeck(heads, "abc123", 0.97, {"name": "first"}).save(path)

    def stopped_half_way(handle: object, **arrays: object) -> None:
        handle.write(b"PK\x03\x04 the first bytes of a zip")  # type: ignore[attr-defined]
        raise KeyboardInterrupt  # Ctrl-C while enrolment writes the new deck

    monkeypatch.setattr(np, "savez", stopped_half_way)
    with pytest.raises(KeyboardInterrupt):
        EnrolledDeck(heads, "def456", 0.99, {"name": "second"}).save(path)
    assert EnrolledDeck.load(path).info == {"name": "first"}
    assert [p.name for p in tmp_path.iterdir()] == ["deck.npz"]


def test_a_saved_deck_is_readable_as_the_umask_allows(tmp_path: Path) -> None:
    # The daemon may run as another user than the engineer who enrolled the deck.
    embeddings, ranks, suits, _ = _clusters(seed=6, per_class=1)
    heads = fine_tune(_zero_heads(), embeddings, ranks, suits, iterations=5)
    previous = os.umask(0o022)
    try:
        EnrolledDeck(heads, "abc123", 0.97, {}).save(tmp_path / "deck.npz")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "deck.npz").stat().st_mode) == 0o644


def test_damaged_or_missing_deck_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="not found"):
        EnrolledDeck.load(tmp_path / "missing.npz")
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ConfigurationError, match="not a deck file"):
        EnrolledDeck.load(damaged)
    wrong_shape = tmp_path / "wrong.npz"
    np.savez(
        wrong_shape,
        meta=np.array('{"format": 2, "model_digest": "x", "threshold": 0.9}'),
        rank_weight=np.zeros((64, 5)),
        rank_bias=np.zeros(5),
        suit_weight=np.zeros((64, 4)),
        suit_bias=np.zeros(4),
    )
    with pytest.raises(ConfigurationError, match="not a deck file"):
        EnrolledDeck.load(wrong_shape)


def _glyph_patches(seed: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Patches of two "cards" that differ only in their glyph: a bar across the top (class
    0) or down the side (class 1), under varied brightness, contrast and noise."""
    rng = np.random.default_rng(seed)
    labels = np.arange(count) % 2
    patches = np.empty((count, 52, 32, 3), np.uint8)
    for number, label in enumerate(labels):
        paper = rng.uniform(150, 250)
        ink = paper - rng.uniform(60, 140)
        patch = np.full((52, 32), paper)
        if label == 0:
            patch[6:12, 4:24] = ink
        else:
            patch[6:30, 6:12] = ink
        patch += rng.normal(0, 6, patch.shape)
        patches[number] = np.clip(patch, 0, 255)[..., None].astype(np.uint8)
    return patches, labels


def test_appearance_is_unit_length_and_ignores_brightness_and_contrast() -> None:
    patches, _ = _glyph_patches(seed=1, count=4)
    thumbnails = appearance(patches)
    assert thumbnails.shape == (4, APPEARANCE_SIZE)
    assert np.allclose(np.linalg.norm(thumbnails, axis=1), 1.0, atol=1e-5)
    darker = (patches.astype(np.float32) * 0.5 + 10).astype(np.uint8)
    assert np.allclose(appearance(darker), thumbnails, atol=0.03)
    flat = np.full((1, 52, 32, 3), 128, np.uint8)
    assert not appearance(flat).any()
    assert appearance(patches[:0]).shape == (0, APPEARANCE_SIZE)


def test_the_thumbnail_tells_apart_cards_the_embedding_confuses() -> None:
    # The generic network may give two cards of a design one embedding (plastic's 2C and
    # 2S): heads over the embedding alone cannot separate them, heads over the thumbnail can.
    patches, labels = _glyph_patches(seed=2, count=80)
    confused = np.random.default_rng(3).normal(0, 1, (1, 64)).repeat(len(labels), axis=0)
    ranks = np.where(labels == 0, 1, 7)  # a 2 and an 8
    suits = np.zeros(len(labels), np.int64)
    deck_features = EnrolledDeck(
        _zero_heads_over(64 + APPEARANCE_SIZE), "x", 0.9, {}, appearance_weight=30.0
    ).features(confused.astype(np.float32), patches)
    heads = fine_tune(_zero_heads(), deck_features, ranks, suits)
    deck = EnrolledDeck(heads, "x", 0.9, {}, appearance_weight=30.0)
    fresh, fresh_labels = _glyph_patches(seed=4, count=40)
    rank, _ = deck.probabilities(confused[: len(fresh)].astype(np.float32), fresh)
    assert (rank.argmax(axis=1) == np.where(fresh_labels == 0, 1, 7)).all()
    assert rank.max(axis=1).min() > 0.9


def test_further_features_start_from_zero_weights() -> None:
    generic = _random_heads()
    embeddings, ranks, suits, _ = _clusters(seed=5, per_class=1)
    features = np.concatenate([embeddings, np.ones((len(embeddings), 3), np.float32)], axis=1)
    start = fine_tune(generic, features, ranks, suits, iterations=0)
    assert start.inputs == 67
    assert np.array_equal(start.rank_weight[:64], generic.rank_weight)
    assert np.array_equal(start.suit_weight[:64], generic.suit_weight)
    assert not start.rank_weight[64:].any() and not start.suit_weight[64:].any()
    # Fitted, the further features earn weights of their own.
    assert np.abs(fine_tune(generic, features, ranks, suits).rank_weight[64:]).max() > 0.01
    with pytest.raises(ValueError, match="features of 10 values"):
        fine_tune(generic, features[:, :10], ranks, suits, iterations=1)


def test_deck_with_appearance_round_trip_and_older_decks_still_load(tmp_path: Path) -> None:
    patches, labels = _glyph_patches(seed=6, count=20)
    embeddings = np.random.default_rng(7).normal(0, 1, (20, 64)).astype(np.float32)
    shell = EnrolledDeck(_zero_heads_over(64 + APPEARANCE_SIZE), "abc", 0.9, {}, 25.0)
    heads = fine_tune(
        _zero_heads(), shell.features(embeddings, patches), labels, labels, iterations=20
    )
    deck = EnrolledDeck(heads, "abc", 0.95, {"name": "studio"}, appearance_weight=25.0)
    deck.save(tmp_path / "deck.npz")
    loaded = EnrolledDeck.load(tmp_path / "deck.npz")
    assert loaded.appearance_weight == 25.0
    for mine, theirs in zip(
        loaded.probabilities(embeddings, patches),
        deck.probabilities(embeddings, patches),
        strict=True,
    ):
        assert np.allclose(mine, theirs, atol=1e-6)
    # A deck enrolled before the thumbnail (format 2) reads the embedding alone.
    older = tmp_path / "older.npz"
    np.savez(
        older,
        meta=np.array('{"format": 2, "model_digest": "abc", "threshold": 0.97, "info": {}}'),
        **_zero_heads().arrays(),
    )
    assert EnrolledDeck.load(older).appearance_weight == 0.0
    assert EnrolledDeck.load(older).features(embeddings, patches) is embeddings
    # Heads that do not fit the deck's features are refused when the file is read.
    mismatched = tmp_path / "mismatched.npz"
    np.savez(
        mismatched,
        meta=np.array(
            '{"format": 3, "model_digest": "abc", "threshold": 0.97, "appearance_weight": 30}'
        ),
        **_zero_heads().arrays(),
    )
    with pytest.raises(ConfigurationError, match="not a deck file: heads over 64 values"):
        EnrolledDeck.load(mismatched)


@pytest.mark.parametrize(
    ("meta", "refusal"),
    [
        ('{"format": 3, "model_digest": "a", "threshold": NaN}', "not a probability"),
        (
            '{"format": 3, "model_digest": "a", "threshold": 0.9, "appearance_weight": NaN}',
            "weight",
        ),
        ('{"format": 3, "model_digest": "a", "threshold": 0.9, "appearance_weight": -1}', "weight"),
        ('{"format": 3, "model_digest": "a", "threshold": 1.5}', "not a probability"),
        ('{"format": 1, "model_digest": "a", "threshold": 0.9}', "expected 2 or 3 or 4 or 5"),
        ('{"format": 6, "model_digest": "a", "threshold": 0.9}', "expected 2 or 3 or 4 or 5"),
    ],
)
def test_a_deck_file_with_values_that_cannot_be_read_is_refused(
    tmp_path: Path, meta: str, refusal: str
) -> None:
    # A NaN anywhere makes every score NaN, and every comparison with NaN false: such a
    # deck must never load (the recogniser also reads a NaN score as no card).
    path = tmp_path / "deck.npz"
    np.savez(path, meta=np.array(meta), **_zero_heads().arrays())
    with pytest.raises(ConfigurationError, match=refusal):
        EnrolledDeck.load(path)
    heads = _zero_heads().arrays()
    heads["rank_bias"] = np.full(14, np.nan, np.float32)
    np.savez(path, meta=np.array('{"format": 3, "model_digest": "a", "threshold": 0.9}'), **heads)
    with pytest.raises(ConfigurationError, match="not finite"):
        EnrolledDeck.load(path)


def test_a_deck_with_mean_faces_round_trip_and_a_damaged_face_check_is_refused(
    tmp_path: Path,
) -> None:
    from vision.deck import FaceCheck
    from vision.face import FACE_HEIGHT, FACE_WIDTH

    templates = np.random.default_rng(8).normal(0, 1, (52, 2, FACE_HEIGHT, FACE_WIDTH))
    faces = FaceCheck(templates.astype(np.float32), floor=0.95, level=0.02)
    deck = EnrolledDeck(_zero_heads(), "abc", 0.999, {}, faces=faces)
    deck.save(tmp_path / "deck.npz")
    loaded = EnrolledDeck.load(tmp_path / "deck.npz")
    assert loaded.faces is not None
    assert (loaded.faces.floor, loaded.faces.level) == (0.95, pytest.approx(0.02))
    # Kept in half precision: a correlation needs no more.
    assert np.allclose(loaded.faces.templates, faces.templates, rtol=1e-3, atol=1e-3)
    # Written without mean faces (a deck given its threshold), it reads without the check.
    EnrolledDeck(_zero_heads(), "abc", 0.999, {}).save(tmp_path / "plain.npz")
    assert EnrolledDeck.load(tmp_path / "plain.npz").faces is None
    for meta in (
        '{"format": 5, "model_digest": "a", "threshold": 0.9, "face_floor": 0.95, '
        '"face_level": NaN}',
        '{"format": 5, "model_digest": "a", "threshold": 0.9, "face_floor": 0, "face_level": 0.0}',
    ):
        np.savez(
            tmp_path / "bad.npz",
            meta=np.array(meta),
            face_templates=faces.templates,
            **_zero_heads().arrays(),
        )
        with pytest.raises(ConfigurationError, match="not a deck file: face"):
            EnrolledDeck.load(tmp_path / "bad.npz")
    with pytest.raises(ValueError, match="mean faces of shape"):
        FaceCheck(faces.templates[:, :1], floor=0.95, level=0.0)


def test_a_deck_of_format_4_reads_without_its_mean_faces(tmp_path: Path) -> None:
    """Format 4's mean faces were 40 pixels wide and compared whole; its face level was
    calibrated on that comparison, which named the wrong suit far more often. Such a deck
    still loads, and reads as one without mean faces (enrol it again for the check)."""
    small = np.zeros((52, 2, 58, 40), np.float32)
    np.savez(
        tmp_path / "old.npz",
        meta=np.array(
            '{"format": 4, "model_digest": "a", "threshold": 0.99, "face_floor": 0.95, '
            '"face_level": 0.0}'
        ),
        face_templates=small,
        **_zero_heads().arrays(),
    )
    old = EnrolledDeck.load(tmp_path / "old.npz")
    assert old.faces is None and old.threshold == 0.99
    # The engineer is told (the reader and the vision commands log this warning), since
    # without the check the deck has no suit veto either.
    warning = str(old.stale_warning())
    assert "deck format 4" in warning and "without the face check" in warning
    assert warning.endswith("enrol the deck again")
    # A deck of format 3 never had mean faces: nothing set aside, nothing to say of them.
    np.savez(
        tmp_path / "three.npz",
        meta=np.array('{"format": 3, "model_digest": "a", "threshold": 0.99}'),
        **_zero_heads().arrays(),
    )
    assert "face check" not in str(EnrolledDeck.load(tmp_path / "three.npz").stale_warning())


def test_file_names_must_start_with_a_card(tmp_path: Path) -> None:
    assert str(card_from_filename(Path("QH_0007.png"))) == "QH"
    assert str(card_from_filename(Path("10d_x.png"))) == "TD"
    with pytest.raises(ConfigurationError, match=r"holiday\.png"):
        card_from_filename(Path("holiday.png"))
    with pytest.raises(ConfigurationError, match="no images"):
        labelled_images(tmp_path)


def test_vision_cli_does_not_import_opencv() -> None:
    code = (
        "import sys, controller.tools.cli, vision.cli, vision.bench; "
        "controller.tools.cli.build_parser(); "
        "sys.exit(1 if 'cv2' in sys.modules else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_the_calibration_summary_says_what_the_suit_veto_cost() -> None:
    info = {
        "calibration_pictures": 1040,
        "calibration_wrong_without_threshold": 2,
        "calibration_highest_wrong_score": 0.64,
        "calibration_correct_at_threshold": 0.975,
        "calibration_face_agreed_with_wrong": 0,
        "calibration_face_level": 0.0,
        "calibration_correct_with_face": 0.9885,
        "calibration_vetoed_right": 3,
    }
    summary = EnrolledDeck(_zero_heads(), "abc", 0.997, info).calibration_summary()
    assert "98.85% with the face check" in summary
    assert "the vetoes (suit, rank) turned away 3 right reading(s)" in summary


def test_the_calibration_summary_says_what_the_face_settled() -> None:
    info = {
        "calibration_pictures": 1040,
        "calibration_wrong_without_threshold": 1,
        "calibration_highest_wrong_score": 0.74,
        "calibration_correct_at_threshold": 0.98,
        "calibration_face_agreed_with_wrong": 0,
        "calibration_face_level": 0.0,
        "calibration_correct_with_face": 0.99,
        "calibration_vetoed_right": 0,
        "calibration_face_settled_right": 4,
        "calibration_face_settled_wrong": 0,
    }
    summary = EnrolledDeck(_zero_heads(), "abc", 0.998, info).calibration_summary()
    assert "it settled 4 reading(s) whose corners disagreed (0 wrong)" in summary
    # A deck calibrated before the face settled anything says nothing of it.
    del info["calibration_face_settled_right"], info["calibration_face_settled_wrong"]
    older = EnrolledDeck(_zero_heads(), "abc", 0.998, info).calibration_summary()
    assert "settled" not in older


def test_a_deck_whose_face_level_was_calibrated_with_another_face_comparison_says_so() -> None:
    """The face check's level bounds how clearly a face agreed with wrong readings in the
    deck's calibration, measured with the comparison of that day: with another comparison
    (the suit read at the best of small shifts, FACE_REVISION 2) a face may name a wrong
    card more clearly than the level allows for. Such a deck still reads, with the warning
    to enrol it again."""
    from vision.deck import FaceCheck
    from vision.face import FACE_HEIGHT, FACE_REVISION, FACE_WIDTH
    from vision.locate import LOCATOR_REVISION

    faces = FaceCheck(np.zeros((52, 2, FACE_HEIGHT, FACE_WIDTH), np.float32), 0.95, 0.0)
    info: dict[str, object] = {"locator_revision": LOCATOR_REVISION}

    def deck(extra: dict[str, object], with_faces: bool = True) -> EnrolledDeck:
        return EnrolledDeck(
            _zero_heads(), "abc", 0.99, {**info, **extra}, faces=faces if with_faces else None
        )

    assert deck({"face_revision": FACE_REVISION}).stale_warning() is None
    older = str(deck({}).stale_warning())
    assert "an older comparison of the face" in older and older.endswith("enrol the deck again")
    earlier = str(deck({"face_revision": FACE_REVISION - 1}).stale_warning())
    assert f"revision {FACE_REVISION - 1} of the face comparison" in earlier
    assert f"this is revision {FACE_REVISION}" in earlier
    # A deck without a face check (enrolled without a calibration) has no level to doubt.
    assert deck({}, with_faces=False).stale_warning() is None
