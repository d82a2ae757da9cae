"""The whole face of a located card, compared with an enrolled deck's mean faces.

An enrolled deck's corner reading is the answer; this is a second, independent look that
can confirm it. The index corner's frame (and the card's other corners, where the locator
found them) give the card's four corners; the card is warped to a small upright face,
aligned to the mean face of the rank read (all four suits alike, so the alignment favours no
suit), and compared by masked normalised correlation with the deck's 52 mean faces: that
names the rank. The suit is read apart, where the rank's four mean faces differ (the pips,
high-passed, :func:`suit_correlations`): over the whole face the few pixels that tell a
spade from a club are drowned by everything else on it (the parts every suit shares, what
covers the card, the light). A suit
hidden under a neighbouring card's edge in the index corner is still printed in the centre
pips, and the pips' layout carries the rank.

Alone this cue is not sure enough to answer (it names the wrong card on a few in a hundred
pictures, docs/vision.md). It is only used beside a corner reading:
:mod:`vision.recognise` lets a reading the deck's threshold turns away through when the face
names the same card, and withdraws an answer whose suit the face clearly names otherwise.

Pure image code: numpy and OpenCV, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, NamedTuple

from controller.kernel.cards import ALL_FACES, RANKS
from vision.locate import CARD_ASPECT, CornerCandidate

if TYPE_CHECKING:
    from collections.abc import Iterable

    import numpy as np

# 80 pixels across: a pip is 12-16 pixels, enough to tell a spade's point from a club's three
# leaves once the face is aligned (at 40, as before deck format 5, the faces of tango's
# right readings named their own suit 83 % of the time, at 80 with the suit parts 97 %;
# docs/vision.md). The height uses one nominal aspect for every design: a design's own aspect
# (1.33-1.44) only stretches its faces, the same way at enrolment and reading.
FACE_WIDTH: Final = 80
FACE_HEIGHT: Final = round(FACE_WIDTH * CARD_ASPECT)
# Another corner candidate this close (in card widths) to where the index corner's frame puts
# a corner of the card is taken as that corner: the frame's estimate of the far corners errs
# by the perspective and the card's own aspect, a found corner hardly at all.
_SNAP: Final = 0.2
# The card's other index corner (opposite_index_corner): a found corner whose frame is
# turned from the index corner's by at least this cosine on both axes (the locator's edges
# are straight to a few degrees), ...
_OPPOSITE_TURN: Final = 0.9
# ... this many estimated card widths along the index corner's short edge (the estimate
# errs by half when a cover cuts an edge short, or by the cover's length beyond the card)...
_OPPOSITE_WIDTH: Final = (0.4, 2.5)
# ... and this share of the nominal aspect down its long edge (designs run 1.33-1.44 against
# the nominal 1.45, and perspective stretches a card by a few per cent).
_OPPOSITE_ASPECT: Final = (0.85, 1.12)
# Redness (R - (G + B) / 2) beside the grey values, times this: hearts and diamonds against
# spades and clubs in the pips. Chosen on the enrolment pictures of bellot (1 and 2 against
# 0 and 0.5), the weight of 2 by a hair.
RED_WEIGHT: Final = 2.0
_ECC_STEPS: Final = 30
# ECC corrects a face warped from its index corner's frame by a few pixels, or rescales it
# where the card's width was misjudged (by half at most, as a cover cutting an edge short
# does). An alignment beyond these bounds is a fold, not kept (is_fold). On 500 right
# readings each of a neoclassical and a plastic fresh set, the 842 alignments within them
# raised the face's margin for its card by 0.036 and 0.118 on average; all 7 beyond them
# (stretching 1.8-14 times more one way than the other, three also scaling 2.5-8.9 times)
# lowered it, by 0.05-0.70. Stretches of 1.3-1.46 (a design's own aspect, perspective) mostly
# raised it.
_ECC_SCALE: Final = 2.0
_ECC_SHEAR: Final = 1.5
# Each rank's four faces (indices into ALL_FACES): the alignment's reference and the suit
# parts are taken over them.
FACES_OF_RANK: Final = {
    rank: tuple(i for i, card in enumerate(ALL_FACES) if card.rank == rank) for rank in RANKS
}
# The suit is read where a rank's four mean faces differ (pips, a court card's suit marks):
# the pixels whose variance over the four suits is at least this share of the largest...
SUIT_PART_SHARE: Final = 0.2
# ... high-passed (the face less its Gaussian blur of this sigma, in face pixels): the pips'
# outlines rather than their area. Both chosen on tango's and plastic's development sets
# (docs/vision.md): the parts gave most of the gain, the high-pass another point on tango.
SUIT_SHARPEN_SIGMA: Final = 3.0
# ... at the best of the face's shifts by up to this many pixels each way: the alignment
# leaves a face 2-3 pixels off its mean face at times, and a high-passed pip outline is about
# that wide, so a face that far off named a club's suit no better than chance. On 500 right
# readings each of plastic's and neoclassical's third fresh sets, shifts of 3 pixels left a
# suit matching under FACE_CONFIRM_MATCH on 11 and 13 (17 and 23 without), and named the
# wrong suit of none (3 on neoclassical without); 2 pixels left 11 and 13 with one wrong.
SUIT_SEARCH_PIXELS: Final = 3
# How a face is compared, recorded in each deck at enrolment: the face check's level was
# calibrated with one comparison, and a deck calibrated with another is read with a warning
# to enrol it again. 1: the suit compared in place; 2: at the best of small shifts; 3: the
# card's far end placed by its other index corner where one is found, an alignment that
# matches worse than none not kept, and rank disputes settled by the whole face; 4: rank
# disputes settled by a narrower rank margin (vision.deck.RANK_SETTLE_MARGIN), which the
# level must stay above where a face would settle a wrong reading; 5: the card's other index
# corner only among corners reading its rank, and an alignment that folds the face not kept.
FACE_REVISION: Final = 5


@dataclass(frozen=True)
class Face:
    """A card warped upright to FACE_HEIGHT x FACE_WIDTH, and which of its pixels lay inside
    the image (a card cut by the image border has no pixels there)."""

    bgr: np.ndarray  # uint8 (FACE_HEIGHT, FACE_WIDTH, 3)
    valid: np.ndarray  # bool (FACE_HEIGHT, FACE_WIDTH)

    def turned(self) -> Face:
        """The face turned half a turn (read from the other index corner)."""
        return Face(self.bgr[::-1, ::-1].copy(), self.valid[::-1, ::-1].copy())

    def grey(self) -> np.ndarray:
        import cv2
        import numpy as np

        return np.asarray(cv2.cvtColor(self.bgr, cv2.COLOR_BGR2GRAY), np.float32)


def opposite_index_corner(
    candidate: CornerCandidate, candidates: list[CornerCandidate]
) -> CornerCandidate | None:
    """The found corner that would be the card's other index corner if ``candidate`` is
    one: its frame turned half a turn from the candidate's, and lying along the candidate's
    diagonal where a card of a plausible width and aspect would end. The best placed of
    several; None when no corner fits."""
    import numpy as np

    origin = np.array(candidate.point)
    axes = np.array([candidate.x_axis, candidate.y_axis]).T  # columns x, y
    best: tuple[float, CornerCandidate] | None = None
    for other in candidates:
        turned = -float(np.dot(other.x_axis, candidate.x_axis)) - float(
            np.dot(other.y_axis, candidate.y_axis)
        )
        if turned < 2 * _OPPOSITE_TURN:
            continue
        across, down = np.linalg.solve(axes, np.array(other.point) - origin)
        if (
            not _OPPOSITE_WIDTH[0] * candidate.card_width
            <= across
            <= (_OPPOSITE_WIDTH[1] * candidate.card_width)
        ):
            continue
        aspect = down / across / CARD_ASPECT
        if not _OPPOSITE_ASPECT[0] <= aspect <= _OPPOSITE_ASPECT[1]:
            continue
        misfit = abs(math.log(aspect)) + (2.0 - turned)
        if best is None or misfit < best[0]:
            best = (misfit, other)
    return best[1] if best is not None else None


def card_quad(
    candidate: CornerCandidate,
    candidates: list[CornerCandidate],
    index_corners: list[CornerCandidate] | None = None,
) -> np.ndarray:
    """The card's corners (index corner, then round the card) if ``candidate`` is its index
    corner: from the corner's frame and the estimated width, each snapped to a found corner
    nearby. Where the card's other index corner is found (:func:`opposite_index_corner`) but
    not where the estimated width puts the far end, the width was misjudged (a cover cuts
    an edge short, and the locator's estimate with it): the two index corners then give the
    far end, and each of the two remaining corners is the mean of where the two corners'
    frames put it. ``index_corners``: the corners that read the card's index, the only ones
    that may be its other index corner (a cover's corner, turned half a turn near where a
    shorter card would end, squashed a face to half its pips); None: any of ``candidates``."""
    import numpy as np

    origin = np.array(candidate.point)
    x_axis, y_axis = np.array(candidate.x_axis), np.array(candidate.y_axis)
    width = candidate.card_width
    predicted = [
        origin + x_axis * width,
        origin + (x_axis + y_axis * CARD_ASPECT) * width,
        origin + y_axis * width * CARD_ASPECT,
    ]
    opposite = opposite_index_corner(
        candidate, candidates if index_corners is None else index_corners
    )
    if opposite is not None:
        far = np.array(opposite.point)
        if np.linalg.norm(far - predicted[1]) >= _SNAP * width:
            across, down = np.linalg.solve(np.array([x_axis, y_axis]).T, far - origin)
            far_x, far_y = np.array(opposite.x_axis), np.array(opposite.y_axis)
            right = (origin + across * x_axis + far + down * far_y) / 2
            left = (origin + down * y_axis + far + across * far_x) / 2
            predicted = [right, far, left]
            width = float(across)
    points = np.array([other.point for other in candidates])
    quad = [origin]
    for estimate in predicted:
        distances = np.linalg.norm(points - estimate, axis=1)
        nearest = int(np.argmin(distances))
        snapped = distances[nearest] < _SNAP * width
        quad.append(points[nearest] if snapped else estimate)
    return np.array(quad, np.float32)


def warp_face(
    image: np.ndarray,
    candidate: CornerCandidate,
    candidates: list[CornerCandidate],
    index_corners: list[CornerCandidate] | None = None,
) -> Face:
    """The card whose index corner ``candidate`` would be, warped upright. ``candidates``
    are all corners found in the image (their points refine the far corners), and
    ``index_corners`` those reading the card's index (see :func:`card_quad`)."""
    import cv2
    import numpy as np

    quad = card_quad(candidate, candidates, index_corners)
    target = np.array(
        [[0, 0], [FACE_WIDTH, 0], [FACE_WIDTH, FACE_HEIGHT], [0, FACE_HEIGHT]], np.float32
    )
    matrix = cv2.getPerspectiveTransform(quad, target)
    source = image
    shrink = candidate.card_width / FACE_WIDTH
    if shrink > 1.5:
        # As cut_patch does: shrinking without blurring first would alias the pips' edges.
        source = cv2.GaussianBlur(image, (0, 0), 0.4 * shrink)
    bgr = cv2.warpPerspective(
        source, matrix, (FACE_WIDTH, FACE_HEIGHT), flags=cv2.INTER_LINEAR, borderValue=(0, 0, 0)
    )
    inside = cv2.warpPerspective(
        np.full(image.shape[:2], 255, np.uint8),
        matrix,
        (FACE_WIDTH, FACE_HEIGHT),
        flags=cv2.INTER_NEAREST,
    )
    return Face(bgr, inside > 0)


def features(face: Face) -> tuple[np.ndarray, np.ndarray]:
    """(2, H, W) grey and weighted redness, each centred over the valid pixels, jointly
    scaled to unit length; and the (2, H, W) mask of valid pixels (0 or 1)."""
    import numpy as np

    colour = face.bgr.astype(np.float32)
    red = colour[:, :, 2] - 0.5 * (colour[:, :, 0] + colour[:, :, 1])
    values = np.stack([face.grey(), RED_WEIGHT * red])
    mask = np.stack([face.valid, face.valid]).astype(np.float32)
    count = float(mask[0].sum())
    if count < 10:
        return np.zeros_like(values), mask
    values = (values - (values * mask).sum(axis=(1, 2), keepdims=True) / count) * mask
    values /= max(float(np.linalg.norm(values)), 1e-3)
    return values, mask


def correlations(templates: np.ndarray, values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(52,) normalised correlation of a face's features with each (2, H, W) template over
    the face's valid pixels, the better of the face as it is and turned half a turn (the
    corner it was warped from may be either index corner)."""
    import numpy as np

    # As matrix products over flattened templates: multiplying the 52 templates by the mask
    # pixel by pixel took 6 of the face check's 9 ms at 80 pixels.
    count_templates = len(templates)
    flat = templates.reshape(count_templates, 2, -1)
    squares = np.square(flat)
    best = np.full(count_templates, -np.inf)
    for face_values, face_mask in ((values, mask), (values[:, ::-1, ::-1], mask[:, ::-1, ::-1])):
        inside = np.ascontiguousarray(face_mask).reshape(2, -1)
        count = max(float(inside[0].sum()), 1.0)
        means = np.stack([flat[:, c] @ inside[c] for c in range(2)], axis=1) / count
        energy = sum(squares[:, c] @ inside[c] for c in range(2)) - count * (means**2).sum(axis=1)
        seen = np.ascontiguousarray(face_values * face_mask).reshape(-1)
        products = flat.reshape(count_templates, -1) @ seen
        best = np.maximum(best, products / np.sqrt(np.maximum(energy, 1e-9)))
    return best


def align(face: Face, reference: np.ndarray) -> Face:
    """``face`` turned (or not) and moved by an affine map onto ``reference`` (a grey mean
    face), by OpenCV's ECC. The corner frame places a card's far end within a few pixels;
    the mean faces' pips are only sharp if every face is aligned the same way."""
    import cv2
    import numpy as np

    grey = face.grey()
    centred = grey - float(grey[face.valid].mean()) if face.valid.any() else grey
    if float((centred * reference).sum()) < float((centred[::-1, ::-1] * reference).sum()):
        face = face.turned()
        grey = face.grey()
    warp = np.eye(2, 3, dtype=np.float32)
    criteria = (cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, _ECC_STEPS, 1e-4)
    try:
        _, warp = cv2.findTransformECC(
            reference.astype(np.float32), grey, warp, cv2.MOTION_AFFINE, criteria, None, 3
        )
    except cv2.error:
        return face  # no convergence (a face mostly covered): compared as warped
    if is_fold(warp):
        return face
    size = (FACE_WIDTH, FACE_HEIGHT)
    inverse = cv2.WARP_INVERSE_MAP
    bgr = cv2.warpAffine(face.bgr, warp, size, flags=cv2.INTER_LINEAR | inverse)
    valid = cv2.warpAffine(
        face.valid.astype(np.uint8), warp, size, flags=cv2.INTER_NEAREST | inverse
    )
    aligned = Face(bgr, valid > 0)
    # ECC climbs from where the warp put the face and may climb the wrong way: a pip row
    # away, where a face of rows of pips matches its mean nearly as well, or turned by a
    # cover's edge. An alignment that matches the reference worse than the face as warped
    # is not kept.
    if _match(aligned, reference) < _match(face, reference):
        return face
    return aligned


def is_fold(warp: np.ndarray) -> bool:
    """Whether ECC's affine ``warp`` (2 x 3) folds the face rather than corrects it: it
    scales the face by more than :data:`_ECC_SCALE` either way (shrinks it into a corner),
    or stretches it along one direction more than :data:`_ECC_SHEAR` times the other (a
    shear along a cover's edge). A fold can match the reference better than the face did,
    on the few pixels it keeps or by the cover's edge, and then names another card."""
    import numpy as np

    stretches = np.linalg.svd(np.asarray(warp, np.float64)[:, :2], compute_uv=False)
    longest, shortest = float(stretches.max()), float(stretches.min())
    return not 1.0 / _ECC_SCALE <= shortest <= longest <= _ECC_SCALE or (
        longest > _ECC_SHEAR * shortest
    )


def _match(face: Face, reference: np.ndarray) -> float:
    """Normalised correlation of a face's grey values with a grey reference over the face's
    valid pixels (-1 with too few)."""
    import numpy as np

    if int(face.valid.sum()) < 10:
        return -1.0
    seen = face.grey()[face.valid].astype(np.float64)
    expected = reference[face.valid].astype(np.float64)
    seen -= seen.mean()
    expected -= expected.mean()
    norm = float(np.linalg.norm(seen) * np.linalg.norm(expected))
    return float(seen @ expected) / norm if norm > 1e-9 else -1.0


def rank_reference(templates: np.ndarray, face_index: int) -> np.ndarray:
    """The grey mean face of the rank of face ``face_index`` over its four suits."""
    return _rank_mean(templates, ALL_FACES[face_index].rank)


def _rank_mean(templates: np.ndarray, rank: str) -> np.ndarray:
    """The grey mean face of ``rank`` over its four suits."""
    return templates[list(FACES_OF_RANK[rank]), 0].mean(axis=0)


def mean_faces(samples: list[tuple[int, Face]]) -> np.ndarray:
    """(52, 2, H, W) mean features of each face from (face index, Face) samples; each sample
    turned half a turn when that matches its face's mean better. A face with no sample is
    all zeros (it then correlates with nothing)."""
    import numpy as np

    prepared = [(index, *features(face)) for index, face in samples]
    shape = (52, 2, FACE_HEIGHT, FACE_WIDTH)
    means = np.zeros(shape, np.float32)
    for _round in range(3):
        sums = np.zeros(shape, np.float32)
        weights = np.zeros(shape, np.float32)
        for index, values, mask in prepared:
            if _round and float((values * means[index]).sum()) < float(
                (values[:, ::-1, ::-1] * means[index]).sum()
            ):
                values, mask = values[:, ::-1, ::-1], mask[:, ::-1, ::-1]
            sums[index] += values
            weights[index] += mask
        means = sums / np.maximum(weights, 1e-3)
    return means


def build_templates(samples: list[tuple[int, Face]]) -> np.ndarray:
    """The deck's (52, 2, H, W) mean faces from its enrolment pictures' index corners: a
    first mean, then every sample aligned to its rank's mean face and averaged again."""
    first = mean_faces(samples)
    return mean_faces(
        [(index, align(face, rank_reference(first, index))) for index, face in samples]
    )


def _sharpened(values: np.ndarray) -> np.ndarray:
    """(2, H, W) features less their Gaussian blur (SUIT_SHARPEN_SIGMA), channel by channel."""
    import cv2
    import numpy as np

    values = np.asarray(values, np.float32)
    return np.stack(
        [channel - cv2.GaussianBlur(channel, (0, 0), SUIT_SHARPEN_SIGMA) for channel in values]
    )


@dataclass(frozen=True)
class SuitPart:
    """Where one rank's four suits differ, and each suit's mean face there (sharpened)."""

    faces: tuple[int, ...]  # the rank's four face indices, in ALL_FACES order
    pixels: np.ndarray  # bool (H, W)
    sharpened: np.ndarray  # float32 (4, 2, H, W)


def suit_parts(templates: np.ndarray) -> dict[str, SuitPart]:
    """Each rank's :class:`SuitPart` from a deck's (52, 2, H, W) mean faces."""
    import numpy as np

    parts = {}
    for rank, faces in FACES_OF_RANK.items():
        sharpened = np.stack([_sharpened(templates[i]) for i in faces])
        spread = sharpened.var(axis=0).sum(axis=0)
        # A rank whose four suits never differ (no pictures of them) has no suit pixels.
        pixels = (
            spread > SUIT_PART_SHARE * float(spread.max())
            if spread.max() > 0
            else np.zeros(spread.shape, bool)
        )
        parts[rank] = SuitPart(faces, pixels, sharpened)
    return parts


def suit_correlations(part: SuitPart, values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(4,) normalised correlation of a face's sharpened features with each suit's over the
    rank's suit pixels inside the image, each suit at the best of the face's shifts by up to
    :data:`SUIT_SEARCH_PIXELS` pixels each way (every suit is given the same shifts; a
    shift counts where at least 10 of those pixels are in the image); the better orientation
    of the face (as it is, or turned half a turn: the better one names its suit the more
    surely). Zeros when no shift has 10 such pixels (a match of 0 confirms and vetoes
    nothing)."""
    import numpy as np

    rows, columns = np.nonzero(part.pixels)
    if not len(rows):
        return np.zeros(len(part.faces))
    reach = SUIT_SEARCH_PIXELS
    offsets = np.arange(-reach, reach + 1)
    shift_rows, shift_columns = (grid.ravel() for grid in np.meshgrid(offsets, offsets))
    # Where each suit pixel is read in the face at each shift: the face moved by a shift
    # shows at a pixel what the face has that far back.
    padded_width = FACE_WIDTH + 2 * reach
    at = (rows[None, :] - shift_rows[:, None] + reach) * padded_width + (
        columns[None, :] - shift_columns[:, None] + reach
    )  # (S, n) into the face padded by ``reach``, flattened
    suits = part.sharpened[:, :, rows, columns]  # (4, 2, n)
    sharpened = _sharpened(values)
    best: np.ndarray | None = None
    for face_values, face_mask in (
        (sharpened, mask[0] > 0),
        (sharpened[:, ::-1, ::-1], mask[0, ::-1, ::-1] > 0),
    ):
        # Every shift at once, as weighted sums over the suit pixels (weight 1 where the
        # shifted face is in the image): the same centring and scaling as one shift's pixels
        # gathered and compared, without gathering 49 times.
        padded_mask = np.pad(face_mask, reach).astype(np.float32).ravel()
        padded_values = np.pad(face_values, ((0, 0), (reach, reach), (reach, reach)))
        padded_values = padded_values.reshape(2, -1) * padded_mask
        inside = padded_mask[at]  # (S, n)
        seen = np.stack([padded_values[0][at], padded_values[1][at]], axis=1)  # (S, 2, n)
        count = inside.sum(axis=1)  # (S,)
        usable = count >= 10
        if not usable.any():
            continue
        count = np.maximum(count, 1.0)
        seen_mean = seen.sum(axis=2) / count[:, None]  # (S, 2)
        seen_energy = np.square(seen).sum(axis=(1, 2)) - count * np.square(seen_mean).sum(axis=1)
        # As matrix products (einsum over these shapes took 7 ms a shift grid).
        flat_suits = suits.reshape(-1, suits.shape[-1])  # (4 x 2, n)
        suit_mean = (inside @ flat_suits.T).reshape(len(inside), *suits.shape[:2])
        suit_mean /= count[:, None, None]
        suit_energy = (inside @ np.square(flat_suits).T).reshape(suit_mean.shape).sum(axis=2)
        suit_energy -= count[:, None] * np.square(suit_mean).sum(axis=2)
        products = seen[:, 0] @ suits[:, 0].T + seen[:, 1] @ suits[:, 1].T  # (S, 4)
        products -= count[:, None] * (seen_mean[:, None, :] * suit_mean).sum(axis=2)
        norms = (
            np.sqrt(np.maximum(suit_energy, 0.0))
            * np.maximum(np.sqrt(np.maximum(seen_energy, 0.0)), 1e-9)[:, None]
        )
        scores = (products / np.maximum(norms, 1e-9))[usable].max(axis=0)
        if best is None or scores.max() > best.max():
            best = scores
    return best if best is not None else np.zeros(len(part.faces))


class FaceReading(NamedTuple):
    """What a face says of a corner reading."""

    named: int  # the face it names (an index into ALL_FACES)
    margin: float  # the reading's margin over every other face: positive only when named
    # How well the named face matches, as a correlation: a face mostly covered, or a suit's
    # pips mostly hidden, matches every face poorly.
    match: float
    # The reading's rank over the rival ranks asked about (rank_margin, the least of them);
    # infinite when none was asked.
    rank_margin: float = math.inf


def reading(
    templates: np.ndarray,
    face: Face,
    face_index: int,
    parts: dict[str, SuitPart] | None = None,
) -> FaceReading:
    """What the face says of the corner reading ``face_index``: the face it names, the
    margin of ``face_index`` (positive only when it is the one named), and how well the
    named face matches.

    The rank is the whole face's: the face it correlates best with after alignment to the
    reading's rank. Of another rank, that face is named, by the whole-face margin. Of the
    same rank, the suit is the suit parts': whichever suit's sharpened pips correlate best
    (:func:`suit_correlations`), the margin their correlations' difference. ``parts`` are
    :func:`suit_parts` of ``templates``, computed here when not given."""
    import numpy as np

    values, mask = features(align(face, rank_reference(templates, face_index)))
    scores = correlations(templates, values, mask)
    best = int(np.argmax(scores))
    rank = ALL_FACES[face_index].rank
    if ALL_FACES[best].rank != rank:
        margin = float(scores[face_index] - np.delete(scores, face_index).max())
        return FaceReading(best, margin, float(scores[best]))
    part = (parts if parts is not None else suit_parts(templates))[rank]
    suits = suit_correlations(part, values, mask)
    position = part.faces.index(face_index)
    margin = float(suits[position] - np.delete(suits, position).max())
    return FaceReading(part.faces[int(np.argmax(suits))], margin, float(suits.max()))


def rank_margin(templates: np.ndarray, face: Face, rank: str, rivals: Iterable[str]) -> float:
    """How much better the whole face matches ``rank``'s faces than the faces of the rank in
    ``rivals`` it matches best: for each rival, the best correlation of a face of each rank,
    differenced, aligned to each rank's mean face in turn, and the least of them all. Aligned
    to one rank's mean face alone, an affine map stretches a face towards it (a two of hearts
    aligned to the threes' mean face matched a three better than a two by 0.2); aligned to
    both, a face that still prefers one rank shows it. The face is aligned to ``rank`` once,
    however many rivals."""
    ours = list(FACES_OF_RANK[rank])

    def scores_aligned_to(reference: str) -> np.ndarray:
        return correlations(templates, *features(align(face, _rank_mean(templates, reference))))

    own = scores_aligned_to(rank)
    margins = []
    for rival in rivals:
        theirs = list(FACES_OF_RANK[rival])
        for scores in (own, scores_aligned_to(rival)):
            margins.append(float(scores[ours].max() - scores[theirs].max()))
    return min(margins, default=math.inf)


def with_rank_margins(
    templates: np.ndarray,
    face: Face,
    said: FaceReading,
    face_index: int,
    rival_ranks: frozenset[str] = frozenset(),
) -> FaceReading:
    """What the face said of face ``face_index`` with its rank's least margin
    (:func:`rank_margin`) over each rank in ``rival_ranks`` and over the rank the face names,
    when another: a face that settles a dispute must prefer the reading's rank, and one that
    names another rank vetoes the reading when it prefers that rank clearly. Unchanged when
    no rank is asked about (aligning twice a rank costs a few milliseconds)."""
    rank = ALL_FACES[face_index].rank
    asked = set(rival_ranks) | {ALL_FACES[said.named].rank}
    asked.discard(rank)
    if not asked:
        return said
    return said._replace(rank_margin=rank_margin(templates, face, rank, sorted(asked)))
