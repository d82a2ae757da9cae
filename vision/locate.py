"""Find a card's corners on a table and cut out the index patches next to them.

Rather than fitting one rectangle to the card (which fails as soon as a neighbouring card or
a hand covers part of it and merges with its outline), every *convex, roughly right-angled
corner* of the foreground outline is a candidate. At each one the two outline edges give a
local frame; the frame is taken right-handed (x then y turning clockwise on screen), which on
a portrait card puts x along the short edge exactly at the two index corners (top-left and,
turned half a turn, bottom-right). The patch cut there is what the classifier reads; patches
from the other corners, or from corners of anything else, are what it learned to call "no
index". Where the outline has no corner, two straight edges meeting square still make one
(:func:`_candidates_of_lines`): a light's reflection on the felt joins the outline as if it
were card, and swallows the card corner beside it, but not the card's sharp edges.

Pure image code: numpy and OpenCV, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import numpy as np

# The patch covers this much of the card, in card widths, from the corner inwards (a little
# outside too, so the card's edge is in view). 32 x 52 pixels keeps the pixels square.
PATCH_WIDTH: Final = 32
PATCH_HEIGHT: Final = 52
PATCH_U: Final = (-0.03, 0.33)
PATCH_V: Final = (-0.03, 0.55)

# Height over width of a playing card; bridge cards are 1.40, poker cards 1.40-1.55.
CARD_ASPECT: Final = 1.45

MAX_CANDIDATES: Final = 12
# Raised when the locator finds corners it did not find before: what was enrolled with an
# older one still reads, but enrolling again gives the deck's heads more index corners.
# 2: corners where two long edges meet across short ones (rounded corners, bitten edges).
# 3: one candidate per physical corner; readings whose corners disagree count in calibration.
# 4: corners where two straight edges meet, where the outline has none (a card beside a glare).
LOCATOR_REVISION: Final = 4
_WORK_SIZE: Final = 400  # larger images are analysed at this size, then patches cut at full size
# Corners from straight edges (revision 4), beside the outline's: an edge counts from this
# share of the work image's larger side (shorter ones are strokes of indices and pips, whose
# right angles would be corners of nothing); two edges meet when their directions are within
# about 17 degrees of square, their near ends within this share of the card's width of the
# corner (the gap a rounded corner leaves); the colour inside the angle differs from each of
# the three outside it by this much (mean absolute BGR difference), and no other candidate is
# within this share of a card's width. On 600 rendered scenes (scripts/locator-eval) they
# raised the uncovered index corners found from 98.3 to 99.6 %, at 4.4 candidates a scene
# instead of 4.0 (docs/vision.md, Locator).
_LINE_SHORTEST: Final = 0.1
_LINE_RIGHT_ANGLE_COSINE: Final = 0.3
_LINE_REACH: Final = 0.15
_LINE_CONTRAST: Final = 25.0
_LINE_SAME_CORNER: Final = 0.15


@dataclass(frozen=True, slots=True)
class CornerCandidate:
    """A convex corner of the foreground outline, with its right-handed local frame."""

    point: tuple[float, float]  # the corner, in image pixels
    x_axis: tuple[float, float]  # unit vector along the first edge (the short edge at an index)
    y_axis: tuple[float, float]  # unit vector along the second edge
    card_width: float  # estimated card width in pixels, the patch's scale


def foreground_mask(image: np.ndarray) -> np.ndarray:
    """Pixels that differ from the table felt: 255 for card (or anything on the table), 0 felt.

    The felt colour is the median of the image border, where felt dominates in a region
    chosen around one card position.
    """
    import cv2
    import numpy as np

    band = 4
    border = np.concatenate(
        [
            image[:band].reshape(-1, 3),
            image[-band:].reshape(-1, 3),
            image[:, :band].reshape(-1, 3),
            image[:, -band:].reshape(-1, 3),
        ]
    )
    felt = np.median(border[::3], axis=0)
    # City-block distance in BGR, summed by OpenCV (several times faster than numpy here).
    difference = cv2.absdiff(image, np.full(image.shape, felt, np.uint8))
    distance = cv2.transform(difference, np.array([[0.5, 0.5, 0.5]], np.float32))
    distance8 = cv2.convertScaleAbs(distance)
    threshold, _ = cv2.threshold(distance8, 0, 255, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    # Otsu on an empty table splits noise; a card is always far from the felt colour.
    _, mask = cv2.threshold(distance8, max(threshold, 40), 255, cv2.THRESH_BINARY)
    # Dark ink next to the card's edge (an index printed close to the corner) can look like
    # felt and bite into the outline; closing fills such bites and leaves convex corners be.
    # No opening or blurring first: either would wear through the thin paper margin between
    # the index and the edge and open the bite to the outside.
    bridge = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (13, 13))
    return cv2.morphologyEx(mask, cv2.MORPH_CLOSE, bridge)


def _line_through(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    import cv2
    import numpy as np

    vx, vy, x0, y0 = cv2.fitLine(points.astype(np.float32), cv2.DIST_HUBER, 0, 0.01, 0.01)
    return np.array([x0[0], y0[0]]), np.array([vx[0], vy[0]])


def _intersect(
    first: tuple[np.ndarray, np.ndarray], second: tuple[np.ndarray, np.ndarray]
) -> np.ndarray | None:
    import numpy as np

    (p, r), (q, s) = first, second
    denominator = r[0] * s[1] - r[1] * s[0]
    if abs(denominator) < 1e-6:
        return None
    t = ((q[0] - p[0]) * s[1] - (q[1] - p[1]) * s[0]) / denominator
    return np.asarray(p + t * r)


def _clear_of_border(corner: np.ndarray, width: int, height: int) -> bool:
    """A corner cut by the image border is no card corner."""
    margin = 2.0
    return bool(
        margin < corner[0] < width - 1 - margin and margin < corner[1] < height - 1 - margin
    )


def _right_handed(
    a: np.ndarray, b: np.ndarray, length_a: float, length_b: float
) -> tuple[np.ndarray, np.ndarray, float]:
    """(x axis, y axis, card width) of a corner whose edges run along unit vectors ``a``
    and ``b`` for the given lengths: x then y turning clockwise on screen, which at an index
    corner of a portrait card puts x along the short edge; the width is the x edge's length,
    or the y edge's over the card's aspect, whichever is longer (either may be covered)."""
    if a[0] * b[1] - a[1] * b[0] > 0:
        x_axis, y_axis, length_x, length_y = a, b, length_a, length_b
    else:
        x_axis, y_axis, length_x, length_y = b, a, length_b, length_a
    return x_axis, y_axis, max(length_x, length_y / CARD_ASPECT)


def _candidates_of_contour(
    contour: np.ndarray, image_size: tuple[int, int], scale: float
) -> list[CornerCandidate]:
    import cv2
    import numpy as np

    width, height = image_size
    points = contour.reshape(-1, 2).astype(np.float32)
    perimeter = cv2.arcLength(contour, True)
    polygon_indices = cv2.approxPolyDP(contour, 0.012 * perimeter, True)
    # approxPolyDP returns points, not indices: find each vertex's index on the contour.
    vertices = polygon_indices.reshape(-1, 2)
    if len(vertices) < 3:
        return []
    flat = contour.reshape(-1, 2)
    positions = []
    for vertex in vertices:
        matches = np.flatnonzero((flat[:, 0] == vertex[0]) & (flat[:, 1] == vertex[1]))
        if matches.size == 0:
            return []
        positions.append(int(matches[0]))
    count = len(points)

    def edge_points(start: int, end: int) -> np.ndarray:
        length = (end - start) % count
        if length < 4:
            return points[[start % count, end % count]]
        # The middle of the edge: the ends bend round the card's rounded corners.
        first = start + int(length * 0.2)
        last = start + int(length * 0.8)
        return points[np.arange(first, last + 1) % count]

    n = len(positions)
    lines = [_line_through(edge_points(positions[i], positions[(i + 1) % n])) for i in range(n)]
    area = abs(cv2.contourArea(contour))
    orientation = np.sign(cv2.contourArea(contour, oriented=True))
    min_edge = max(10.0, 0.12 * math.sqrt(area))
    # Edge i runs from vertex i to vertex i + 1; a corner is where two edges meet, either
    # next to each other or with only short edges between them. A strongly rounded card
    # corner becomes two vertices with a short chamfer between (each about 135 degrees, so
    # neither is a corner), and an index printed close to the edge, as dark as the felt,
    # bites a notch into the outline at the corner; either way the two long edges still
    # meet at the card's corner.
    edge_length = [
        float(np.linalg.norm(vertices[(i + 1) % n] - vertices[i]).item()) for i in range(n)
    ]
    short_edge = 0.22 * math.sqrt(area)  # about a quarter of a card's width
    pairs: list[tuple[int, int, list[int]]] = []
    for before in range(n):
        if edge_length[before] < min_edge:
            continue
        if edge_length[(before + 1) % n] >= min_edge:
            pairs.append((before, (before + 1) % n, []))
        if edge_length[before] < short_edge:
            continue
        skipped: list[int] = []
        after = (before + 1) % n
        while edge_length[after] < short_edge and len(skipped) < n - 2:
            skipped.append(after)
            after = (after + 1) % n
        detour = sum(edge_length[i] for i in skipped)
        # A long detour (a gap between two outlines, a hand) is no corner.
        if skipped and detour <= 1.5 * short_edge and edge_length[after] >= short_edge:
            pairs.append((before, after, skipped))
    found: list[tuple[np.ndarray, np.ndarray, bool, CornerCandidate]] = []
    for before, after, skipped in pairs:
        corner = _intersect(lines[before], lines[after])
        if corner is None:
            continue
        # The corner lies near the outline where it turns (a rounded corner's arc is the
        # further from it the longer its chamfer).
        between = vertices[[(i + 1) % n for i in [before, *skipped]]].astype(np.float64)
        reach = max(0.1 * math.sqrt(area), sum(edge_length[i] for i in skipped))
        if np.min(np.linalg.norm(between - corner, axis=1)) > reach:
            continue
        start = vertices[before].astype(np.float64)
        end = vertices[(after + 1) % n].astype(np.float64)
        to_previous = start - corner
        to_next = end - corner
        length_previous = float(np.linalg.norm(to_previous))
        length_next = float(np.linalg.norm(to_next))
        if min(length_previous, length_next) < min_edge:
            continue
        a = to_previous / length_previous
        b = to_next / length_next
        cosine = float(a @ b)
        if abs(cosine) > 0.45:  # not between about 63 and 117 degrees
            continue
        incoming = vertices[(before + 1) % n] - start
        outgoing = end - vertices[after]
        turn = incoming[0] * outgoing[1] - incoming[1] * outgoing[0]
        # A convex corner turns the way the whole outline winds (the sign of its oriented area).
        if turn * orientation < 0:
            continue  # a reflex vertex: where two overlapping outlines cross
        if not _clear_of_border(corner, width, height):
            continue
        x_axis, y_axis, card_width = _right_handed(a, b, length_previous, length_next)
        candidate = CornerCandidate(
            point=(float(corner[0]) * scale, float(corner[1]) * scale),
            x_axis=(float(x_axis[0]), float(x_axis[1])),
            y_axis=(float(y_axis[0]), float(y_axis[1])),
            card_width=card_width * scale,
        )
        found.append((corner, x_axis, bool(skipped), candidate))
    # One physical corner must give one candidate: two would count as two corners agreeing
    # (noisy-OR, and the camera's one-corner rule). A vertex of a rounded corner's chamfer
    # can pass as a corner too; the long edges' meeting point is the better of the two.
    # Where two cards overlap, though, the short step between their outlines looks like a
    # bite to the outline, and its meeting point, on the felt beside the true corner, is
    # kept instead of that corner (tests/vision/test_locate.py, a strict xfail).
    kept: list[tuple[np.ndarray, np.ndarray, bool, CornerCandidate]] = []
    for corner, x_axis, across_short, candidate in found:
        twin = next(
            (
                k
                for k, (other, other_x, _, _) in enumerate(kept)
                if np.linalg.norm(other - corner) < 0.1 * math.sqrt(area)
                and float(other_x @ x_axis) > 0.9
            ),
            None,
        )
        if twin is None:
            kept.append((corner, x_axis, across_short, candidate))
        elif across_short and not kept[twin][2]:
            kept[twin] = (corner, x_axis, across_short, candidate)
    return [candidate for _, _, _, candidate in kept]


def find_corners(image: np.ndarray) -> list[CornerCandidate]:
    """Candidate card corners in a BGR image, largest outlines first, then the corners of
    straight edges no outline has, at most a dozen."""
    import cv2

    height, width = image.shape[:2]
    scale = max(1.0, max(height, width) / _WORK_SIZE)
    work = image
    if scale > 1.0:
        work = cv2.resize(
            image, (round(width / scale), round(height / scale)), interpolation=cv2.INTER_AREA
        )
    mask = foreground_mask(work)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    work_area = work.shape[0] * work.shape[1]
    contours = [c for c in contours if cv2.contourArea(c) > 0.01 * work_area]
    contours.sort(key=cv2.contourArea, reverse=True)
    candidates: list[CornerCandidate] = []
    for contour in contours[:3]:
        candidates.extend(_candidates_of_contour(contour, (work.shape[1], work.shape[0]), scale))
    candidates.extend(_candidates_of_lines(work, candidates, scale))
    return candidates[:MAX_CANDIDATES]


def _candidates_of_lines(
    work: np.ndarray, found: list[CornerCandidate], scale: float
) -> list[CornerCandidate]:
    """Corners where two straight edges of the image meet at about a right angle, away from
    every corner in ``found``: the card's own edges, found by OpenCV's line segment detector.
    A light's reflection on the felt beside a card is as far from the felt's colour as the
    card, and the outline swallows it with the card corner next to it; the card's edge is
    still a sharp step through the glare, where the glare's own brightness fades gently."""
    import cv2
    import numpy as np

    height, width = work.shape[:2]
    grey = cv2.cvtColor(work, cv2.COLOR_BGR2GRAY)
    detected = cv2.createLineSegmentDetector().detect(grey)[0]
    if detected is None:
        return []
    segments = detected.reshape(-1, 4).astype(np.float64)
    lengths = np.hypot(segments[:, 2] - segments[:, 0], segments[:, 3] - segments[:, 1])
    long_enough = lengths >= _LINE_SHORTEST * max(height, width)
    segments, lengths = segments[long_enough], lengths[long_enough]
    starts, ends = segments[:, :2], segments[:, 2:]
    directions = (ends - starts) / lengths[:, None]
    colour = cv2.blur(work, (5, 5)).astype(np.float64)

    def colour_at(point: np.ndarray) -> np.ndarray | None:
        x, y = point
        inside_image = 0 <= x < width and 0 <= y < height
        return np.asarray(colour[int(y), int(x)]) if inside_image else None

    taken = [np.array(candidate.point) / scale for candidate in found]
    made: list[CornerCandidate] = []
    for i in range(len(segments)):
        for j in range(i + 1, len(segments)):
            if abs(float(directions[i] @ directions[j])) > _LINE_RIGHT_ANGLE_COSINE:
                continue
            corner = _intersect((starts[i], directions[i]), (starts[j], directions[j]))
            if corner is None or not _clear_of_border(corner, width, height):
                continue
            # Each edge runs away from the corner: its near end is the gap a rounded corner
            # leaves, its far end says which way the card lies.
            arms = []
            for k in (i, j):
                near, far = starts[k], ends[k]
                if np.linalg.norm(far - corner) < np.linalg.norm(near - corner):
                    near, far = far, near
                arms.append((float(np.linalg.norm(near - corner)), far - corner))
            (gap_a, to_a), (gap_b, to_b) = arms
            length_a, length_b = float(np.linalg.norm(to_a)), float(np.linalg.norm(to_b))
            a, b = to_a / length_a, to_b / length_b
            x_axis, y_axis, card_width = _right_handed(a, b, length_a, length_b)
            reach = _LINE_REACH * card_width
            # Both edges end near the corner and go on well past it: not a T or a cross.
            if max(gap_a, gap_b) > reach or min(length_a, length_b) < 2 * reach:
                continue
            # A convex corner of something: inside the angle differs from all round outside.
            step = max(3.0, 0.08 * card_width)
            inside = colour_at(corner + step * (a + b))
            outside = [colour_at(corner + step * offset) for offset in (-a - b, a - b, b - a)]
            if inside is None or any(sample is None for sample in outside):
                continue
            contrast = min(
                float(np.abs(inside - sample).mean()) for sample in outside if sample is not None
            )
            if contrast < _LINE_CONTRAST:
                continue
            # One physical corner, one candidate (the outline's, where it has one).
            if any(
                np.linalg.norm(point - corner) < _LINE_SAME_CORNER * card_width for point in taken
            ):
                continue
            taken.append(corner)
            made.append(
                CornerCandidate(
                    point=(float(corner[0]) * scale, float(corner[1]) * scale),
                    x_axis=(float(x_axis[0]), float(x_axis[1])),
                    y_axis=(float(y_axis[0]), float(y_axis[1])),
                    card_width=card_width * scale,
                )
            )
    return made


def cut_patch(image: np.ndarray, candidate: CornerCandidate) -> np.ndarray:
    """The index patch at ``candidate``: BGR uint8, PATCH_HEIGHT x PATCH_WIDTH, upright."""
    import cv2
    import numpy as np

    corner = np.array(candidate.point)
    x_axis = np.array(candidate.x_axis) * candidate.card_width
    y_axis = np.array(candidate.y_axis) * candidate.card_width
    step_u = (PATCH_U[1] - PATCH_U[0]) / PATCH_WIDTH
    step_v = (PATCH_V[1] - PATCH_V[0]) / PATCH_HEIGHT
    origin = corner + (PATCH_U[0] + step_u / 2) * x_axis + (PATCH_V[0] + step_v / 2) * y_axis
    # Maps patch pixel (column, row) to image coordinates.
    matrix = np.array(
        [
            [x_axis[0] * step_u, y_axis[0] * step_v, origin[0]],
            [x_axis[1] * step_u, y_axis[1] * step_v, origin[1]],
        ],
        np.float64,
    )
    source = image
    shrink = candidate.card_width * step_u  # image pixels per patch pixel
    if shrink > 1.5:
        source = cv2.GaussianBlur(image, (0, 0), 0.4 * shrink)
    return cv2.warpAffine(
        source,
        matrix,
        (PATCH_WIDTH, PATCH_HEIGHT),
        flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
        borderMode=cv2.BORDER_REPLICATE,
    )


def normalise_patches(patches: np.ndarray) -> np.ndarray:
    """uint8 (N, H, W, 3) BGR patches to the float32 (N, 3, H, W) input the classifier takes.

    Each patch is centred and scaled by its own grey-level statistics, which removes the
    scene's brightness and contrast but keeps colour (red and black suits differ by it).
    """
    import numpy as np

    data = patches.astype(np.float32)
    grey = data.mean(axis=3, keepdims=True)
    mean = grey.mean(axis=(1, 2, 3), keepdims=True)
    std = grey.std(axis=(1, 2, 3), keepdims=True)
    data = (data - mean) / (std + 8.0)
    return np.ascontiguousarray(data.transpose(0, 3, 1, 2))
