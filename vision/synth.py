"""Synthetic camera images of one card on a table, for training, evaluation and simulators.

A scene is one card (the *target*) lying anywhere on felt at any rotation, seen with mild
perspective, uneven light, a white-balance shift, glare, blur, sensor noise and JPEG loss, and
sometimes partly covered by a neighbouring card that enters from outside the region (cards on
a layout overlap, and the camera region belongs to one position, so the neighbour's own index
corners lie outside it). Everything random comes from the ``numpy.random.Generator`` passed
in, so a seed reproduces a scene exactly.

The library is usable on its own: :func:`render_scene` returns the image and where the
target's corners ended up; :func:`write_dataset` fills a folder with ``<CARD>_<n>.png`` files
in the layout ``livetable vision eval`` reads.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from controller.kernel.cards import ALL_FACES, Card
from controller.kernel.errors import ConfigurationError
from vision.artwork import render_card_bgra

if TYPE_CHECKING:
    import numpy as np

# Cards are rendered once at this height and then warped down, so one cached PNG per card
# serves every scale.
SOURCE_HEIGHT_PX: Final = 320


@dataclass(frozen=True, slots=True)
class SceneOptions:
    """How hard the scenes are. The defaults are the conditions the recogniser's accuracy
    targets are measured in (docs/vision.md, "Artwork, designs, synthesis" and "Measured")."""

    size: tuple[int, int] = (360, 360)  # width, height of the image (one camera region)
    card_height_px: tuple[float, float] = (150.0, 210.0)
    perspective: float = 0.06  # corner jitter as a fraction of the card height
    blur_sigma: tuple[float, float] = (0.0, 1.6)
    motion_blur_probability: float = 0.15
    noise_sigma: tuple[float, float] = (0.0, 7.0)
    brightness: tuple[float, float] = (0.55, 1.3)
    white_balance: float = 0.15  # each channel gain in 1 +- this
    glare_probability: float = 0.35
    occlusion_probability: float = 0.3
    occlusion_fraction: tuple[float, float] = (0.08, 0.35)  # of the target's width covered
    jpeg_quality: tuple[int, int] = (55, 95)


@dataclass(frozen=True, slots=True)
class Scene:
    """One synthetic image and its ground truth."""

    image: np.ndarray  # BGR uint8
    card: Card
    design: str
    # The target's corners in the image, in card order: top-left, top-right, bottom-right,
    # bottom-left of the upright card (index corners are the first and the third).
    corners: np.ndarray  # float32 (4, 2)
    # Fraction of each index corner (top-left, bottom-right) that nothing covers.
    index_visibility: tuple[float, float]


_FELT_COLOURS: Final = (
    (40, 110, 30),  # casino green (BGR)
    (30, 90, 20),
    (60, 120, 40),
    (110, 60, 20),  # blue
    (40, 40, 120),  # red
    (35, 55, 80),  # brown
    (50, 50, 50),  # dark grey
)


def _felt(rng: np.random.Generator, width: int, height: int) -> np.ndarray:
    import cv2
    import numpy as np

    base = np.array(_FELT_COLOURS[rng.integers(len(_FELT_COLOURS))], np.float32)
    base *= rng.uniform(0.7, 1.3, size=3).astype(np.float32)
    low = cv2.resize(
        rng.normal(0, 1, (6, 6)).astype(np.float32), (width, height), interpolation=cv2.INTER_CUBIC
    )
    grain = rng.standard_normal((height, width), dtype=np.float32) * rng.uniform(2, 7)
    texture = (low * rng.uniform(3, 10) + grain)[:, :, None]
    return np.clip(base[None, None, :] + texture, 0, 255).astype(np.float32)


def _card_quad(
    rng: np.random.Generator, options: SceneOptions, card_w: float, card_h: float
) -> np.ndarray:
    """Corners (TL, TR, BR, BL) of the upright card placed fully inside the image."""
    import numpy as np

    width, height = options.size
    angle = rng.uniform(0, 2 * math.pi)
    cos, sin = math.cos(angle), math.sin(angle)
    w, h = card_w / 2, card_h / 2
    half = np.array([[-w, -h], [w, -h], [w, h], [-w, h]], np.float32)
    jitter = rng.uniform(-1, 1, (4, 2)) * options.perspective * card_h
    rotated = (half + jitter) @ np.array([[cos, sin], [-sin, cos]], np.float32)
    low, high = rotated.min(axis=0), rotated.max(axis=0)
    margin = 4.0
    centre_x = rng.uniform(margin - low[0], max(margin - low[0], width - margin - high[0]))
    centre_y = rng.uniform(margin - low[1], max(margin - low[1], height - margin - high[1]))
    return (rotated + np.array([centre_x, centre_y], np.float32)).astype(np.float32)


def _paste(canvas: np.ndarray, card: np.ndarray, quad: np.ndarray, shadow: bool) -> np.ndarray:
    """Warp the BGRA ``card`` onto ``canvas`` (float32 BGR) so its corners land on ``quad``;
    return the card's coverage (float32 0..1 per pixel)."""
    import cv2
    import numpy as np

    height, width = canvas.shape[:2]
    source_h, source_w = card.shape[:2]
    source = np.array(
        [[0, 0], [source_w - 1, 0], [source_w - 1, source_h - 1], [0, source_h - 1]], np.float32
    )
    matrix = cv2.getPerspectiveTransform(source, quad.astype(np.float32))
    warped = cv2.warpPerspective(
        card, matrix, (width, height), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT
    ).astype(np.float32)
    alpha = warped[:, :, 3:4] / 255.0
    if shadow:
        # A soft contact shadow makes the upper card's edge visible where it overlaps.
        blurred = cv2.GaussianBlur(alpha[:, :, 0], (0, 0), 2.5)
        offset = cv2.warpAffine(blurred, np.float32([[1, 0, 2], [0, 1, 2]]), (width, height))
        canvas *= 1.0 - 0.45 * offset[:, :, None]
    canvas[:] = canvas * (1.0 - alpha) + warped[:, :, :3] * alpha
    return alpha[:, :, 0]


def _index_zones(quad: np.ndarray) -> np.ndarray:
    """Centres of the two index corners (top-left, bottom-right) of a card quad."""
    import numpy as np

    top_left, top_right, bottom_right, bottom_left = quad
    across = (top_right - top_left) / 1.0
    down = (bottom_left - top_left) / 1.0
    return np.array(
        [top_left + 0.12 * across + 0.15 * down, bottom_right - 0.12 * across - 0.15 * down]
    )


def _neighbour_quad(
    rng: np.random.Generator, target: np.ndarray, options: SceneOptions
) -> np.ndarray | None:
    """A card of the same size covering part of the target, placed so that its own index
    corners lie outside the image (the region belongs to the target's position); None when
    no such placement is found."""
    import numpy as np

    width, height = options.size
    top_left, top_right, _bottom_right, bottom_left = target
    across = top_right - top_left
    down = bottom_left - top_left
    centre = target.mean(axis=0)
    for _attempt in range(40):
        covered = rng.uniform(*options.occlusion_fraction)
        if rng.random() < 0.5:
            # From the left or right, fanned a little along the card.
            shift = across * rng.choice([-1.0, 1.0]) * (1.0 - covered)
            shift = shift + down * rng.uniform(-1.0, 1.0)
        else:
            # From above or below.
            shift = down * rng.choice([-1.0, 1.0]) * (1.0 - covered * across_ratio(target))
            shift = shift + across * rng.uniform(-1.0, 1.0)
        angle = rng.normal(0, math.radians(6))
        cos, sin = math.cos(angle), math.sin(angle)
        rotation = np.array([[cos, sin], [-sin, cos]], np.float32)
        quad = ((target - centre) @ rotation + centre + shift).astype(np.float32)
        zones = _index_zones(quad)
        outside = ((zones[:, 0] < -4) | (zones[:, 0] > width + 4) | (zones[:, 1] < -4)) | (
            zones[:, 1] > height + 4
        )
        if outside.all():
            return quad
    return None


def across_ratio(quad: np.ndarray) -> float:
    """Width over height of a card quad."""
    import numpy as np

    return float(np.linalg.norm(quad[1] - quad[0]) / max(np.linalg.norm(quad[3] - quad[0]), 1e-6))


def _occluder(rng: np.random.Generator, canvas: np.ndarray, target: np.ndarray) -> np.ndarray:
    """A hand, a paddle or a chip over part of the target: a soft-edged blob of one colour."""
    import cv2
    import numpy as np

    height, width = canvas.shape[:2]
    mask = np.zeros((height, width), np.float32)
    corner = target[int(rng.integers(4))]
    centre = target.mean(axis=0)
    # Anchored at a point between a corner and the card's middle, reaching past the edge.
    anchor = corner + (centre - corner) * rng.uniform(0.0, 0.5)
    size = np.linalg.norm(target[1] - target[0]) * rng.uniform(0.2, 0.45)
    points = anchor + rng.normal(0, size, (6, 2))
    hull = cv2.convexHull(points.astype(np.float32)).astype(np.int32)
    cv2.fillConvexPoly(mask, hull, 1.0)
    mask = cv2.GaussianBlur(mask, (0, 0), 1.5)[:, :, None]
    colours = ((120, 150, 200), (80, 110, 160), (40, 40, 40), (30, 30, 160), (200, 200, 200))
    colour = np.array(colours[int(rng.integers(len(colours)))], np.float32)
    canvas[:] = canvas * (1 - mask) + colour * rng.uniform(0.7, 1.2) * mask
    return mask[:, :, 0]


def _index_visibility(visible: np.ndarray, quad: np.ndarray) -> tuple[float, float]:
    import cv2
    import numpy as np

    top_left, top_right, bottom_right, bottom_left = quad.astype(np.float64)
    fractions = []
    for corner, across, down in (
        (top_left, top_right - top_left, bottom_left - top_left),
        (bottom_right, bottom_left - bottom_right, top_right - bottom_right),
    ):
        down_unit = down / np.linalg.norm(down) * np.linalg.norm(across)
        zone = np.array(
            [
                corner + u * across + v * down_unit
                for u, v in ((0.02, 0.02), (0.24, 0.02), (0.24, 0.45), (0.02, 0.45))
            ]
        )
        mask = np.zeros(visible.shape, np.uint8)
        cv2.fillConvexPoly(mask, np.round(zone).astype(np.int32), 1)
        inside = mask.astype(bool)
        total = int(inside.sum())
        fractions.append(float((visible[inside] > 0.5).mean()) if total else 0.0)
    return fractions[0], fractions[1]


def _glare(rng: np.random.Generator, canvas: np.ndarray) -> None:
    import numpy as np

    height, width = canvas.shape[:2]
    y = np.arange(height, dtype=np.float32)[:, None]
    x = np.arange(width, dtype=np.float32)[None, :]
    centre_x, centre_y = rng.uniform(0, width), rng.uniform(0, height)
    radius_x, radius_y = rng.uniform(15, 80), rng.uniform(15, 80)
    blob = np.exp(-(((x - centre_x) / radius_x) ** 2 + ((y - centre_y) / radius_y) ** 2))
    canvas += (blob * rng.uniform(60, 200))[:, :, None]


def _light(rng: np.random.Generator, canvas: np.ndarray, options: SceneOptions) -> None:
    import numpy as np

    height, width = canvas.shape[:2]
    gain = rng.uniform(*options.brightness)
    y = np.arange(height, dtype=np.float32)[:, None]
    x = np.arange(width, dtype=np.float32)[None, :]
    direction = rng.uniform(-1, 1, 2)
    gradient = 1.0 + 0.25 * (direction[0] * (x / width - 0.5) + direction[1] * (y / height - 0.5))
    balance = rng.uniform(1 - options.white_balance, 1 + options.white_balance, 3)
    canvas *= (gain * gradient)[:, :, None] * balance[None, None, :].astype(np.float32)


def _degrade(rng: np.random.Generator, canvas: np.ndarray, options: SceneOptions) -> np.ndarray:
    import cv2
    import numpy as np

    image = canvas
    sigma = rng.uniform(*options.blur_sigma)
    if sigma > 0.3:
        image = cv2.GaussianBlur(image, (0, 0), sigma)
    if rng.random() < options.motion_blur_probability:
        length = int(rng.integers(3, 8))
        kernel = np.zeros((length, length), np.float32)
        kernel[length // 2, :] = 1.0 / length
        rotation = cv2.getRotationMatrix2D(
            (length / 2 - 0.5, length / 2 - 0.5), rng.uniform(0, 180), 1
        )
        kernel = cv2.warpAffine(kernel, rotation, (length, length))
        kernel /= max(kernel.sum(), 1e-6)
        image = cv2.filter2D(image, -1, kernel)
    noise = rng.standard_normal(image.shape, dtype=np.float32)
    image = image + noise * rng.uniform(*options.noise_sigma)
    image8 = np.clip(image, 0, 255).astype(np.uint8)
    quality = int(rng.integers(options.jpeg_quality[0], options.jpeg_quality[1] + 1))
    ok, encoded = cv2.imencode(".jpg", image8, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        return image8
    return cv2.imdecode(encoded, cv2.IMREAD_COLOR)


@functools.lru_cache(maxsize=160)
def _source(design: str, card: Card) -> np.ndarray:
    """The card at :data:`SOURCE_HEIGHT_PX`, kept in memory: scenes of one design reuse it."""
    return render_card_bgra(design, card, SOURCE_HEIGHT_PX)


def render_scene(
    design: str,
    card: Card,
    rng: np.random.Generator,
    options: SceneOptions | None = None,
    faces: Callable[[Card], np.ndarray] | None = None,
) -> Scene:
    """One image of ``card`` from ``design`` on a table, perturbed as ``options`` says.

    ``faces``, when given, supplies the BGRA card images (at :data:`SOURCE_HEIGHT_PX`)
    instead of the installed artwork ``design``: training uses it for procedural decks.
    """

    options = options or SceneOptions()
    width, height = options.size
    if width < 64 or height < 64:
        raise ConfigurationError(f"scene size {options.size} is too small")
    face_of = faces or functools.partial(_source, design)
    source = face_of(card)
    aspect = source.shape[1] / source.shape[0]
    card_h = rng.uniform(*options.card_height_px)
    card_h = min(card_h, 0.8 * min(width, height) / math.hypot(1.0, aspect))
    card_w = card_h * aspect
    canvas = _felt(rng, width, height)
    quad = _card_quad(rng, options, card_w, card_h)
    visible = _paste(canvas, source, quad, shadow=True)
    if rng.random() < options.occlusion_probability:
        neighbour_quad = _neighbour_quad(rng, quad, options) if rng.random() < 0.7 else None
        if neighbour_quad is not None:
            others = [face for face in ALL_FACES if face != card]
            neighbour = others[int(rng.integers(len(others)))]
            neighbour_image = face_of(neighbour)
            cover = _paste(canvas, neighbour_image, neighbour_quad, shadow=True)
        else:
            cover = _occluder(rng, canvas, quad)
        visible = visible * (1.0 - cover)
    _light(rng, canvas, options)
    if rng.random() < options.glare_probability:
        _glare(rng, canvas)
    image = _degrade(rng, canvas, options)
    return Scene(
        image=image,
        card=card,
        design=design,
        corners=quad,
        index_visibility=_index_visibility(visible, quad),
    )


def write_dataset(
    directory: Path,
    design: str,
    count: int,
    seed: int,
    options: SceneOptions | None = None,
) -> list[Path]:
    """Write ``count`` scenes of ``design`` as ``<CARD>_<n>.png``, cycling through the deck."""
    import cv2
    import numpy as np

    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    paths: list[Path] = []
    for number in range(count):
        card = ALL_FACES[number % len(ALL_FACES)]
        scene = render_scene(design, card, rng, options)
        path = directory / f"{card}_{number:05d}.png"
        if not cv2.imwrite(str(path), scene.image):
            raise ConfigurationError(f"cannot write {path}")
        paths.append(path)
    return paths
