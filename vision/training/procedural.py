"""Procedural card decks for training: indices drawn in hundreds of system fonts.

The recogniser must read decks it has never seen, but Debian ships only about twenty families
of card artwork, and a network trained on them learns those few index glyphs: on an unseen
design it reads a thin-stemmed club as a spade with full confidence. Real decks set their
indices in ordinary typefaces and draw the four suits in a handful of shapes, so a procedural
deck (a rank in a random installed font, a suit either from a font that has the card-suit
characters or drawn from parameters: lobe sizes, stem width, waist) shows the network a far
wider variety of the same thing. Each procedural deck is consistent, as a real one is: one
font, one suit style, one layout, one colour scheme for all 52 cards.

Training-time only: needs Pillow and the fonts of Debian's fonts-* packages (see
docs/vision.md, "Reproducing the model"); the recogniser does not import this module.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from controller.kernel.cards import Card
from vision.artwork import rounded_card_alpha

if TYPE_CHECKING:
    import numpy as np
    from PIL import ImageFont

FONT_ROOT: Final = Path("/usr/share/fonts")
SUIT_CHARACTERS: Final = {"S": "\u2660", "H": "\u2665", "D": "\u2666", "C": "\u2663"}
RANK_TEXT: Final = {"T": "10"}
# Fonts that are not letters (symbols, dingbats, maths) or would draw boxes for Latin text.
_NOT_TEXT_FONTS: Final = (
    "symbol",
    "dingbat",
    "d050000l",
    "math",
    "keyboard",
    "emoji",
    "opensymbol",
)
_RENDER_SCALE: Final = 2  # draw at twice the size, then reduce: smooth edges as rsvg gives


def _font_files() -> list[Path]:
    return sorted(
        path
        for path in FONT_ROOT.rglob("*")
        if path.suffix.lower() in (".ttf", ".otf") and path.is_file()
    )


def _draws(font: ImageFont.FreeTypeFont, text: str) -> bool:
    """True when every character of ``text`` has a glyph in ``font`` (not the empty box)."""
    import numpy as np

    def bitmap(character: str) -> np.ndarray:
        mask = font.getmask(character)
        return np.array(mask, np.uint8).reshape(mask.size[1], mask.size[0])

    missing = bitmap("\ue000")
    for character in text:
        drawn = bitmap(character)
        if not drawn.any() or (drawn.shape == missing.shape and (drawn == missing).all()):
            return False
    return True


@functools.cache
def rank_fonts() -> tuple[Path, ...]:
    """Installed fonts that draw A, K, Q, J and the digits."""
    from PIL import ImageFont

    usable = []
    for path in _font_files():
        if any(word in path.name.lower() for word in _NOT_TEXT_FONTS):
            continue
        try:
            font = ImageFont.truetype(str(path), 40)
        except OSError:
            continue
        if _draws(font, "AKQJ0123456789"):
            usable.append(path)
    return tuple(usable)


@functools.cache
def suit_fonts() -> tuple[Path, ...]:
    """Installed fonts that draw the four card suits."""
    from PIL import ImageFont

    usable = []
    for path in _font_files():
        try:
            font = ImageFont.truetype(str(path), 40)
        except OSError:
            continue
        if _draws(font, "".join(SUIT_CHARACTERS.values())):
            usable.append(path)
    return tuple(usable)


@dataclass(frozen=True, slots=True)
class DeckStyle:
    """Everything that is the same on all 52 cards of one procedural deck."""

    seed: int
    aspect: float  # width / height
    rank_font: Path
    suit_font: Path | None  # None: suits drawn from parameters
    suit_shape: tuple[float, ...]  # parameters of drawn suits
    rank_height: float  # cap height, fraction of the card height
    rank_squeeze: float  # horizontal scale of the rank text
    suit_height: float  # fraction of the card height
    margin_x: float  # fraction of the width
    margin_y: float  # fraction of the height
    gap: float  # between rank and suit, fraction of the height
    suit_align_left: bool
    red: tuple[int, int, int]  # RGB
    black: tuple[int, int, int]
    four_colour: bool
    paper: tuple[int, int, int]
    border: tuple[int, int, int] | None
    court_frame_x: float  # where the court picture's frame starts, fraction of the width
    bold_stroke: int  # extra stroke width of the rank text in pixels at 320 px


def random_style(seed: int) -> DeckStyle:
    import numpy as np

    rng = np.random.default_rng(seed)
    ranks, suits = rank_fonts(), suit_fonts()
    if not ranks:
        raise RuntimeError("no usable fonts: install the fonts-* packages (docs/vision.md)")
    use_suit_font = bool(suits) and rng.random() < 0.45
    paper_base = int(rng.integers(225, 256))
    tint = rng.integers(-10, 6, size=3)
    black_level = int(rng.integers(0, 60))
    return DeckStyle(
        seed=seed,
        aspect=float(rng.uniform(0.63, 0.74)),
        rank_font=ranks[int(rng.integers(len(ranks)))],
        suit_font=suits[int(rng.integers(len(suits)))] if use_suit_font else None,
        suit_shape=tuple(float(value) for value in rng.uniform(0.0, 1.0, size=8)),
        rank_height=float(rng.uniform(0.065, 0.13)),
        rank_squeeze=float(rng.uniform(0.75, 1.15)),
        suit_height=float(rng.uniform(0.045, 0.095)),
        margin_x=float(rng.uniform(0.025, 0.08)),
        margin_y=float(rng.uniform(0.02, 0.06)),
        gap=float(rng.uniform(0.0, 0.025)),
        suit_align_left=bool(rng.random() < 0.25),
        red=(int(rng.integers(170, 256)), int(rng.integers(0, 60)), int(rng.integers(0, 70))),
        black=(black_level, black_level, min(255, black_level + int(rng.integers(0, 30)))),
        four_colour=bool(rng.random() < 0.1),
        paper=tuple(int(np.clip(paper_base + t, 0, 255)) for t in tint),  # type: ignore[arg-type]
        border=(
            tuple(int(v) for v in rng.integers(0, 160, size=3))  # type: ignore[arg-type]
            if rng.random() < 0.5
            else None
        ),
        court_frame_x=float(rng.uniform(0.14, 0.3)),
        bold_stroke=int(rng.integers(0, 2)) if rng.random() < 0.3 else 0,
    )


def _colour(style: DeckStyle, suit: str) -> tuple[int, int, int]:
    if style.four_colour and suit == "C":
        return (0, 120, 30)
    if style.four_colour and suit == "D":
        return (20, 60, 200)
    return style.red if suit in "HD" else style.black


def _drawn_suit_mask(suit: str, size: int, shape: tuple[float, ...]) -> np.ndarray:
    """A filled suit symbol, ``size`` pixels tall, drawn from shape parameters (0..1 each)."""
    import cv2
    import numpy as np

    scale = 4
    height = size * scale
    width = int(height * (0.8 + 0.2 * shape[0]))
    canvas = np.zeros((height, width), np.uint8)
    centre_x = width / 2

    def heart_polygon(top: float, bottom: float, flip: bool) -> np.ndarray:
        # Two lobes and a point, as a parametric curve (the classic heart curve, stretched).
        lobe = 0.9 + 0.25 * shape[1]
        points = []
        for t in np.linspace(0, 2 * math.pi, 120):
            x = 16 * math.sin(t) ** 3
            y = 13 * math.cos(t) - 5 * math.cos(2 * t) - 2 * math.cos(3 * t) - math.cos(4 * t)
            points.append((x * lobe, y))
        array = np.array(points)
        array[:, 0] = (array[:, 0] - array[:, 0].min()) / np.ptp(array[:, 0])
        array[:, 1] = (array[:, 1].max() - array[:, 1]) / np.ptp(array[:, 1])
        if flip:
            array[:, 1] = 1.0 - array[:, 1]
        array[:, 0] = centre_x + (array[:, 0] - 0.5) * width * 0.98
        array[:, 1] = top + array[:, 1] * (bottom - top)
        return array.astype(np.int32)

    def stem(top: float) -> None:
        half_top = width * (0.03 + 0.07 * shape[2])
        half_bottom = width * (0.12 + 0.18 * shape[3])
        polygon = np.array(
            [
                (centre_x - half_top, top),
                (centre_x + half_top, top),
                (centre_x + half_bottom, height - 1),
                (centre_x - half_bottom, height - 1),
            ],
            np.int32,
        )
        cv2.fillPoly(canvas, [polygon], 255)

    if suit == "H":
        cv2.fillPoly(canvas, [heart_polygon(0, height - 1, flip=False)], 255)
    elif suit == "D":
        bulge = (shape[4] - 0.5) * 0.08 * width
        points = []
        for side, (x0, y0, x1, y1) in enumerate(
            [
                (centre_x, 0, width - 1, height / 2),
                (width - 1, height / 2, centre_x, height - 1),
                (centre_x, height - 1, 0, height / 2),
                (0, height / 2, centre_x, 0),
            ]
        ):
            del side
            for t in np.linspace(0, 1, 20, endpoint=False):
                x = x0 + (x1 - x0) * t
                y = y0 + (y1 - y0) * t
                # push the side's middle outwards (convex) or inwards (concave)
                push = math.sin(math.pi * t) * bulge
                normal_x = x - centre_x
                normal_y = y - height / 2
                norm = math.hypot(normal_x, normal_y) or 1.0
                points.append((x + push * normal_x / norm, y + push * normal_y / norm))
        diamond_width = 0.7 + 0.3 * shape[5]
        array = np.array(points)
        array[:, 0] = centre_x + (array[:, 0] - centre_x) * diamond_width
        cv2.fillPoly(canvas, [array.astype(np.int32)], 255)
    elif suit == "S":
        body_bottom = height * (0.72 + 0.1 * shape[6])
        cv2.fillPoly(canvas, [heart_polygon(0, body_bottom, flip=True)], 255)
        stem(body_bottom * 0.8)
    else:  # clubs: three round leaves and a stem
        radius = width * (0.2 + 0.08 * shape[7])
        spread = radius * (0.85 + 0.35 * shape[1])
        top_centre = (centre_x, radius + 1)
        leaf_y = top_centre[1] + spread * (1.1 + 0.4 * shape[6])
        for x, y in (
            top_centre,
            (centre_x - spread * 1.05, leaf_y),
            (centre_x + spread * 1.05, leaf_y),
        ):
            cv2.circle(canvas, (int(x), int(y)), int(radius), 255, -1, cv2.LINE_AA)
        cv2.circle(
            canvas,
            (int(centre_x), int((top_centre[1] + leaf_y) / 2 + radius * 0.3)),
            int(radius * 0.7),
            255,
            -1,
        )
        stem(leaf_y)
    ys, xs = np.nonzero(canvas)
    canvas = canvas[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    out_height = size
    out_width = max(1, round(canvas.shape[1] * out_height / canvas.shape[0]))
    return cv2.resize(canvas, (out_width, out_height), interpolation=cv2.INTER_AREA)


def _text_mask(font_path: Path, text: str, height: int, squeeze: float, stroke: int) -> np.ndarray:
    """``text`` in ``font_path`` as a mask whose inked height is ``height`` pixels."""
    import cv2
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    probe_size = 200
    font = ImageFont.truetype(str(font_path), probe_size)
    box = font.getbbox(text, stroke_width=stroke)
    image = Image.new("L", (box[2] - box[0] + 8, box[3] - box[1] + 8), 0)
    ImageDraw.Draw(image).text(
        (4 - box[0], 4 - box[1]), text, font=font, fill=255, stroke_width=stroke, stroke_fill=255
    )
    mask = np.array(image)
    ys, xs = np.nonzero(mask > 40)
    mask = mask[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
    width = max(1, round(mask.shape[1] * height / mask.shape[0] * squeeze))
    return cv2.resize(mask, (width, height), interpolation=cv2.INTER_AREA)


def _suit_mask(style: DeckStyle, suit: str, height: int) -> np.ndarray:
    if style.suit_font is not None:
        return _text_mask(style.suit_font, SUIT_CHARACTERS[suit], height, 1.0, 0)
    return _drawn_suit_mask(suit, height, style.suit_shape)


def _stamp(canvas: np.ndarray, mask: np.ndarray, x: int, y: int, colour: tuple[int, ...]) -> None:
    """Ink ``mask`` onto the RGB ``canvas`` with its top-left at (x, y), clipped."""
    import numpy as np

    height, width = mask.shape
    x0, y0 = max(x, 0), max(y, 0)
    x1, y1 = min(x + width, canvas.shape[1]), min(y + height, canvas.shape[0])
    if x1 <= x0 or y1 <= y0:
        return
    alpha = mask[y0 - y : y1 - y, x0 - x : x1 - x, None].astype(np.float32) / 255.0
    region = canvas[y0:y1, x0:x1].astype(np.float32)
    canvas[y0:y1, x0:x1] = (region * (1 - alpha) + np.array(colour) * alpha).astype(np.uint8)


# Pip centres of the number cards in the upper half and on the middle line, as fractions of
# the pip area (x, y); the lower half is the upper half turned round.
_PIPS: Final[dict[str, tuple[tuple[float, float], ...]]] = {
    "2": ((0.5, 0.0),),
    "3": ((0.5, 0.0), (0.5, 0.5)),
    "4": ((0.0, 0.0), (1.0, 0.0)),
    "5": ((0.0, 0.0), (1.0, 0.0), (0.5, 0.5)),
    "6": ((0.0, 0.0), (1.0, 0.0), (0.0, 0.5), (1.0, 0.5)),
    "7": ((0.0, 0.0), (1.0, 0.0), (0.0, 0.5), (1.0, 0.5), (0.5, 0.25)),
    "8": ((0.0, 0.0), (1.0, 0.0), (0.0, 0.5), (1.0, 0.5), (0.5, 0.25)),
    "9": ((0.0, 0.0), (1.0, 0.0), (0.0, 1 / 3), (1.0, 1 / 3), (0.5, 0.5)),
    "T": ((0.0, 0.0), (1.0, 0.0), (0.0, 1 / 3), (1.0, 1 / 3), (0.5, 1 / 6)),
}


def _half_card(
    style: DeckStyle,
    card: Card,
    width: int,
    height: int,
    rng: np.random.Generator,
    canvas: np.ndarray,
    first_pass: bool,
) -> None:
    """Draw what is in the card's upper half (and middle line): the lower half is the same
    turned round, which is how real cards are printed."""
    import cv2

    colour = _colour(style, card.suit)
    rank_text = RANK_TEXT.get(card.rank, card.rank)
    rank_height = round(style.rank_height * height)
    squeeze = style.rank_squeeze * (0.8 if len(rank_text) == 2 else 1.0)
    rank_mask = _text_mask(style.rank_font, rank_text, rank_height, squeeze, style.bold_stroke)
    suit_height = round(style.suit_height * height)
    suit_mask = _suit_mask(style, card.suit, suit_height)
    left = round(style.margin_x * width)
    top = round(style.margin_y * height)
    index_width = max(rank_mask.shape[1], suit_mask.shape[1])
    rank_x = left + (index_width - rank_mask.shape[1]) // 2
    _stamp(canvas, rank_mask, rank_x, top, colour)
    suit_x = left if style.suit_align_left else left + (index_width - suit_mask.shape[1]) // 2
    _stamp(canvas, suit_mask, suit_x, top + rank_height + round(style.gap * height), colour)

    area_left, area_right = 0.24 * width, 0.76 * width
    area_top, area_bottom = 0.14 * height, 0.86 * height
    if card.rank in _PIPS:
        pip_height = round(height * 0.12 * (1.0 if card.rank not in "9T" else 0.9))
        pip = _suit_mask(style, card.suit, pip_height)
        for fx, fy in _PIPS[card.rank]:
            # Pips on the middle line, and the seven's single centre pip, are printed once.
            once = fy == 0.5 or (card.rank == "7" and fx == 0.5)
            if once and not first_pass:
                continue
            x = area_left + fx * (area_right - area_left) - pip.shape[1] / 2
            y = area_top + fy * (area_bottom - area_top) - pip_height / 2
            _stamp(canvas, pip, round(x), round(y), colour)
    elif card.rank == "A":
        if first_pass:
            pip_height = round(height * rng.uniform(0.16, 0.3))
            pip = _suit_mask(style, card.suit, pip_height)
            x, y = round(width / 2 - pip.shape[1] / 2), round(height / 2 - pip_height / 2)
            _stamp(canvas, pip, x, y, colour)
    else:
        # A court: a framed picture of blobs in court colours, with a pip in its corner.
        # Real court frames come close to the index, but do not run through it.
        index_right = left + index_width + 0.015 * width
        frame_left = round(max(style.court_frame_x * width, index_right))
        frame_top = round(max(0.1, style.margin_y + 0.02) * height)
        picture = canvas[frame_top : height // 2 + 2, frame_left : width - frame_left]
        palette = [(200, 30, 30), (30, 60, 180), (230, 190, 40), (20, 20, 20), (40, 140, 60)]
        inner_height, inner_width = picture.shape[:2]
        for _ in range(int(rng.integers(6, 14))):
            centre = (int(rng.integers(0, inner_width)), int(rng.integers(0, inner_height)))
            axes = (int(rng.integers(4, width // 6)), int(rng.integers(4, height // 8)))
            shade = palette[int(rng.integers(len(palette)))]
            cv2.ellipse(picture, centre, axes, float(rng.uniform(0, 180)), 0, 360, shade, -1)
        cv2.rectangle(
            canvas,
            (frame_left, frame_top),
            (width - frame_left, height // 2 + 2),
            (int(rng.integers(0, 120)),) * 3,
            max(1, height // 200),
        )
        corner_pip = _suit_mask(style, card.suit, round(height * 0.06))
        _stamp(canvas, corner_pip, frame_left + 4, frame_top + 4, colour)


def render_procedural_card(style: DeckStyle, card: Card, height_px: int) -> np.ndarray:
    """``card`` of the procedural deck ``style`` as a BGRA image ``height_px`` tall, the same
    form as :func:`vision.artwork.render_card_bgra` gives for real artwork."""
    import cv2
    import numpy as np

    rng = np.random.default_rng([style.seed, *str(card).encode()])
    height = height_px * _RENDER_SCALE
    width = round(height * style.aspect)
    canvas = np.empty((height, width, 3), np.uint8)
    canvas[:] = style.paper
    _half_card(style, card, width, height, rng, canvas, first_pass=True)
    canvas = np.ascontiguousarray(canvas[::-1, ::-1])
    _half_card(style, card, width, height, rng, canvas, first_pass=False)
    alpha = rounded_card_alpha(height, width)
    if style.border is not None:
        edge = cv2.morphologyEx(alpha, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
        canvas[edge > 0] = style.border
    bgra = np.dstack([canvas[:, :, ::-1], alpha])
    out_width = round(height_px * style.aspect)
    return cv2.resize(bgra, (out_width, height_px), interpolation=cv2.INTER_AREA)
