"""Enrol a studio's deck: fit a deck-specific head on pictures of its cards.

A studio always deals one known brand, so the recogniser need not read every design in the
world, only that one, very reliably. Enrolment reads labelled pictures of the deck (a folder
of ``<CARD>_<anything>.png``, e.g. frames saved from the table camera with the card named),
cuts the corner patches exactly as recognition does, embeds them with the generic network
and fine-tunes the network's two linear heads (rank and suit) on those embeddings and on a
grey thumbnail of each patch (:func:`vision.deck.appearance`), which carries the deck's own
glyphs where the generic network confuses them.

Each picture holds one card: its likeliest index corner (by the generic network) and the
likeliest corner facing the other way are labelled with the card, every other corner "no
index", so the head also learns that this deck's plain pip corners name no card.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from controller.kernel.cards import ALL_FACES, RANKS, SUITS, Card, parse_card
from controller.kernel.errors import ConfigurationError
from vision.deck import (
    NO_INDEX_CLASS,
    RANK_CLASSES,
    SUIT_CLASSES,
    EnrolledDeck,
    FaceCheck,
    Heads,
    face_agrees,
    face_names_clearly,
    face_names_other_rank,
    face_names_other_suit,
    face_settles,
    heads_input,
)
from vision.face import (
    FACE_REVISION,
    Face,
    FaceReading,
    build_templates,
    reading,
    suit_parts,
    warp_face,
    with_rank_margins,
)
from vision.locate import LOCATOR_REVISION, cut_patch, find_corners, normalise_patches
from vision.model import CornerClassifier

if TYPE_CHECKING:
    import numpy as np

IMAGE_SUFFIXES: Final = frozenset({".png", ".jpg", ".jpeg", ".bmp"})
# A corner the generic network gives less than this chance of being an index is not
# labelled with the card even if it is the picture's likeliest: when both index corners are
# hidden, the likeliest corner is a plain one, and a court card's plain corner (its artwork)
# labelled with the card taught the head to tell jacks apart by their portraits.
_INDEX_POSSIBLE: Final = 0.05
# The enrolled deck's threshold sits this many log-odds above the best-scoring wrong answer
# of its own cross-fitted calibration (odds 200 times higher), and never below the minimum.
# Twenty times was too little: a plastic deck calibrated on 1,040 pictures (worst wrong
# 0.914, threshold 0.995) still read a 3S as 9S at 0.9991 in 2,000 others, odds 100 times
# the calibration's worst. A deck whose own pictures show no confusion keeps the minimum.
ENROLLED_MARGIN: Final = math.log(200.0)
# With the thumbnail, the calibration of a deck the network reads well finds only wrong
# answers scoring near 0 (kde-standard, kde-penguins: at most 0.0004), so the minimum alone
# decides; at 0.9 a kde-penguins deck read a 4D as AD at 0.9045 (one corner, the other
# hidden) in 2,000 pictures. 0.95 was chosen on those 2,000 and checked on 2,000 others
# (docs/vision.md): the margin above a wrong answer nobody saw is a guess, not a bound.
ENROLLED_MINIMUM_THRESHOLD: Final = 0.95
# A picture that heads fitted on the others read as another card at least this surely is
# often mislabelled (a card not swapped before its picture was taken, a misnamed file), but
# not always: a correctly named bellot 8H read as TH at 0.9989 (the network confuses that
# design's 8 and 10). Either way its wrong answer drives the threshold up, so the deck stays
# safe but abstains on much; listing it tells the engineer what to look at.
SUSPECT_LABEL_SCORE: Final = 0.99
_CALIBRATION_FOLDS: Final = 4
# The face check's level sits this far (in correlation) above the margin of any face that
# agreed with a wrong corner reading in the deck's calibration: a step, not a calibrated
# distance (the calibrations of four designs met no such face at all; docs/vision.md).
_FACE_LEVEL_STEP: Final = 0.01
# What the unit-length thumbnail is multiplied by beside the embedding (whose length is about
# 14 to 17): large enough for the heads, fitted in a few hundred steps from the generic
# weights, to lean on the thumbnail where the embedding confuses two cards. Chosen on the enrolment
# pictures' own cross-fitted calibration, not on the pictures measured afterwards
# (docs/vision.md): of 20, 30 and 40, 30 kept the most calibration pictures in all over six
# designs; 0 (the embedding alone) reads 68 % to 99.65 % of those designs' cards.
APPEARANCE_WEIGHT: Final = 30.0


@dataclass(frozen=True, slots=True)
class LabelledImage:
    path: Path
    card: Card


def card_from_filename(path: Path) -> Card:
    """``QH_0007.png`` -> QH; :class:`ConfigurationError` naming the file otherwise."""
    label = path.stem.split("_", 1)[0]
    try:
        return parse_card(label)
    except Exception as error:
        raise ConfigurationError(
            f"{path.name}: the file name must start with the card, like QH_0007.png"
        ) from error


def labelled_images(directory: Path) -> list[LabelledImage]:
    """Every image in ``directory`` with the card its name starts with, sorted by name."""
    if not directory.is_dir():
        raise ConfigurationError(f"{directory} is not a directory")
    paths = sorted(p for p in directory.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        raise ConfigurationError(f"no images (.png, .jpg) in {directory}")
    return [LabelledImage(path, card_from_filename(path)) for path in paths]


def read_image(path: Path) -> np.ndarray:
    """A BGR uint8 image from disk; :class:`ConfigurationError` if it cannot be read."""
    import cv2

    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        if path.is_file() and path.stat().st_size == 0:
            raise ConfigurationError(
                f"{path} is empty (a `livetable camera enrol` stopped while saving it "
                "leaves one): delete it, or run camera enrol again, which removes it"
            )
        raise ConfigurationError(f"{path} is not an image OpenCV can read")
    return image


@dataclass(frozen=True)
class _Picture:
    """What the generic network made of one enrolment picture."""

    card: Card
    features: np.ndarray  # (candidates, heads' inputs): embedding, then weighted thumbnail
    ranks: np.ndarray  # (candidates,) rank label 0..13 per candidate, -1 = left out
    suits: np.ndarray  # (candidates,) suit label 0..3, -1 = none or left out
    faces: list[Face]  # the card warped from each candidate as if it were an index corner


def _read_picture(
    classifier: CornerClassifier, card: Card, image: np.ndarray, appearance_weight: float
) -> _Picture | None:
    import numpy as np

    candidates = find_corners(image)
    if not candidates:
        return None
    patches = np.stack([cut_patch(image, candidate) for candidate in candidates])
    prediction = classifier.predict(normalise_patches(patches))
    index_probability = 1.0 - prediction.rank[:, NO_INDEX_CLASS]
    # One card per picture: its index corners are the likeliest candidate and the likeliest
    # one facing the other way (the second index corner is the first turned half a turn);
    # the generic network's "is an index" need not be confident on a design it never saw.
    # Every other corner of the picture is a plain corner or something else: "no index",
    # which teaches the deck's head that this deck's pip corners name no card.
    ranked = [int(i) for i in np.argsort(index_probability)[::-1]]
    index_corners: set[int] = set()
    if index_probability[ranked[0]] >= _INDEX_POSSIBLE:
        index_corners.add(ranked[0])
        first_axis = np.array(candidates[ranked[0]].x_axis)
        for i in ranked[1:]:
            if float(np.array(candidates[i].x_axis) @ first_axis) < -0.5:
                if index_probability[i] >= _INDEX_POSSIBLE:
                    index_corners.add(i)
                break
    ranks = np.full(len(candidates), NO_INDEX_CLASS, np.int64)
    suits = np.full(len(candidates), -1, np.int64)
    for i in index_corners:
        ranks[i] = RANKS.index(card.rank)
        suits[i] = SUITS.index(card.suit)
    features = heads_input(prediction.embedding, patches, appearance_weight)
    # The card's other index corner is looked for among its labelled index corners, as the
    # recogniser looks among the corners reading the card's rank (the faces the calibration
    # compares are these: for a misread card the recogniser's may differ, where a corner
    # reading the wrong rank lies where the card's other index would).
    labelled = [candidates[i] for i in sorted(index_corners)]
    faces = [warp_face(image, candidate, candidates, labelled) for candidate in candidates]
    return _Picture(card, features, ranks, suits, faces)


def _samples(pictures: list[_Picture]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features, rank labels 0..13, suit labels 0..3 or -1) of the usable corners."""
    import numpy as np

    features = np.concatenate([p.features for p in pictures])
    ranks = np.concatenate([p.ranks for p in pictures])
    suits = np.concatenate([p.suits for p in pictures])
    usable = ranks >= 0
    return features[usable], ranks[usable], suits[usable]


def _fit_linear(
    features: np.ndarray,
    labels: np.ndarray,
    weight: np.ndarray,
    bias: np.ndarray,
    iterations: int,
    pull: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Softmax regression from (weight, bias), by full-batch Adam, with an L2 pull back to
    the starting weights. Classes count equally, however many examples each has.

    All in float32: a float32 matrix times a float64 one takes numpy's slow path, and with
    the thumbnail (480 values a corner) that made enrolling 1,040 pictures take minutes."""
    import numpy as np

    features = np.asarray(features, np.float32)
    classes = weight.shape[1]
    counts = np.bincount(labels, minlength=classes).astype(np.float32)
    sample_weight = (1.0 / np.maximum(counts, 1.0))[labels]
    sample_weight /= sample_weight.sum()
    one_hot = np.eye(classes, dtype=np.float32)[labels]
    start_weight, start_bias = weight.astype(np.float32), bias.astype(np.float32)
    parameters = [start_weight.copy(), start_bias.copy()]
    moments = [np.zeros_like(p) for p in parameters]
    squares = [np.zeros_like(p) for p in parameters]
    rate, beta1, beta2, pull = np.float32(0.01), 0.9, 0.999, np.float32(pull)
    for step in range(1, iterations + 1):
        logits = features @ parameters[0] + parameters[1]
        logits -= logits.max(axis=1, keepdims=True)
        probabilities = np.exp(logits)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        error = (probabilities - one_hot) * sample_weight[:, None]
        gradients = [
            features.T @ error + pull * (parameters[0] - start_weight),
            error.sum(axis=0) + pull * (parameters[1] - start_bias),
        ]
        for parameter, gradient, moment, square in zip(
            parameters, gradients, moments, squares, strict=True
        ):
            moment *= beta1
            moment += (1 - beta1) * gradient
            square *= beta2
            square += (1 - beta2) * gradient**2
            corrected = moment / (1 - beta1**step)
            parameter -= rate * corrected / (np.sqrt(square / (1 - beta2**step)) + 1e-8)
    return parameters[0], parameters[1]


def fine_tune(
    generic: Heads,
    features: np.ndarray,
    ranks: np.ndarray,
    suits: np.ndarray,
    iterations: int = 400,
    pull: float = 1e-3,
) -> Heads:
    """The generic heads fitted to one deck's corner features: the embedding (which the
    generic heads read) and then any further values (the thumbnail), whose weights start at
    zero and are pulled back towards it."""
    import numpy as np

    further = features.shape[1] - generic.inputs
    if further < 0:
        raise ValueError(f"features of {features.shape[1]} values for heads over {generic.inputs}")
    rank_start = np.concatenate(
        [generic.rank_weight, np.zeros((further, RANK_CLASSES), np.float32)]
    )
    suit_start = np.concatenate(
        [generic.suit_weight, np.zeros((further, SUIT_CLASSES), np.float32)]
    )
    rank_weight, rank_bias = _fit_linear(
        features, ranks, rank_start, generic.rank_bias, iterations, pull
    )
    has_suit = suits >= 0
    suit_weight, suit_bias = _fit_linear(
        features[has_suit],
        suits[has_suit],
        suit_start,
        generic.suit_bias,
        iterations,
        pull,
    )
    return Heads(rank_weight, rank_bias, suit_weight, suit_bias)


def _index_faces(pictures: list[_Picture]) -> list[tuple[int, Face]]:
    """(face index, warped face) of every corner labelled as an index corner."""
    return [
        (ALL_FACES.index(picture.card), picture.faces[i])
        for picture in pictures
        for i in range(len(picture.faces))
        if picture.ranks[i] < NO_INDEX_CLASS
    ]


@dataclass(frozen=True)
class _Calibration:
    threshold: float
    face_level: float
    info: dict[str, object]


def _calibrate(
    generic: Heads,
    pictures: list[_Picture],
    minimum: float = ENROLLED_MINIMUM_THRESHOLD,
    margin: float = ENROLLED_MARGIN,
) -> _Calibration:
    """Threshold from cross-fitting on the enrolment pictures themselves: each quarter is
    read by heads fitted on the other three, and the threshold goes above the best score of
    any wrong answer, plus ``margin`` log-odds (at least ``minimum``).

    One threshold for every answer, however many corners give it. Every wrong reading in
    the calibrations of six designs came from one corner (its other index hidden, or cut
    at the wrong scale); a threshold over two-corner answers calibrated apart would abstain
    less, but it is not safe: bellot's calibration had no wrong answer from two corners, and
    2,000 other pictures then gave one (2C read as 2S at 0.9946, docs/vision.md).

    The same folds calibrate the face check (:mod:`vision.face`): each quarter's faces are
    compared with the mean faces of the other three. Its level goes above the margin of
    every face that agreed with a wrong corner reading (at any score: those are the readings
    the check exists to stop), or is 0 when none did."""
    import numpy as np

    from vision.recognise import (
        CONFLICT_SCORE,
        dispute_rivals,
        face_probabilities_from,
        is_ambiguous,
        is_standoff,
        noisy_or,
        rival_ranks,
        threshold_above,
    )

    # Each card's pictures are dealt round the folds in turn, so every fold's heads have seen
    # every card (a card missing from a fold would be misread there for want of examples,
    # which says nothing about the deck).
    seen: dict[Card, int] = {}
    folds = []
    for picture in pictures:
        folds.append(seen.get(picture.card, 0) % _CALIBRATION_FOLDS)
        seen[picture.card] = seen.get(picture.card, 0) + 1
    # score, right, answered at a threshold, the best face, what the face said of it, the
    # best face's strongest corner and how many corners read it (at even odds at least)
    outcomes: list[tuple[float, bool, bool, int, FaceReading, float, int]] = []
    agreeing_wrong: list[float] = []  # the face's margin where it agreed with a wrong reading
    # Readings whose corners disagree (score, right, best face, the face's word with its
    # rank's margin over the rival ranks): the face may settle them (vision.deck.face_settles).
    disputes: list[tuple[float, bool, int, FaceReading]] = []
    suspects: list[tuple[float, Card, Card]] = []
    for fold in range(_CALIBRATION_FOLDS):
        fit_on = [p for p, f in zip(pictures, folds, strict=True) if f != fold]
        score_on = [p for p, f in zip(pictures, folds, strict=True) if f == fold]
        if not fit_on or not score_on:
            continue
        features, ranks, suits = _samples(fit_on)
        heads = fine_tune(generic, features, ranks, suits)
        templates = build_templates(_index_faces(fit_on))
        parts = suit_parts(templates)
        for picture in score_on:
            rank, suit = heads.probabilities(picture.features)
            probabilities = face_probabilities_from(rank, suit)
            scores = noisy_or(probabilities)
            order = np.argsort(scores)[::-1]
            best = int(order[0])
            read_as = ALL_FACES[best]
            # The face as the recogniser warps it: from the corner that reads the best face
            # most surely.
            face = picture.faces[int(np.argmax(probabilities[:, best]))]
            rivals = dispute_rivals(scores, [probabilities], best)
            disputed = bool(rivals) and scores[best] >= CONFLICT_SCORE
            said = with_rank_margins(
                templates,
                face,
                reading(templates, face, best, parts),
                best,
                rival_ranks(rivals, best) if disputed else frozenset(),
            )
            if read_as != picture.card and face_agrees(said, best, level=0.0):
                agreeing_wrong.append(said.margin)
            if disputed:
                disputes.append((float(scores[best]), read_as == picture.card, best, said))
            if is_ambiguous(float(scores[best]), float(scores[order[1]])):
                continue  # abstains whatever the threshold
            # A reading whose corners disagree (is_standoff) abstains too, but is not
            # skipped: when the face it scores best is wrong, a corner read a wrong card
            # confidently, and with the other corner hidden the deck would answer it.
            answers = not is_standoff(probabilities, best)
            outcomes.append(
                (
                    float(scores[best]),
                    read_as == picture.card,
                    answers,
                    best,
                    said,
                    float(probabilities[:, best].max()),
                    int((probabilities[:, best] >= CONFLICT_SCORE).sum()),
                )
            )
            if read_as != picture.card and scores[best] >= SUSPECT_LABEL_SCORE:
                suspects.append((float(scores[best]), picture.card, read_as))
    wrong = [score for score, right, *_ in outcomes if not right]
    worst = max(wrong, default=0.0)
    threshold = threshold_above(worst, margin, minimum)
    # A face that would settle a wrong reading's dispute agreed with it too: the level goes
    # above the lesser of its margins, which is enough to refuse it.
    agreeing_wrong += [
        min(said.margin, said.rank_margin)
        for _score, right, best, said in disputes
        if not right and face_settles(said, best, 0.0)
    ]
    face_level = max(agreeing_wrong) + _FACE_LEVEL_STEP if agreeing_wrong else 0.0
    kept = confirmed = vetoed = 0
    for score, right, answers, best, said, strongest, corners in outcomes:
        if not (right and answers):
            continue
        # A score that no corner reaches the floor of alone needs the face, as one below
        # the threshold does (Recogniser.decide).
        if score >= threshold and strongest >= minimum:
            kept += 1
        elif score >= minimum and face_agrees(said, best, face_level):
            confirmed += 1
        elif score >= CONFLICT_SCORE and face_names_clearly(said, best, face_level):
            confirmed += 1  # below the floor, the face naming it clearly
        else:
            continue
        if face_names_other_suit(said, best) or face_names_other_rank(said, best, corners):
            vetoed += 1  # an answer the veto turns away
    settled = [
        right for _score, right, best, said in disputes if face_settles(said, best, face_level)
    ]
    return _Calibration(
        threshold,
        face_level,
        {
            "calibration_pictures": len(pictures),
            "calibration_wrong_without_threshold": len(wrong),
            "calibration_highest_wrong_score": worst,
            "calibration_correct_at_threshold": kept / max(len(pictures), 1),
            "calibration_face_agreed_with_wrong": len(agreeing_wrong),
            "calibration_face_level": face_level,
            "calibration_correct_with_face": (kept + confirmed - vetoed + sum(settled))
            / max(len(pictures), 1),
            "calibration_vetoed_right": vetoed,
            # Of the readings whose corners disagreed, those the face settled, right and
            # wrong (wrong ones stay under the face level by its making).
            "calibration_face_settled_right": sum(settled),
            "calibration_face_settled_wrong": len(settled) - sum(settled),
            "calibration_suspect_labels": [
                f"a picture labelled {label} reads as {read_as} ({score:.4f})"
                for score, label, read_as in sorted(suspects, key=lambda s: s[0], reverse=True)[:10]
            ],
        },
    )


def enrol(
    classifier: CornerClassifier,
    examples: Iterable[tuple[Card, np.ndarray]],
    name: str = "",
    threshold: float | None = None,
    appearance_weight: float = APPEARANCE_WEIGHT,
) -> EnrolledDeck:
    """Fit an :class:`EnrolledDeck` from (card, BGR image) pairs of one deck.

    Every face must appear at least once: a face never seen cannot be read.
    ``appearance_weight`` 0 fits the heads on the embedding alone (as before format 3).
    """

    if threshold is not None and not 0.0 < threshold <= 1.0:
        raise ConfigurationError(f"a threshold is a probability above 0, not {threshold}")
    pictures = [
        picture
        for card, image in examples
        if (picture := _read_picture(classifier, card, image, appearance_weight)) is not None
    ]
    if not pictures:
        raise ConfigurationError("no card corners were found in the enrolment images")
    features, ranks, suits = _samples(pictures)
    seen = {(int(r), int(s)) for r, s in zip(ranks, suits, strict=True) if s >= 0}
    missing = [
        str(card)
        for card in ALL_FACES
        if (RANKS.index(card.rank), SUITS.index(card.suit)) not in seen
    ]
    if missing:
        raise ConfigurationError(
            f"no readable index corner of {', '.join(missing)} in the enrolment images; "
            "add pictures of those cards"
        )
    generic = Heads.load(classifier.path.with_suffix(".heads.npz"))
    heads = fine_tune(generic, features, ranks, suits)
    info: dict[str, object] = {
        "name": name,
        "pictures": len(pictures),
        "locator_revision": LOCATOR_REVISION,
        "face_revision": FACE_REVISION,
        "index_samples": int((ranks < NO_INDEX_CLASS).sum()),
        "no_index_samples": int((ranks == NO_INDEX_CLASS).sum()),
    }
    # Without a calibration there is no level for the face check, and no face check.
    faces = None
    if threshold is None:
        if min(Counter(p.card for p in pictures).values()) < _CALIBRATION_FOLDS:
            # Too few pictures of some card to read each one with heads fitted without it:
            # no calibration is possible, so keep the generic model's (strict) threshold.
            threshold = classifier.threshold
            info["calibration"] = (
                f"none: fewer than {_CALIBRATION_FOLDS} pictures of some card; "
                "the generic threshold is used"
            )
        else:
            calibration = _calibrate(generic, pictures)
            threshold = calibration.threshold
            info.update(calibration.info)
            faces = FaceCheck(
                build_templates(_index_faces(pictures)),
                floor=ENROLLED_MINIMUM_THRESHOLD,
                level=calibration.face_level,
            )
    else:
        info["calibration"] = "none: the threshold was given"
    return EnrolledDeck(
        heads=heads,
        model_digest=classifier.digest,
        threshold=threshold,
        info=info,
        appearance_weight=appearance_weight,
        faces=faces,
    )
