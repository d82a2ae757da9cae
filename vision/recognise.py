"""Recognise the card in an image region, or abstain.

Every corner candidate found by :mod:`vision.locate` is read by the corner classifier (or by
an enrolled deck's head). Each candidate gives a probability for each of the 52 faces; the
candidates are combined by noisy-OR (a card is there if any of its index corners says so),
so a card whose two index corners both read the same face scores higher than either alone.

The answer is the best face only if its score reaches the calibrated threshold **and** no
other face is also supported (score 0.5 or more, and within a factor 20 in odds of the best):
two index corners that disagree mean a neighbouring card's index is in view, or a misread,
and a wrong card is far worse than none.
With an enrolled deck that has mean faces (:mod:`vision.face`), a reading below the deck's
threshold but above its floor is answered when the whole face, warped from the corner that
read it, names the same card: two independent looks agreeing (so is one over the threshold
that no corner reads at the floor alone, two weak corners lifting it together); below the
floor (a corner reading it at even odds at least) when the face names it clearly; a reading
whose corners disagree when the face clearly names the best one (and its rank over a rival
rank); and any answer is withdrawn when the face clearly names the same rank in another
suit (the suit veto), or prefers another rank (the rank veto).
Across consecutive frames of the same position, :meth:`Recogniser.recognise_frames` combines
the per-frame scores by their mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from controller.kernel.cards import ALL_FACES, RANKS, SUITS, Card
from vision.locate import CARD_ASPECT, CornerCandidate, cut_patch, find_corners, normalise_patches
from vision.model import DEFAULT_MODEL, CornerClassifier

if TYPE_CHECKING:
    import numpy as np

    from vision.deck import EnrolledDeck
    from vision.face import FaceReading

# A second face with this much support makes the answer ambiguous, unless the best face is
# at least this many log-odds ahead (odds 20 times higher): a plain pip corner that half
# resembles another index must not veto two index corners that agree.
CONFLICT_SCORE: Final = 0.5
CONFLICT_MARGIN: Final = math.log(20.0)
# The margin lets more corners outvote fewer, never one corner another: when a corner reads
# another face this confidently and the best face has no more corners behind it, the two
# index corners of one card disagree, and the network's confidence cannot say which is right
# (plastic's 2C, its corners reading 2C at 0.954 and 2S at 0.998, scored 2S at 0.998 and
# passed its deck's threshold of 0.9954; docs/vision.md).
STANDOFF_CORNER: Final = 0.9

# A card slot's region is centred on the slot (drivers/camera/). In a blackjack cascade the
# card underneath shows its index inside the slot's region too, its centre about 0.4 card
# widths away; a card is off its slot by at most ~0.1 width and the locator's estimate of the
# centre errs by about as much again.
SLOT_CENTRE_TOLERANCE: Final = 0.22
# On a layout a neighbouring card may cover one index corner, and part of the other: an answer
# only one corner gives is weaker evidence. With decks enrolled from single cards (whose own
# calibration never sees a covered index, so their threshold was the floor, then 0.9), full baccarat
# tables on the camera simulator gave 1-4 wrong answers in 588 reads, each from one corner,
# at 0.91-0.99; at 0.995 for one corner none, in 3 x 588 reads of scenes not used to choose
# it (docs/camera.md).
SLOT_SINGLE_CORNER_THRESHOLD: Final = 0.995


def implied_centre(candidate: CornerCandidate) -> tuple[float, float]:
    """Where the centre of the card lies if ``candidate`` is one of its index corners."""
    width = candidate.card_width
    height = width * CARD_ASPECT
    return (
        candidate.point[0] + candidate.x_axis[0] * width / 2 + candidate.y_axis[0] * height / 2,
        candidate.point[1] + candidate.x_axis[1] * width / 2 + candidate.y_axis[1] * height / 2,
    )


def centred_on(candidate: CornerCandidate, image_shape: tuple[int, ...], tolerance: float) -> bool:
    """True when the card whose index corner ``candidate`` would be lies at the image's
    centre, within ``tolerance`` card widths."""
    x, y = implied_centre(candidate)
    height, width = image_shape[:2]
    return math.hypot(x - width / 2, y - height / 2) <= tolerance * candidate.card_width


# Faces in ALL_FACES order as (rank index, suit index) into the network's heads.
_FACE_RANK: Final = tuple(RANKS.index(card.rank) for card in ALL_FACES)
_FACE_SUIT: Final = tuple(SUITS.index(card.suit) for card in ALL_FACES)


def _log_odds(probability: float) -> float:
    clipped = min(max(probability, 1e-6), 1.0 - 1e-6)
    return math.log(clipped / (1.0 - clipped))


def noisy_or(probabilities: np.ndarray) -> np.ndarray:
    """(52,) score of each face from (candidates, 52) per-corner probabilities: the chance
    that at least one corner reads it, as if the corners were independent witnesses. They
    are not, on a design the network misreads: both index corners then read the same wrong
    card, and the score overstates how sure that is (plastic's 2C read as 2S at 0.97 and 0.91
    scores 0.997). The threshold is calibrated on such scores, not on the corners."""
    import numpy as np

    return 1.0 - np.prod(1.0 - probabilities, axis=0)


def threshold_above(worst_wrong: float, margin: float, minimum: float) -> float:
    """A calibrated threshold: ``margin`` log-odds above the highest score a wrong reading
    reached in calibration, and never below ``minimum`` (a calibration that met no wrong
    reading says nothing about the ones it never saw). The generic model's calibration and
    an enrolled deck's both set their threshold so."""
    clipped = min(max(worst_wrong, 1e-12), 1.0 - 1e-12)
    above = math.log(clipped / (1.0 - clipped)) + margin
    return max(minimum, 1.0 / (1.0 + math.exp(-above)))


def ambiguous_faces(scores: np.ndarray, best: int) -> list[int]:
    """The faces other than ``best`` that make a reading ambiguous (:func:`is_ambiguous`)."""
    confidence = float(scores[best])
    return [
        face
        for face in range(len(scores))
        if face != best and is_ambiguous(confidence, float(scores[face]))
    ]


def is_ambiguous(best: float, runner_up: float) -> bool:
    """A second face is supported (score 0.5 or more) and not far less than the best one
    (within :data:`CONFLICT_MARGIN` log-odds): two cards may be in view, or one is misread."""
    return runner_up >= CONFLICT_SCORE and _log_odds(best) - _log_odds(runner_up) < CONFLICT_MARGIN


def standoff_faces(probabilities: np.ndarray, best: int) -> list[int]:
    """From (candidates, 52) corner probabilities: each face other than ``best`` that a
    corner reads at :data:`STANDOFF_CORNER` or more while no more corners read ``best`` (at
    0.5 or more) than read it: one corner against another, which no margin in scores can
    settle. Any other face, not only the runner-up by score: two weaker corners of a third
    face may outscore the confident one."""
    import numpy as np

    if not len(probabilities):
        return []
    supporters = (probabilities >= CONFLICT_SCORE).sum(axis=0)
    confident = probabilities.max(axis=0) >= STANDOFF_CORNER
    confident[best] = False
    return [int(face) for face in np.flatnonzero(confident & (supporters >= supporters[best]))]


def is_standoff(probabilities: np.ndarray, best: int) -> bool:
    """A corner reads another face than ``best`` against it (:func:`standoff_faces`)."""
    return bool(standoff_faces(probabilities, best))


def dispute_rivals(scores: np.ndarray, frames: list[np.ndarray], best: int) -> set[int]:
    """The faces the corners set against ``best``: :func:`ambiguous_faces` of the (52,)
    ``scores`` and :func:`standoff_faces` of any frame's (candidates, 52) probabilities.
    The face may settle such a dispute (:meth:`vision.deck.FaceCheck.settles`); the
    recogniser and the enrolment's calibration ask it here alike."""
    return set(ambiguous_faces(scores, best)).union(
        *(standoff_faces(frame, best) for frame in frames)
    )


def index_corners_of(corners: CornerReadings, face: int) -> list[CornerCandidate]:
    """The corners of ``corners`` that read the rank of face ``face`` at even odds or more,
    in any suit (a corner misreading the suit is still the card's index): those that may be
    the card's other index corner when its face is warped (:func:`vision.face.card_quad`)."""
    from vision.face import FACES_OF_RANK

    of_rank = list(FACES_OF_RANK[ALL_FACES[face].rank])
    reads_rank = corners.probabilities[:, of_rank].sum(axis=1) >= CONFLICT_SCORE
    return [
        candidate for candidate, reads in zip(corners.candidates, reads_rank, strict=True) if reads
    ]


def rival_ranks(rivals: set[int], best: int) -> frozenset[str]:
    """The ranks other than ``best``'s among the faces ``rivals``."""
    return frozenset(ALL_FACES[face].rank for face in rivals) - {ALL_FACES[best].rank}


def face_probabilities_from(rank: np.ndarray, suit: np.ndarray) -> np.ndarray:
    """(N, 52) P(face) = P(rank) x P(suit) from the heads' (N, 14) and (N, 4) outputs."""
    return rank[:, _FACE_RANK] * suit[:, _FACE_SUIT]


@dataclass(frozen=True, slots=True)
class Recognition:
    """The answer for one image: a card, or None when the recogniser abstains."""

    card: Card | None
    confidence: float  # the best face's score, 0..1 (also when abstaining)
    # "recognised", "no card found", "ambiguous", "corners disagree", "below threshold",
    # "below threshold for one corner", "corners weak alone", "face names another suit",
    # "face names another rank"
    reason: str
    best: Card | None = None  # the best face even when abstaining, for diagnostics
    corners: int = 0
    scores: np.ndarray | None = field(default=None, repr=False)  # (52,) per face
    # Answered below the deck's threshold because the face named the same card.
    face_confirmed: bool = False
    # Answered although corners read another face against it: the face settled which (the
    # suit, and the rank where a corner read another).
    face_settled: bool = False


@dataclass(frozen=True)
class CornerReadings:
    """What the corners of one image read: the face check warps the card from them."""

    probabilities: np.ndarray  # (candidates, 52) probability of each face at each candidate
    candidates: list[CornerCandidate]  # the candidates read (slot-centred ones, if so)
    found: list[CornerCandidate]  # every corner the locator found (they refine a warp)


class Recogniser:
    """Reads rank and suit of the card in an image. It keeps nothing of one image for the
    next; its corner network is not safe to share between threads (see
    :class:`vision.model.CornerClassifier`), so the camera reader keeps one per worker.

    By default the card may lie anywhere in the image. With ``slot_centred`` (a camera's
    card-slot region), only index corners of a card lying at the image's centre count: the
    neighbouring cards of a cascade, whose indices show inside the region, are not read.
    """

    def __init__(
        self,
        model_path: Path = DEFAULT_MODEL,
        deck: EnrolledDeck | None = None,
        threshold: float | None = None,
        slot_centred: bool = False,
        single_corner_threshold: float | None = None,
    ) -> None:
        from controller.kernel.errors import ConfigurationError

        self.classifier = CornerClassifier(model_path)
        self.deck = deck
        self.slot_centred = slot_centred
        # When set, an answer that only one index corner gives (the other hidden, e.g. under
        # a neighbouring card) needs at least this score; two corners agreeing need only
        # the threshold.
        self.single_corner_threshold = single_corner_threshold
        if deck is not None and deck.model_digest != self.classifier.digest:
            raise ConfigurationError(
                "the enrolled deck was made with another vision model; enrol the deck again"
            )
        # The face check's level was calibrated together with the deck's threshold; a
        # threshold given instead (stricter, or 0 for calibration) is applied as given.
        self.face_check = deck.faces if deck is not None and threshold is None else None
        if threshold is not None:
            self.threshold = threshold
        elif deck is not None:
            self.threshold = deck.threshold
        else:
            self.threshold = self.classifier.threshold

    def face_probabilities(self, image: np.ndarray) -> np.ndarray:
        """(candidates, 52) probability of each face at each corner candidate."""
        return self.read_corners(image).probabilities

    def read_corners(self, image: np.ndarray) -> CornerReadings:
        """The image's corner candidates and what each reads (:class:`CornerReadings`)."""
        import numpy as np

        if image is None or image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
            from controller.kernel.errors import ConfigurationError

            raise ConfigurationError("an image must be a BGR uint8 array")
        found = find_corners(image)
        candidates = found
        if self.slot_centred:
            candidates = [
                candidate
                for candidate in candidates
                if centred_on(candidate, image.shape, SLOT_CENTRE_TOLERANCE)
            ]
        if not candidates:
            return CornerReadings(np.zeros((0, len(ALL_FACES))), candidates, found)
        patches = np.stack([cut_patch(image, candidate) for candidate in candidates])
        prediction = self.classifier.predict(normalise_patches(patches))
        rank, suit = prediction.rank, prediction.suit
        if self.deck is not None:
            rank, suit = self.deck.probabilities(prediction.embedding, patches)
        return CornerReadings(face_probabilities_from(rank, suit), candidates, found)

    def scores(self, image: np.ndarray) -> np.ndarray:
        """(52,) noisy-OR score of each face over the image's corner candidates."""
        return noisy_or(self.face_probabilities(image))

    def decide(
        self,
        scores: np.ndarray,
        corners: int = 0,
        supporting: int | None = None,
        strongest: float | None = None,
        standoff: bool = False,
        face_confirmed: bool = False,
        face_settled: bool = False,
    ) -> Recognition:
        """Turn face scores into an answer: the best face, or an abstention. ``supporting``
        is how many corner candidates (of one frame) read the best face at 0.5 or more, and
        ``strongest`` the best single candidate's probability of it; None when unknown (the
        single-corner threshold is then not applied). An answer from one corner is judged by
        that corner alone: weak candidates must not lift it over the bar by noisy-OR.
        ``standoff`` (see :func:`is_standoff`): the corners disagree, no answer.
        ``face_confirmed``: the face named the best face too in every frame it was
        looked at (:meth:`face_readings`), which stands in for the threshold (never for the
        other rules). ``face_settled``: the corners disagree (ambiguous, or a standoff) and
        the face settled it for the best face in every frame
        (:meth:`vision.deck.FaceCheck.settles`): named it clearly, and its rank over any
        rival rank; that stands in for the threshold too. With a face check, a score over
        the threshold that no corner reaches the check's floor of alone (``strongest``)
        needs ``face_confirmed`` (or ``face_settled``) as one below it does: "corners weak
        alone"."""
        import numpy as np

        order = np.argsort(scores)[::-1]
        best, runner_up = int(order[0]), int(order[1])
        confidence = float(scores[best])
        best_card = ALL_FACES[best]
        single = self.single_corner_threshold
        # Noisy-OR takes the corners for independent witnesses, and they are not when the
        # deck's network misreads a design the same way in both (a jolly-royal 3C read as 3S
        # at 0.84 and 0.81 scored 0.971, over its deck's threshold). With a face check, a
        # score no corner reaches the floor of alone stands for the threshold only as a
        # reading below it does: with the face agreeing.
        check = self.face_check
        weak = check is not None and strongest is not None and strongest < check.floor
        ambiguous = is_ambiguous(confidence, float(scores[runner_up]))
        settles = face_settled
        if not math.isfinite(confidence) or confidence <= 0.0:
            # Not finite only from broken heads: every comparison below would be false.
            reason = "no card found"
        elif ambiguous and not settles:
            reason = "ambiguous"
        elif standoff and not settles:
            reason = "corners disagree"
        elif confidence < self.threshold and not (face_confirmed or settles):
            reason = "below threshold"
        elif weak and not (face_confirmed or settles):
            reason = "corners weak alone"
        elif (
            single is not None
            and supporting is not None
            and supporting < 2
            and (confidence if strongest is None else strongest) < single
        ):
            reason = "below threshold for one corner"
        else:
            settled = settles and (standoff or ambiguous)
            confirmed = face_confirmed and (confidence < self.threshold or weak) and not settled
            return Recognition(
                best_card, confidence, "recognised", best_card, corners, scores, confirmed, settled
            )
        return Recognition(None, confidence, reason, best_card, corners, scores)

    def recognise(self, image: np.ndarray) -> Recognition:
        """The card in ``image`` (BGR uint8), or None with the reason for abstaining."""
        return self.recognise_frames([image])

    def face_readings(
        self,
        frames: list[tuple[np.ndarray, CornerReadings]],
        best: int,
        rival_ranks: frozenset[str] = frozenset(),
    ) -> list[FaceReading]:
        """What the face says of face ``best`` (:func:`vision.face.reading`) in each frame
        (image and its corner readings) where a corner reads it at 0.5 or more, warped from
        the corner that reads it most surely; none without a face check. With
        ``rival_ranks``, and where the face names another rank, also the best face's rank's
        least margin over them (:func:`vision.face.with_rank_margins`). Warping and
        aligning cost a few milliseconds: done once for the confirmation, the settling and
        the veto."""
        import numpy as np

        from vision.face import reading, warp_face, with_rank_margins

        check = self.face_check
        if check is None:
            return []
        said = []
        for image, corners in frames:
            probabilities = corners.probabilities
            if not len(probabilities) or probabilities[:, best].max() < CONFLICT_SCORE:
                continue
            corner = corners.candidates[int(np.argmax(probabilities[:, best]))]
            face = warp_face(image, corner, corners.found, index_corners_of(corners, best))
            one = reading(check.templates, face, best, check.parts)
            said.append(with_rank_margins(check.templates, face, one, best, rival_ranks))
        return said

    def recognise_frames(self, images: list[np.ndarray]) -> Recognition:
        """One answer from consecutive frames of the same card position (voting)."""
        import numpy as np

        # The mean, not noisy-OR: frames of a still card are not independent evidence, and a
        # design misread the same way in every frame must not become confident by repetition.
        read = [(image, self.read_corners(image)) for image in images]
        per_frame = [readings.probabilities for _image, readings in read]
        combined = np.zeros(len(ALL_FACES))
        for probabilities in per_frame:
            if len(probabilities):
                combined += noisy_or(probabilities)
        corners = sum(len(probabilities) for probabilities in per_frame)
        if corners == 0:
            return Recognition(None, 0.0, "no card found", None, 0, combined)
        best = int(np.argsort(combined)[::-1][0])  # as decide() orders them
        # Two corners agree if they do in any one frame (the frames show the same card).
        supporting = max(
            (int((frame[:, best] >= CONFLICT_SCORE).sum()) for frame in per_frame if len(frame)),
            default=0,
        )
        # The best single corner's probability, averaged over the frames as the scores are.
        strongest = sum(float(frame[:, best].max()) for frame in per_frame if len(frame))
        count = max(len(images), 1)
        standoff = any(is_standoff(frame, best) for frame in per_frame)
        confidence = float(combined[best]) / count
        check = self.face_check
        if check is None:
            return self.decide(combined / count, corners, supporting, strongest / count, standoff)
        # The face is looked at only where it can change the answer: to confirm a reading
        # below the threshold, to settle a dispute over the suit, and to veto an answer.
        said: list[FaceReading] | None = None
        face_confirmed = face_settled = False
        weak_corners = strongest / count < check.floor  # as decide() judges them
        needs_face = confidence < self.threshold or weak_corners
        if check.floor <= confidence and needs_face and not standoff:
            said = self.face_readings(read, best)
            face_confirmed = bool(said) and all(check.agrees(one, best) for one in said)
        elif CONFLICT_SCORE <= confidence < check.floor and not standoff:
            # Below the floor the face must name the card clearly: the corners' reading is
            # in the range where the calibrations' wrong readings lie.
            said = self.face_readings(read, best)
            face_confirmed = bool(said) and all(check.names_clearly(one, best) for one in said)
        # Corners that read another face against the best one: the face may say which, at
        # any score where a corner reads the best face at even odds (below the floor the
        # face lifts a reading only so clearly, too).
        rivals = dispute_rivals(combined / count, per_frame, best)
        if rivals and confidence >= CONFLICT_SCORE:
            ranks = rival_ranks(rivals, best)
            if said is None or ranks:
                said = self.face_readings(read, best, ranks)
            face_settled = bool(said) and all(check.settles(one, best) for one in said)
        answer = self.decide(
            combined / count,
            corners,
            supporting,
            strongest / count,
            standoff,
            face_confirmed,
            face_settled,
        )
        if answer.card is None:
            return answer
        if said is None:
            said = self.face_readings(read, best)
        if any(check.names_other_suit(one, best) for one in said):
            return replace(
                answer, card=None, reason="face names another suit", face_confirmed=False
            )
        if any(check.names_other_rank(one, best, supporting) for one in said):
            return replace(
                answer, card=None, reason="face names another rank", face_confirmed=False
            )
        return answer
