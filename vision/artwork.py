"""Real card artwork, rasterised from the SVG decks Debian ships, for training, tests and the
camera simulator.

Two sources are searched:

* ``gnome-cards-data`` / ``aisleriot``: one ``/usr/share/aisleriot/cards/<name>.svgz`` per
  design, cards named ``club_1`` ... ``spade_king``. The design is called ``<name>``.
* ``kdegames-card-data-kf5``: ``/usr/share/carddecks/svg-<name>/<file>.svgz``, cards named
  ``1_club`` ... ``king_spade``. The design is called ``kde-<name>``.

The artwork is GPL: it is rendered here at build or test time (``rsvg-convert -i <element>``)
and cached on disk, never committed. The ``bonded`` design is reserved for an independent
check of the recogniser and is refused everywhere in this module, so nothing can train, tune
or test on it by accident.

It also draws the outline of a card (:func:`rounded_card_alpha`), the one shape the
procedural training decks and the camera simulator's cards share, so that neither borrows
it from the other.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Final

from controller.kernel.cards import Card
from controller.kernel.errors import ConfigurationError

if TYPE_CHECKING:
    import numpy as np

AISLERIOT_DIR: Final = Path("/usr/share/aisleriot/cards")
KDE_DIR: Final = Path("/usr/share/carddecks")
KDE_PREFIX: Final = "kde-"

# Reserved for an independent check of the recogniser against its accuracy targets (docs/vision.md,
# "Measured") on a design nothing was trained or tuned on: never listed, never rendered.
RESERVED_DESIGNS: Final = frozenset({"bonded"})

_SUIT_WORDS: Final = {"S": "spade", "H": "heart", "D": "diamond", "C": "club"}
_RANK_WORDS: Final = {
    "A": "1",
    "T": "10",
    "J": "jack",
    "Q": "queen",
    "K": "king",
    **{str(n): str(n) for n in range(2, 10)},
}

# A card's corner radius as a share of its width (a poker card's 3.5 mm of 63 mm is 0.056).
CORNER_RADIUS_OF_WIDTH: Final = 0.06

# Rasterising a whole element at its natural size first tells us its height in SVG units;
# the second pass renders at the zoom that gives the requested height, so small cards stay sharp.
_MAX_HEIGHT_PX: Final = 2000


def _is_reserved(name: str) -> bool:
    bare = name.removeprefix(KDE_PREFIX).lower()
    return bare in RESERVED_DESIGNS or name.lower() in RESERVED_DESIGNS


def _design_files() -> dict[str, Path]:
    return dict(_scan(AISLERIOT_DIR, KDE_DIR))


@functools.lru_cache(maxsize=4)
def _scan(aisleriot_dir: Path, kde_dir: Path) -> tuple[tuple[str, Path], ...]:
    designs: dict[str, Path] = {}
    if aisleriot_dir.is_dir():
        for path in sorted(aisleriot_dir.glob("*.svgz")):
            designs[path.name.removesuffix(".svgz")] = path
    if kde_dir.is_dir():
        for directory in sorted(kde_dir.glob("svg-*")):
            files = sorted(directory.glob("*.svgz")) + sorted(directory.glob("*.svg"))
            if files:
                designs[KDE_PREFIX + directory.name.removeprefix("svg-")] = files[0]
    return tuple((name, path) for name, path in designs.items() if not _is_reserved(name))


def list_designs() -> list[str]:
    """Every installed card design by name, sorted; the reserved ``bonded`` design never."""
    return sorted(_design_files())


def design_path(design: str) -> Path:
    """The SVG file holding ``design``; :class:`ConfigurationError` if unknown or reserved."""
    if _is_reserved(design):
        raise ConfigurationError(
            f"card design {design!r} is reserved for the independent check and cannot be used"
        )
    path = _design_files().get(design)
    if path is None:
        raise ConfigurationError(
            f"unknown card design {design!r}: install gnome-cards-data or "
            f"kdegames-card-data-kf5, or pick one of {', '.join(list_designs()) or 'none'}"
        )
    return path


def element_id(design: str, card: Card) -> str:
    """The SVG element id of ``card`` in ``design`` (``heart_queen`` or ``queen_heart``)."""
    rank, suit = _RANK_WORDS[card.rank], _SUIT_WORDS[card.suit]
    if design.startswith(KDE_PREFIX):
        return f"{rank}_{suit}"
    return f"{suit}_{rank}"


def cache_dir() -> Path:
    """Where rendered cards are kept: ``$LIVETABLE_CACHE_DIR/cards`` or ``~/.cache/livetable``."""
    root = os.environ.get("LIVETABLE_CACHE_DIR")
    if root:
        return Path(root) / "cards"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "livetable" / "cards"


def _rsvg(path: Path, element: str | None, zoom: float, output: Path) -> None:
    executable = shutil.which("rsvg-convert")
    if executable is None:
        raise ConfigurationError("rsvg-convert not found: install librsvg2-bin")
    selection = ["-i", element] if element is not None else []
    command = [executable, *selection, "-z", f"{zoom:.6f}", "-o", str(output), str(path)]
    result = subprocess.run(command, capture_output=True, check=False, timeout=60)
    if result.returncode != 0 or not output.exists():
        raise ConfigurationError(
            f"rsvg-convert could not render {element} from {path}: "
            f"{result.stderr.decode(errors='replace').strip()}"
        )


def _bitmap_rectangle(path: Path, element: str) -> tuple[float, float, float, float] | None:
    """(x, y, width, height) of ``element`` if it is a plain ``<image>`` in document units.

    Some KDE decks (konqi-modern, xskat-french) are bitmaps placed with ``<image>`` elements,
    which ``rsvg-convert -i`` refuses ("has no dimensions"); those are cropped from a render of
    the whole page instead.
    """
    import gzip
    import xml.etree.ElementTree as ElementTree

    with gzip.open(path) if path.suffix == ".svgz" else open(path, "rb") as handle:
        root = ElementTree.parse(handle).getroot()
    for node in root.iter():
        if node.get("id") == element:
            if not node.tag.endswith("}image") or node.get("transform"):
                return None
            try:
                return tuple(float(node.get(name, "")) for name in ("x", "y", "width", "height"))
            except ValueError:
                return None
    return None


def _page_zoom(path: Path) -> float:
    """Pixels per document unit when rsvg-convert renders the page at zoom 1."""
    import gzip
    import xml.etree.ElementTree as ElementTree

    with gzip.open(path) if path.suffix == ".svgz" else open(path, "rb") as handle:
        root = ElementTree.parse(handle).getroot()
    view_box = (root.get("viewBox") or "").replace(",", " ").split()
    width = re.sub(r"[a-z]+$", "", root.get("width") or "")
    if len(view_box) == 4 and width:
        return float(width) / float(view_box[2])
    return 1.0


def _render_bitmap_element(path: Path, element: str, height_px: int) -> np.ndarray | None:
    import cv2

    rectangle = _bitmap_rectangle(path, element)
    if rectangle is None:
        return None
    x, y, width, height = rectangle
    zoom = height_px * 1.25 / (height * _page_zoom(path))
    scale = zoom * _page_zoom(path)
    with tempfile.TemporaryDirectory(prefix="livetable-card-") as scratch:
        page = Path(scratch) / "page.png"
        _rsvg(path, None, zoom, page)
        image = cv2.imread(str(page), cv2.IMREAD_UNCHANGED)
    if image is None or image.ndim != 3 or image.shape[2] != 4:
        raise ConfigurationError(f"rsvg-convert wrote an unreadable page for {path}")
    top, left = round(y * scale), round(x * scale)
    crop = image[top : top + round(height * scale), left : left + round(width * scale)]
    if crop.size == 0:
        raise ConfigurationError(f"element {element} of {path} lies outside its page")
    return crop


def _read_cropped(png: Path) -> np.ndarray:
    """The PNG cropped to its opaque pixels (rsvg 2.54 pads ``-i`` output with transparency)."""
    import cv2
    import numpy as np

    image = cv2.imread(str(png), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ConfigurationError(f"rsvg-convert wrote an unreadable image {png}")
    # rsvg-convert leaves out the alpha channel when every pixel is opaque.
    if image.ndim == 2:
        image = cv2.cvtColor(image, cv2.COLOR_GRAY2BGRA)
    elif image.shape[2] == 3:
        image = cv2.cvtColor(image, cv2.COLOR_BGR2BGRA)
    if image.shape[2] != 4:
        raise ConfigurationError(f"rsvg-convert wrote an image of unexpected shape {png}")
    rows = np.flatnonzero(image[:, :, 3].max(axis=1) > 0)
    cols = np.flatnonzero(image[:, :, 3].max(axis=0) > 0)
    if rows.size == 0:
        raise ConfigurationError(f"the rendered card {png} is empty")
    return image[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]


def _render_uncached(path: Path, element: str, height_px: int) -> np.ndarray:
    import cv2

    with tempfile.TemporaryDirectory(prefix="livetable-card-") as scratch:
        probe = Path(scratch) / "probe.png"
        try:
            _rsvg(path, element, 1.0, probe)
        except ConfigurationError:
            image = _render_bitmap_element(path, element, height_px)
            if image is None:
                raise
        else:
            natural_height = _read_cropped(probe).shape[0]
            # Render a little larger than asked, then shrink: exact height, smooth edges.
            zoom = min(height_px * 1.25 / natural_height, 40.0)
            final = Path(scratch) / "final.png"
            _rsvg(path, element, zoom, final)
            image = _read_cropped(final)
    width_px = max(1, round(image.shape[1] * height_px / image.shape[0]))
    return cv2.resize(image, (width_px, height_px), interpolation=cv2.INTER_AREA)


def rounded_card_alpha(height: int, width: int) -> np.ndarray:
    """The outline of a card ``height`` x ``width`` with rounded corners, as an alpha mask
    (uint8, 255 inside, the corners' edges anti-aliased)."""
    import cv2
    import numpy as np

    alpha = np.zeros((height, width), np.uint8)
    radius = max(2, round(width * CORNER_RADIUS_OF_WIDTH))
    cv2.rectangle(alpha, (radius, 0), (width - 1 - radius, height - 1), 255, -1)
    cv2.rectangle(alpha, (0, radius), (width - 1, height - 1 - radius), 255, -1)
    for cx, cy in (
        (radius, radius),
        (width - 1 - radius, radius),
        (radius, height - 1 - radius),
        (width - 1 - radius, height - 1 - radius),
    ):
        cv2.circle(alpha, (cx, cy), radius, 255, -1, cv2.LINE_AA)
    return alpha


def render_card_bgra(design: str, card: Card, height_px: int) -> np.ndarray:
    """``card`` of ``design`` as a BGRA uint8 image exactly ``height_px`` tall.

    The alpha channel is the card's outline (rounded corners are transparent), which is what
    a synthesiser needs to lay the card on a table. Renders are cached on disk, keyed by the
    source file's size and modification time, so repeated calls cost one PNG read.
    """
    import cv2

    if not 8 <= height_px <= _MAX_HEIGHT_PX:
        raise ConfigurationError(f"card height {height_px} px is outside 8..{_MAX_HEIGHT_PX}")
    path = design_path(design)
    element = element_id(design, card)
    stat = path.stat()
    key = hashlib.sha1(f"{path}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    cached = cache_dir() / design / f"{card}_{height_px}_{key}.png"
    if cached.exists():
        image = cv2.imread(str(cached), cv2.IMREAD_UNCHANGED)
        if image is not None and image.ndim == 3 and image.shape[2] == 4:
            return image
    image = _render_uncached(path, element, height_px)
    cached.parent.mkdir(parents=True, exist_ok=True)
    # Write then rename: parallel test workers may render the same card at the same time.
    handle, temporary = tempfile.mkstemp(suffix=".png", dir=cached.parent)
    os.close(handle)
    try:
        if not cv2.imwrite(temporary, image):
            raise ConfigurationError(f"cannot write the card cache {cached.parent}")
        os.replace(temporary, cached)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return image


def render_card(design: str, card: Card, height_px: int) -> np.ndarray:
    """``card`` of ``design`` as a BGR uint8 image exactly ``height_px`` tall, on white.

    See :func:`render_card_bgra` for the version that keeps the transparent corners.
    """
    import numpy as np

    image = render_card_bgra(design, card, height_px)
    alpha = image[:, :, 3:4].astype(np.float32) / 255.0
    white = np.full_like(image[:, :, :3], 255, dtype=np.float32)
    blended = image[:, :, :3].astype(np.float32) * alpha + white * (1.0 - alpha)
    return np.clip(blended + 0.5, 0, 255).astype(np.uint8)
