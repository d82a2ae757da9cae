"""Pictures of the studio's deck from the table camera, for enrolment (``livetable camera enrol``).

Enrolment (:mod:`vision.enrol`) adapts the recogniser to the one deck a studio deals, from
labelled pictures of its cards. The best pictures are the ones the recogniser will later be
asked about: the card in its slot, under the studio's lights, seen by the table camera and
cut by the same region. :func:`collect_pictures` asks someone to lay each card in one slot,
takes a fresh frame, cuts the slot's region and saves it as ``<CARD>_<nnn>.png``, the folder
format ``livetable vision enrol`` reads.

A session is long (twenty pictures of 52 cards), so it must survive being stopped: every
picture is complete on disk the moment it is counted (written to a hidden temporary file,
then given its final name, never over an existing file), and a new session counts
the pictures already in the folder and continues where the last one stopped.

OpenCV is imported only inside the functions that need it.
"""

from __future__ import annotations

import errno
import itertools
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from controller.kernel.cards import Card
from controller.kernel.errors import ConfigurationError, DeviceError

if TYPE_CHECKING:
    import numpy as np

    from drivers.camera import Crop, Frame, Region

logger = logging.getLogger(__name__)

# Pictures of one card in which no card is found at the slot's centre before giving up: the
# person laying the cards is asked again each time. On the simulator's felt one picture in
# ten to twenty of a card lying in a good slot fails the test (23 of 378 pictures of three
# designs; 102 refusals in 1,142 asks of tango), so three attempts almost never fail on a
# card that is there, and an empty slot, or a slot where glare merges the card's outline
# with the felt's printing, is reported within a minute.
ATTEMPTS_PER_PICTURE: Final = 3

# Temporary files are hidden (leading dot) and do not end in an image suffix, so a folder
# left by an interrupted write still enrols; the next session removes them. (Without hard
# links, a stop at the wrong moment also leaves an empty claimed picture: `vision enrol`
# names it, and the next camera session removes it.)
_PARTIAL_SUFFIX: Final = ".partial"
# errno values of a filesystem that cannot make hard links.
_NO_HARD_LINKS: Final = frozenset(
    # ENOSYS: FUSE filesystems (exfat-fuse among them) that do not implement link.
    {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS}
)
_PICTURE_SUFFIX: Final = ".png"
_OUR_PICTURE_NAME: Final = re.compile(r"[2-9TJQKA][SHDC]_\d{3,}\.png")

Ask = Callable[[Card, int, int], object]
"""``ask(card, k, n)``: have ``card`` laid in the slot for its picture ``k`` of ``n``, and
return once it lies there (the command line prints a prompt and waits for Enter)."""


class EnrolmentSource(Protocol):
    """What :func:`collect_pictures` needs of a camera: part of
    :class:`drivers.camera.FrameSource` (``CameraCapture`` and ``SimulatedCamera`` offer it)."""

    @property
    def regions(self) -> Mapping[str, Region]: ...

    def latest(self) -> Frame | None: ...

    def wait_for_frame(self, newer_than: int = 0, timeout: float | None = None) -> Frame | None: ...

    def region(self, position: str, frame: Frame | None = None) -> Crop: ...


@dataclass(frozen=True, slots=True)
class Collection:
    """What one session did: the folder, the pictures it wrote, those it found already there
    (per card, counted towards the target), and how often a card had to be laid again."""

    directory: Path
    written: tuple[Path, ...]
    already_there: Mapping[Card, int]
    retries: int


def card_at_centre(image: np.ndarray) -> bool:
    """True when a card lies at the centre of the slot image ``image`` (BGR uint8).

    The recogniser's locator must find two corners facing opposite ways whose card would
    lie at the image's centre (the test the camera reader's slot-centred recognition makes
    of each corner): two diagonally opposite corners of one card, the ones an index sits in.
    An empty slot fails it: the words and lines printed on the felt can give one corner
    candidate near the centre (seen on the simulator's baccarat and blackjack layouts), never
    two facing apart in 63 empty slots measured. A card lying off its slot fails too, and
    should: the reader would not read it there either.
    """
    import numpy as np

    from vision.locate import find_corners
    from vision.recognise import SLOT_CENTRE_TOLERANCE, centred_on

    centred = [
        candidate
        for candidate in find_corners(image)
        if centred_on(candidate, image.shape, SLOT_CENTRE_TOLERANCE)
    ]
    return any(
        float(np.dot(first.x_axis, second.x_axis)) < -0.5
        for first, second in itertools.combinations(centred, 2)
    )


def pictures_in(directory: Path) -> Counter[Card]:
    """How many labelled pictures of each card ``directory`` holds (none if it is absent).

    A picture whose name does not start with a card is a :class:`ConfigurationError` now,
    rather than at the end of a long session when the folder is enrolled.
    """
    from vision.enrol import IMAGE_SUFFIXES, card_from_filename

    counts: Counter[Card] = Counter()
    if not directory.is_dir():
        return counts
    for path in directory.iterdir():
        if path.suffix.lower() in IMAGE_SUFFIXES and not path.name.startswith("."):
            counts[card_from_filename(path)] += 1
    return counts


def collect_pictures(
    source: EnrolmentSource,
    slot: str,
    cards: Iterable[Card],
    pictures_per_card: int,
    ask: Ask,
    out_dir: Path,
    timeout_s: float,
    *,
    tell: Callable[[str], object] | None = None,
    attempts: int = ATTEMPTS_PER_PICTURE,
) -> Collection:
    """Save ``pictures_per_card`` pictures of each of ``cards`` lying in ``slot``.

    For each picture still missing from ``out_dir``: ``ask(card, k, n)``, then take a frame
    newer than any seen when ``ask`` returned (so the picture shows the card as laid, not the
    table a moment before), cut ``slot``'s region and write it as ``<CARD>_<nnn>.png``.
    When no card lies at the slot's centre (:func:`card_at_centre`), ``tell`` says so and the
    card is asked for again, ``attempts`` times in all.

    Raises :class:`ConfigurationError` for a slot without a region, a bad count or an
    unwritable folder, :class:`DeviceError` when the camera gives no frame within
    ``timeout_s`` or the slot stays empty. Pictures written before an error or an interrupt
    stay on disk and count in the next session.
    """
    if slot not in source.regions:
        raise ConfigurationError(
            f"no camera region for slot {slot!r}; configured: "
            f"{', '.join(sorted(source.regions)) or 'none'}"
        )
    if pictures_per_card < 1:
        raise ConfigurationError(f"pictures per card must be at least 1, got {pictures_per_card}")
    if attempts < 1:
        raise ConfigurationError(f"attempts per picture must be at least 1, got {attempts}")
    if not timeout_s > 0:
        raise ConfigurationError(f"the frame timeout must be positive, got {timeout_s}")
    wanted = list(dict.fromkeys(cards))
    if not wanted:
        raise ConfigurationError("no cards to take pictures of")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ConfigurationError(f"cannot create the picture folder {out_dir}: {error}") from error
    _remove_partial_files(out_dir)
    present = pictures_in(out_dir)
    already_there = {card: min(present[card], pictures_per_card) for card in wanted}
    written: list[Path] = []
    retries = 0
    last_number = 0
    for card in wanted:
        for k in range(already_there[card] + 1, pictures_per_card + 1):
            for attempt in range(1, attempts + 1):
                ask(card, k, pictures_per_card)
                frame = _fresh_frame(source, last_number, timeout_s)
                last_number = frame.number
                crop = source.region(slot, frame)
                if card_at_centre(crop.image):
                    written.append(_save_picture(out_dir, card, crop.image))
                    break
                if attempt == attempts:
                    raise DeviceError(
                        f"no card found at the centre of slot {slot} in {attempts} pictures "
                        f"of {card}: check that the card lies in the slot (`livetable camera "
                        "calibrate` draws the regions) and the region is right; if it does, "
                        "the card's outline is lost in this slot (glare, or lines printed on "
                        "the felt touching the card): choose another slot; the pictures "
                        "taken so far are kept"
                    )
                retries += 1
                message = (
                    f"no card found at the centre of slot {slot}: lay {card} in it again "
                    f"(attempt {attempt + 1} of {attempts})"
                )
                logger.info("%s", message)
                if tell is not None:
                    tell(message)
    return Collection(out_dir, tuple(written), already_there, retries)


def _fresh_frame(source: EnrolmentSource, seen: int, timeout_s: float) -> Frame:
    """A frame taken after this call began: newer than ``seen`` and than the newest now."""
    latest = source.latest()
    newer_than = max(seen, latest.number if latest is not None else 0)
    frame = source.wait_for_frame(newer_than=newer_than, timeout=timeout_s)
    if frame is None:
        raise DeviceError(
            f"no frame from the camera within {timeout_s:g} s: check that it is connected, "
            "on and not held by another program (`livetable camera calibrate` tries it)"
        )
    return frame


def _remove_partial_files(directory: Path) -> None:
    unfinished = list(directory.glob(f".*{_PARTIAL_SUFFIX}"))
    # An empty file under a name of ours is a name claimed by _publish whose picture never
    # arrived. Anything else in the folder is the engineer's and is left alone.
    unfinished += [
        p
        for p in directory.glob(f"*{_PICTURE_SUFFIX}")
        if _OUR_PICTURE_NAME.fullmatch(p.name) and _is_empty(p)
    ]
    for path in unfinished:
        try:
            path.unlink()
        except OSError as error:
            logger.warning("cannot remove the unfinished picture %s: %s", path, error)


def _is_empty(path: Path) -> bool:
    try:
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def _publish(partial: Path, final: Path) -> None:
    """Give the complete file ``partial`` the name ``final``, never over an existing file:
    :class:`FileExistsError` if ``final`` exists."""
    try:
        # A link, unlike a rename, fails rather than replace a file that appeared since.
        os.link(partial, final)
        return
    except FileExistsError:
        raise
    except OSError as error:
        if error.errno not in _NO_HARD_LINKS:
            raise
    # exFAT, FAT and some network mounts have no hard links: claim the name with an empty
    # file (exclusive create, which they do have), then rename the picture over our own
    # claim. A stop in between leaves an empty picture, which the next session removes.
    with final.open("xb"):
        pass
    try:
        os.replace(partial, final)
    except OSError as error:
        # Only an OSError: after a Ctrl-C the rename may have happened, and the claim is
        # then a good picture. A failed rename leaves our empty claim, which is no picture.
        final.unlink(missing_ok=True)
        raise ConfigurationError(f"cannot write the picture {final}: {error}") from error


def _save_picture(directory: Path, card: Card, image: np.ndarray) -> Path:
    """Write ``image`` as the next free ``<CARD>_<nnn>.png``: all of it or nothing, and
    never over an existing file."""
    import cv2

    ok, encoded = cv2.imencode(_PICTURE_SUFFIX, image)
    if not ok:
        raise DeviceError(f"cannot encode a picture of {card} as PNG")
    for number in itertools.count(1):
        final = directory / f"{card}_{number:03d}{_PICTURE_SUFFIX}"
        if final.exists():
            continue
        partial = directory / f".{final.name}{_PARTIAL_SUFFIX}"
        try:
            with partial.open("wb") as handle:
                handle.write(encoded.tobytes())
                handle.flush()
                os.fsync(handle.fileno())
            _publish(partial, final)
        except FileExistsError:
            continue
        except OSError as error:
            raise ConfigurationError(f"cannot write the picture {final}: {error}") from error
        finally:
            partial.unlink(missing_ok=True)
        logger.debug("saved %s", final)
        return final
    raise AssertionError("unreachable")  # itertools.count never ends
