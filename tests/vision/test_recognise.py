"""The shipped recogniser on real rendered pixels: generic mode on designs it never saw,
enrolment, abstention, the CLI.

An enrolled deck's target (docs/vision.md, "Measured": at least 99.5 % of its design's
images read correctly, at most 0.5 % abstained, never a wrong answer) is for a deck enrolled
from 1,040 pictures, which takes minutes: ``scripts/enrolled-eval`` measures it
(docs/vision.md, "Enrolled deck"), and the tests here hold decks enrolled from 208 pictures
to what they read today and to never a wrong answer, which is absolute. The generic model's
targets on designs it never saw (at least 97 % read correctly, never a wrong answer) are not
met: ``scripts/generic-eval`` measures them (docs/vision.md, "Generic model"), and the tests
here hold the generic model to what it does today on small samples, so that a change making
it worse fails.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from controller.kernel.cards import ALL_FACES, Card, parse_card
from controller.kernel.errors import ConfigurationError
from controller.tools.cli import main
from vision.deck import EnrolledDeck
from vision.designs import FAMILIES, HOLDOUT_FOLDS, family_of
from vision.enrol import APPEARANCE_WEIGHT, enrol
from vision.evaluate import EvalReport, evaluate
from vision.locate import LOCATOR_REVISION
from vision.model import DEFAULT_MODEL, load_settings
from vision.recognise import CornerReadings, Recogniser, is_ambiguous, is_standoff, noisy_or
from vision.synth import render_scene, write_dataset

SETTINGS = load_settings(DEFAULT_MODEL)
TRAINED_ON = json.loads(DEFAULT_MODEL.with_suffix(".training.json").read_text())["trained_on"]


def _scenes(design: str, count: int, seed: int, start: int = 0):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    for number in range(start, start + count):
        card = ALL_FACES[number % len(ALL_FACES)]
        yield f"{design}-{number}", card, render_scene(design, card, rng).image


def _fold_of(design: str) -> str:
    family = family_of(design)
    return next(fold for fold, families in HOLDOUT_FOLDS.items() if family in families)


@pytest.fixture(scope="module")
def recogniser() -> Recogniser:
    return Recogniser()


def test_held_out_families_were_not_trained_on() -> None:
    trained_families = {family_of(design) for design in TRAINED_ON}
    for families in HOLDOUT_FOLDS.values():
        for family in families:
            assert family in FAMILIES
            assert family not in trained_families


UNSEEN_DESIGNS = ("kde-standard", "plastic", "tango", "kde-penguins", "bellot", "kde-nicu-white")
# Images per design. The generic model answers wrong on about 2 % of plastic's images (clubs
# read as spades, scripts/generic-eval); none of these 60 are among them.
SAMPLE_SIZE = 60
# The share of a design's images the generic model reads correctly, at the least: what it
# reads of these 60 today (kde-standard 52, plastic 42, tango 23, kde-penguins 13, bellot 16,
# kde-nicu-white 22) less three times a 60-image sample's spread, so that a change that
# reads other images as well passes and one that reads clearly fewer fails (the figures of
# whole runs: scripts/generic-eval, docs/vision.md "Generic model").
GENERIC_FLOOR = {
    "kde-standard": 0.73,
    "plastic": 0.52,
    "tango": 0.2,
    "kde-penguins": 0.06,
    "bellot": 0.1,
    "kde-nicu-white": 0.18,
}


@pytest.fixture(scope="module")
def unseen_reports() -> dict[str, EvalReport]:
    """The generic model on designs of the six families it was neither trained nor tuned on,
    each at the threshold calibrated on the other fold's designs."""
    reports = {}
    for number, design in enumerate(UNSEEN_DESIGNS):
        threshold = SETTINGS["holdout_thresholds"][_fold_of(design)]
        reports[design] = evaluate(
            Recogniser(threshold=threshold), _scenes(design, SAMPLE_SIZE, seed=4242 + number)
        )
    return reports


@pytest.mark.parametrize("design", UNSEEN_DESIGNS)
def test_generic_model_on_an_unseen_design_never_answers_wrong(
    design: str, unseen_reports: dict[str, EvalReport]
) -> None:
    report = unseen_reports[design]
    assert report.wrong == 0, report.wrong_answers


@pytest.mark.parametrize("design", UNSEEN_DESIGNS)
def test_generic_model_on_an_unseen_design_reads_no_less_than_today(
    design: str, unseen_reports: dict[str, EvalReport]
) -> None:
    assert unseen_reports[design].accuracy >= GENERIC_FLOOR[design], unseen_reports[design]


# Enrolled decks, small: each deck enrolled from four pictures of each card (208, the fewest
# its own calibration folds take, vision/enrol.py) and read on 104 others. At the recommended
# 1,040 pictures a deck meets the enrolled target (docs/vision.md, "Enrolled deck"; whole runs
# take minutes: scripts/enrolled-eval); these hold a deck enrolled from fewer to what it reads
# today. kde-standard and bellot are families the generic network never saw; bellot's 8 and
# 10, and its clubs and spades, the network confuses, and it is also enrolled on the
# embedding alone (as before the thumbnail, deck format 3).
ENROL_PER_CARD = 4
READ_COUNT = 104
# Each design's seed of its enrolment, seed of its reading and number of its first reading.
ENROLLED = {"kde-standard": (99, 100, 7), "bellot": (101, 102, 11)}
ENROLMENT_MODES = {"thumbnail": APPEARANCE_WEIGHT, "embedding alone": 0.0}
SMALL_DECKS = (
    ("kde-standard", "thumbnail"),
    ("bellot", "thumbnail"),
    ("bellot", "embedding alone"),
)
# The share of the 104 pictures a small deck reads correctly, at the least: what it reads
# today (kde-standard and bellot 104, bellot on the embedding alone 103; none wrong) less
# three times the spread of a 104-picture sample at 99 % (3 %; a sample read whole has no
# spread of its own), so that a change that reads other pictures as well passes and one that
# reads clearly fewer fails.
SMALL_DECK_FLOOR = {
    ("kde-standard", "thumbnail"): 0.97,
    ("bellot", "thumbnail"): 0.97,
    ("bellot", "embedding alone"): 0.96,
}


@pytest.fixture(scope="module")
def small_deck_scenes() -> dict[str, list[tuple[str, Card, np.ndarray]]]:
    """104 pictures of each design, other than those enrolled, rendered once for every
    reading of them below."""
    return {
        design: list(_scenes(design, READ_COUNT, seed=read_seed, start=start))
        for design, (_enrol_seed, read_seed, start) in ENROLLED.items()
    }


@pytest.fixture(scope="module")
def small_decks(recogniser: Recogniser) -> dict[tuple[str, str], EnrolledDeck]:
    decks = {}
    for design, (enrol_seed, _read_seed, _start) in ENROLLED.items():
        # Rendered once for both of bellot's enrolments (rendering is a third of an
        # enrolment's time), and kept as PNG, which is lossless: the same pixels in a tenth
        # of the memory.
        pictures = [
            (card, cv2.imencode(".png", image)[1])
            for _name, card, image in _scenes(design, 52 * ENROL_PER_CARD, enrol_seed)
        ]
        for mode in (mode for named, mode in SMALL_DECKS if named == design):
            decks[design, mode] = enrol(
                recogniser.classifier,
                ((card, cv2.imdecode(png, cv2.IMREAD_COLOR)) for card, png in pictures),
                name=design,
                appearance_weight=ENROLMENT_MODES[mode],
            )
    return decks


@pytest.fixture(scope="module")
def small_deck_reports(
    small_decks: dict[tuple[str, str], EnrolledDeck],
    small_deck_scenes: dict[str, list[tuple[str, Card, np.ndarray]]],
) -> dict[tuple[str, str], EvalReport]:
    """Each deck's reading of its design's 104 pictures, and bellot's at a threshold of 0.999
    by the corners alone and with the face check."""
    reports = {
        (design, mode): evaluate(Recogniser(deck=deck), small_deck_scenes[design])
        for (design, mode), deck in small_decks.items()
    }
    strict = replace(small_decks["bellot", "thumbnail"], threshold=0.999)
    scenes = small_deck_scenes["bellot"]
    reports["bellot", "corners alone"] = evaluate(
        Recogniser(deck=replace(strict, faces=None)), scenes
    )
    reports["bellot", "with faces"] = evaluate(Recogniser(deck=strict), scenes)
    return reports


@pytest.mark.slow
def test_small_enrolled_decks_never_answer_wrong_and_read_no_less_than_today(
    small_decks: dict[tuple[str, str], EnrolledDeck],
    small_deck_reports: dict[tuple[str, str], EvalReport],
) -> None:
    """Each small deck never answers wrong and reads no less than today; and bellot's
    whole-face check (vision/face.py) lets through readings below its threshold that the
    warped face confirms: more read right than the corners alone, nothing wrong.

    One test, not one per deck: the decks take minutes to enrol, and xdist would enrol them
    again on the other worker for a test handed to it. The face check is read at a
    threshold of 0.999: this enrolment's own calibration may meet no wrong reading and leave
    the threshold at the face check's floor, where the face has nothing to confirm, so the
    deck is read as a deck whose calibration met a confident wrong reading would be."""
    for deck in SMALL_DECKS:
        report = small_deck_reports[deck]
        assert report.wrong == 0, (deck, report.wrong_answers)
        assert report.accuracy >= SMALL_DECK_FLOOR[deck], (deck, report.accuracy)
    assert small_decks["bellot", "thumbnail"].faces is not None
    corners_alone = small_deck_reports["bellot", "corners alone"]
    with_faces = small_deck_reports["bellot", "with faces"]
    assert with_faces.wrong == 0, with_faces.wrong_answers
    assert with_faces.correct > corners_alone.correct, (with_faces.correct, corners_alone.correct)


def test_empty_table_is_no_card(recogniser: Recogniser) -> None:
    rng = np.random.default_rng(2)
    felt = np.clip(rng.normal((40, 110, 30), 5, (360, 360, 3)), 0, 255).astype(np.uint8)
    result = recogniser.recognise(felt)
    assert result.card is None
    assert result.reason == "no card found"


def test_frames_are_combined(recogniser: Recogniser) -> None:
    frames = [image for _name, _card, image in _scenes("anglo", 3, seed=5)]
    # Three different cards in three frames: the mean support for any one of them stays far
    # below the threshold, so the answer is an abstention, never one of the three.
    assert recogniser.recognise_frames(frames).card is None
    # The same frame three times is exactly that frame's answer.
    single = recogniser.recognise(frames[0])
    repeated = recogniser.recognise_frames([frames[0]] * 3)
    assert repeated.card == single.card
    assert repeated.best == single.best
    assert repeated.confidence == pytest.approx(single.confidence)


def test_an_answer_from_one_corner_needs_the_single_corner_threshold() -> None:
    """A layout's neighbour may hide one index corner and part of the other: with a
    single-corner threshold, one corner's answer must reach it; two corners agreeing need
    only the threshold. Without one (the default), the number of corners does not matter."""
    scores = np.zeros(len(ALL_FACES))
    scores[7] = 0.99
    strict = Recogniser(threshold=0.9, single_corner_threshold=0.995)
    lenient = Recogniser(threshold=0.9)
    assert strict.decide(scores, corners=3, supporting=2).card == ALL_FACES[7]
    one_corner = strict.decide(scores, corners=3, supporting=1)
    assert one_corner.card is None and one_corner.reason == "below threshold for one corner"
    assert strict.decide(scores, corners=3, supporting=None).card == ALL_FACES[7]
    assert lenient.decide(scores, corners=3, supporting=1).card == ALL_FACES[7]
    scores[7] = 0.999
    assert strict.decide(scores, corners=3, supporting=1).card == ALL_FACES[7]
    # One corner at 0.95 and weak ones that lift the noisy-OR score to 0.999: the one
    # corner is what is judged.
    assert strict.decide(scores, corners=5, supporting=1, strongest=0.95).card is None
    assert strict.decide(scores, corners=5, supporting=1, strongest=0.996).card == ALL_FACES[7]


def test_scores_that_are_not_numbers_are_no_card(recogniser: Recogniser) -> None:
    # Broken heads give NaN scores, and every comparison with NaN is false: none of the
    # abstention tests would hold it back.
    result = recogniser.decide(np.full(len(ALL_FACES), np.nan))
    assert result.card is None
    assert result.reason == "no card found"


def test_the_camera_reader_reads_with_the_slot_rules() -> None:
    from drivers.camera_reader import ReaderConfig, load_recogniser
    from vision.recognise import SLOT_SINGLE_CORNER_THRESHOLD

    reader = load_recogniser(ReaderConfig())
    assert reader.slot_centred
    assert reader.single_corner_threshold == SLOT_SINGLE_CORNER_THRESHOLD


def test_bad_image_is_a_configuration_error(recogniser: Recogniser) -> None:
    with pytest.raises(ConfigurationError):
        recogniser.recognise(np.zeros((50, 50), np.uint8))


@pytest.fixture(scope="module")
def small_deck(recogniser: Recogniser) -> EnrolledDeck:
    """A deck enrolled from one picture of each card: too few to read well, enough to be a
    deck of this model and this locator."""
    enrolment = ((card, image) for _name, card, image in _scenes("tango", 52, seed=3))
    return enrol(recogniser.classifier, enrolment)


def test_deck_made_with_another_model_is_refused(small_deck: EnrolledDeck) -> None:
    with pytest.raises(ConfigurationError, match="another vision model"):
        Recogniser(deck=replace(small_deck, model_digest="0" * 64))


def test_a_deck_calibrated_with_another_locator_is_read_with_a_warning(
    small_deck: EnrolledDeck,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    from drivers.camera_reader import ReaderConfig, load_recogniser

    assert small_deck.locator_revision == LOCATOR_REVISION
    assert small_deck.stale_warning() is None
    current, older = tmp_path / "current.npz", tmp_path / "older.npz"
    small_deck.save(current)
    # A deck enrolled before the revision was recorded (revisions 1 and 2).
    info = {key: value for key, value in small_deck.info.items() if key != "locator_revision"}
    replace(small_deck, info=info).save(older)
    images = tmp_path / "images"
    write_dataset(images, "kde-standard", 1, seed=12)

    assert main(["vision", "eval", str(images), "--deck", str(current)]) == 0
    assert "warning" not in capsys.readouterr().err
    assert main(["vision", "eval", str(images), "--deck", str(older)]) == 0
    err = capsys.readouterr().err
    assert f"warning: {older}: the deck was enrolled with an older revision of the" in err
    assert f"this is revision {LOCATOR_REVISION}" in err and "enrol the deck again" in err

    # The camera reader still reads with it, and says so in the log.
    with caplog.at_level("WARNING", logger="drivers.camera_reader"):
        assert load_recogniser(ReaderConfig(deck=current)).deck is not None
        assert not caplog.records
        assert load_recogniser(ReaderConfig(deck=older)).deck is not None
    assert [record.getMessage() for record in caplog.records] == [
        f"camera deck {older}: {replace(small_deck, info=info).stale_warning()}"
    ]
    earlier = replace(small_deck, info={**info, "locator_revision": LOCATOR_REVISION - 1})
    assert f"revision {LOCATOR_REVISION - 1} of the corner locator" in str(earlier.stale_warning())
    # Only a whole number is a revision: a hand-edited true or "3" is not, and is named.
    for odd in (True, "3", 3.0):
        hand_edited = replace(small_deck, info={**info, "locator_revision": odd})
        assert hand_edited.locator_revision is None
        assert f"it records as {odd!r}" in str(hand_edited.stale_warning())


def test_cli_classify_json_and_eval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "images"
    paths = write_dataset(folder, "kde-standard", 6, seed=12)
    assert main(["vision", "classify", "--json", *map(str, paths)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["file"] for line in lines] == [str(path) for path in paths]
    threshold = load_settings(DEFAULT_MODEL)["threshold"]
    for line, path in zip(lines, paths, strict=True):
        assert set(line) == {"file", "card", "confidence", "threshold", "reason", "best"}
        assert 0.0 <= line["confidence"] <= 1.0
        assert line["card"] in (None, path.name.split("_")[0])
        assert line["threshold"] == round(threshold, 6)
        assert (line["reason"] == "recognised") == (line["card"] is not None)
    assert main(["vision", "eval", str(folder), "--json"]) == 0
    (report_line,) = capsys.readouterr().out.splitlines()  # one JSON object, one line
    report = json.loads(report_line)
    assert report["images"] == 6
    assert report["correct"] + report["abstained"] + report["wrong"] == 6
    assert report["wrong"] == 0


def test_cli_classify_explains_an_abstention(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty felt: the answer says why there is no card, which threshold applied and
    where it came from, and, without an enrolled deck, that the studio's deck should be."""
    import cv2

    felt = tmp_path / "felt.png"
    cv2.imwrite(str(felt), np.full((200, 150, 3), (40, 110, 30), np.uint8))
    assert main(["vision", "classify", str(felt)]) == 0
    captured = capsys.readouterr()
    threshold = SETTINGS["threshold"]
    first, last = captured.out.splitlines()
    assert first.startswith(f"{felt}: -- abstained: no card found (")
    assert f"threshold {threshold:.4f}, the shipped model's calibration)" in first
    assert last == f"threshold applied: {threshold:.6f} (the shipped model's calibration)"
    (note,) = captured.err.splitlines()
    assert note.startswith("note: no enrolled deck was given (--deck)")
    assert "enrol the studio's deck" in note
    assert main(["vision", "classify", "--threshold", "0.5", str(felt)]) == 0
    assert "threshold 0.5000, given with --threshold)" in capsys.readouterr().out


def test_cli_eval_names_a_badly_named_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_dataset(tmp_path, "kde-standard", 1, seed=1)
    (tmp_path / "holiday.png").write_bytes((tmp_path / "AS_00000.png").read_bytes())
    assert main(["vision", "eval", str(tmp_path)]) == 1
    assert "holiday.png" in capsys.readouterr().err


def test_cli_enrol_writes_a_deck_that_classify_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "deck"
    write_dataset(folder, "kde-nicu-white", 52, seed=21)
    deck_file = tmp_path / "studio.npz"
    assert main(["vision", "enrol", str(folder), "-o", str(deck_file)]) == 0
    assert deck_file.is_file()
    # One picture of each card is too few to calibrate on, and the engineer is told so.
    printed = capsys.readouterr().out
    assert "; calibration: none: fewer than 4 pictures of some card" in printed
    assert f"threshold {load_settings(DEFAULT_MODEL)['threshold']:.6f}" in printed
    # A threshold given is no calibration either.
    given = tmp_path / "given.npz"
    assert main(["vision", "enrol", str(folder), "-o", str(given), "--threshold", "0.99"]) == 0
    assert "threshold 0.990000; calibration: none: the threshold was given" in (
        capsys.readouterr().out
    )
    probe = write_dataset(tmp_path / "probe", "kde-nicu-white", 2, seed=22)
    capsys.readouterr()
    assert main(["vision", "classify", "--json", "--deck", str(deck_file), str(probe[0])]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["card"] in (None, "AS")
    assert answer["threshold"] == round(EnrolledDeck.load(deck_file).threshold, 6)


@pytest.mark.slow
def test_a_mislabelled_enrolment_picture_is_named_and_the_deck_stays_safe(
    recogniser: Recogniser,
) -> None:
    """A picture of 7C saved as QH (the card not swapped before the picture): enrolment
    names it, and its wrong reading in the deck's own calibration raises the threshold."""
    design = "kde-standard"
    queen, seven = ALL_FACES.index(parse_card("QH")), ALL_FACES.index(parse_card("7C"))
    pictures = [(card, image) for _name, card, image in _scenes(design, 52 * 4, seed=31)]
    clean = enrol(recogniser.classifier, pictures, name="clean")
    mislabelled = list(pictures)
    seven_pictures = [image for card, image in pictures if card == ALL_FACES[seven]]
    mislabelled.append((ALL_FACES[queen], seven_pictures[0]))
    suspect = enrol(recogniser.classifier, mislabelled, name="one mislabelled")
    assert not clean.info["calibration_suspect_labels"]
    assert any(
        "labelled QH reads as 7C" in line for line in suspect.info["calibration_suspect_labels"]
    ), suspect.info
    assert suspect.threshold > clean.threshold


class _CornersRead(Recogniser):
    """A recogniser whose corners read as given: the decision rules without pixels."""

    def __init__(self, *reads: tuple[str, float], threshold: float = 0.99) -> None:
        super().__init__(threshold=threshold)
        self.read = np.full((len(reads), len(ALL_FACES)), 1e-4)
        for corner, (card, probability) in enumerate(reads):
            self.read[corner, ALL_FACES.index(parse_card(card))] = probability

    def read_corners(self, image: np.ndarray) -> CornerReadings:
        return CornerReadings(self.read, [], [])


def test_two_index_corners_that_disagree_abstain() -> None:
    # Plastic's 2C on the third fresh set: one corner read 2C at 0.954, the other 2S at
    # 0.998. The score margin (odds 20 times) alone let 2S through.
    recogniser = _CornersRead(("2C", 0.954), ("2S", 0.998))
    scores = noisy_or(recogniser.read)
    assert not is_ambiguous(float(scores.max()), float(np.sort(scores)[-2]))
    assert is_standoff(recogniser.read, ALL_FACES.index(parse_card("2S")))
    result = recogniser.recognise(np.zeros((8, 8, 3), np.uint8))
    assert (result.card, result.reason, result.best) == (None, "corners disagree", parse_card("2S"))


def test_two_agreeing_corners_outvote_a_third() -> None:
    # A pip corner that resembles another index must not veto two index corners that agree.
    recogniser = _CornersRead(("2S", 0.99), ("2S", 0.98), ("2C", 0.95))
    assert recogniser.recognise(np.zeros((8, 8, 3), np.uint8)).card == parse_card("2S")


def test_a_corner_half_reading_another_card_is_no_standoff() -> None:
    recogniser = _CornersRead(("2S", 0.999), ("2C", 0.6))
    assert recogniser.recognise(np.zeros((8, 8, 3), np.uint8)).card == parse_card("2S")


def test_a_confident_corner_of_a_third_face_is_a_disagreement_too() -> None:
    # The runner-up by score (two weaker corners) is not the face the confident corner
    # reads: that corner still stands against the best face's one corner.
    recogniser = _CornersRead(("KH", 0.9995), ("QH", 0.75), ("QH", 0.75), ("KD", 0.92))
    result = recogniser.recognise(np.zeros((8, 8, 3), np.uint8))
    assert (result.card, result.reason) == (None, "corners disagree")


def test_a_corner_just_below_the_standoff_level_does_not_veto() -> None:
    recogniser = _CornersRead(("2S", 0.9995), ("2C", 0.89))
    assert recogniser.recognise(np.zeros((8, 8, 3), np.uint8)).card == parse_card("2S")
