"""An enrolled deck: the generic network's two heads, fine-tuned on one studio's cards.

The generic network ends in two linear heads over a 64-value embedding: rank (13 ranks and
"no index") and suit. Enrolment (:mod:`vision.enrol`) starts from those heads
(``<model>.heads.npz``) and fits them to labelled pictures of the studio's deck, pulled back
towards the generic weights so a few pictures per card adapt the heads without unlearning
them.

The heads of a deck also see each corner patch's *appearance*: a small grey thumbnail of it.
The embedding is what the generic network learned to tell apart on the designs it was
trained on; on a design it confuses (plastic's clubs and spades, bellot's 8 and 10) the
embeddings of two cards lie close together and no head over them can separate the cards. The
thumbnail of one deck's 8 and 10 differ plainly, and a deck always prints them the same way,
so a linear head over embedding and thumbnail learns that deck's glyphs from a few pictures
per card (docs/vision.md, "Enrolled deck", has the figures).

The file records the digest of the network it was fitted on: an enrolled deck is useless,
and refused, with another one.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from controller.kernel.errors import ConfigurationError

if TYPE_CHECKING:
    import numpy as np

    from vision.face import FaceReading, SuitPart

# Version 3 added the appearance thumbnail, version 4 the mean faces (vision/face.py), version
# 5 mean faces twice as large, whose suits are compared where they differ. Decks of versions 2
# (embedding only), 3 and 4 still load and read without the face check: a version 4 deck's
# level was calibrated on the old comparison, which named the wrong suit far more often.
FORMAT_VERSION: Final = 5
# How far the face's suit parts must prefer another suit of the corners' rank to veto their
# answer, and how well that suit must match (a face whose pips a neighbour covers matches
# every suit poorly, and then names one at random). The veto was found from three wrong cards
# (plastic clubs read as spades on full tables, the face naming the club by 0.38 to 0.65,
# matching it at 0.78 to 0.94); the right answers of plastic's development set that it would
# stop named another suit by at most 0.40 matching it at most 0.50. Chosen between the two
# and measured on other sets (docs/camera.md, docs/vision.md): a guess with its cost known,
# not a bound.
SUIT_VETO_MARGIN: Final = 0.25
SUIT_VETO_MATCH: Final = 0.6
# A face confirms a reading only when the face it names matches by at least this much: a
# face half covered can name any card by a margin (tango's calibration: a queen of hearts
# read as an ace of spades, the face agreeing by 0.055 with a match of 0.12). Right readings
# match at 0.9 (median), below 0.4 at about 1 %.
FACE_CONFIRM_MATCH: Final = 0.4
# How far the whole face must prefer the corners' rank to a rival rank that a corner reads
# (vision.face.rank_margin) to settle their dispute, beside naming the card clearly. Measured
# first on 1,309 right readings of the fourth fresh sets (neoclassical 400, plastic 400,
# tango 263, bellot 246): no face preferred a wrong rank to the true one, in both alignments,
# by more than 0.06; the rank disputes among neoclassical's abstentions were won by 0.27 to
# 0.49, and 0.2 was taken. On the fifth to seventh sets (48,000 pictures of eight designs)
# twelve disputes with a clear face were won by 0.126 to 0.185, all for the right card, the
# same twelve from 0.1 to 0.12; and every dispute whose corners' best was wrong had a face
# naming another card (docs/vision.md).
RANK_SETTLE_MARGIN: Final = 0.12
# How far the whole face must prefer another rank to the corners' (in both alignments,
# matching it at SUIT_VETO_MATCH) to veto their answer. A veto only costs an abstention, so
# it may be nearer, above the same 0.06; tango's five of spades read as a three at 0.985
# preferred the five by 0.18.
RANK_VETO_MARGIN: Final = 0.1
# Against two index corners that agree on the rank, the face overturns two witnesses: it must
# prefer another rank by more. On the fifth and sixth fresh sets (32,000 pictures of eight
# designs) the veto at RANK_VETO_MARGIN turned away five right answers of two agreeing
# corners (the face preferring another rank by 0.10 to 0.13, and one by 0.25) and stopped no
# wrong one: the one wrong rank it stopped came from one corner.
RANK_VETO_MARGIN_TWO_CORNERS: Final = 0.2
_READABLE_FORMATS: Final = frozenset({2, 3, 4, 5})
# Decks from this format on carry mean faces this reader compares.
_FACE_FORMAT: Final = 5
EMBEDDING_SIZE: Final = 64
# The thumbnail of a 32 x 52 corner patch: fine enough to show an index's strokes, coarse
# enough that the locator's placement error (a pixel or two of the patch) blurs into it.
APPEARANCE_WIDTH: Final = 16
APPEARANCE_HEIGHT: Final = 26
APPEARANCE_SIZE: Final = APPEARANCE_WIDTH * APPEARANCE_HEIGHT
RANK_CLASSES: Final = 14  # 13 ranks, then "no index"
SUIT_CLASSES: Final = 4
NO_INDEX_CLASS: Final = 13


def softmax(logits: np.ndarray) -> np.ndarray:
    import numpy as np

    shifted = logits - logits.max(axis=1, keepdims=True)
    exponent = np.exp(shifted)
    return exponent / exponent.sum(axis=1, keepdims=True)


def appearance(patches: np.ndarray) -> np.ndarray:
    """(N, APPEARANCE_SIZE) float32 thumbnails of uint8 (N, H, W, 3) BGR corner patches.

    Grey, centred and scaled to unit length each, so the scene's brightness and contrast do
    not count (colour does not need to: the embedding carries it)."""
    import cv2
    import numpy as np

    if len(patches) == 0:
        return np.zeros((0, APPEARANCE_SIZE), np.float32)
    grey = np.stack(
        [
            cv2.resize(
                cv2.cvtColor(patch, cv2.COLOR_BGR2GRAY),
                (APPEARANCE_WIDTH, APPEARANCE_HEIGHT),
                interpolation=cv2.INTER_AREA,
            )
            for patch in patches
        ]
    ).reshape(len(patches), APPEARANCE_SIZE)
    thumbnails = grey.astype(np.float32)
    thumbnails -= thumbnails.mean(axis=1, keepdims=True)
    # The floor keeps a flat patch (all one grey) at zero rather than dividing by zero.
    thumbnails /= np.maximum(np.linalg.norm(thumbnails, axis=1, keepdims=True), 1.0)
    return thumbnails


def heads_input(embedding: np.ndarray, patches: np.ndarray, appearance_weight: float) -> np.ndarray:
    """What a deck's heads read of N corners: the (N, 64) embedding, then (unless the weight
    is 0) the patches' thumbnails times the weight. One function for enrolment and reading,
    so the two cannot drift apart."""
    import numpy as np

    embedding = np.asarray(embedding, np.float32)
    if not appearance_weight:
        return embedding
    weighted = appearance(patches) * np.float32(appearance_weight)
    return np.concatenate([embedding, weighted], axis=1)


@dataclass(frozen=True)
class Heads:
    """Linear rank and suit heads over features: logits = features @ weight + bias. The
    generic heads read the 64-value embedding; a deck's also the thumbnail after it."""

    rank_weight: np.ndarray  # (inputs, 14)
    rank_bias: np.ndarray  # (14,)
    suit_weight: np.ndarray  # (inputs, 4)
    suit_bias: np.ndarray  # (4,)

    @property
    def inputs(self) -> int:
        """How many values each row of features has (64 for the generic heads)."""
        return int(self.rank_weight.shape[0])

    def probabilities(self, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rank (N, 14), suit (N, 4)) probabilities for (N, inputs) features."""
        return (
            softmax(features @ self.rank_weight + self.rank_bias),
            softmax(features @ self.suit_weight + self.suit_bias),
        )

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "rank_weight": self.rank_weight,
            "rank_bias": self.rank_bias,
            "suit_weight": self.suit_weight,
            "suit_bias": self.suit_bias,
        }

    @classmethod
    def from_arrays(cls, data: object) -> Heads:
        import numpy as np

        heads = cls(
            **{
                name: np.asarray(data[name], np.float32)  # type: ignore[index]
                for name in ("rank_weight", "rank_bias", "suit_weight", "suit_bias")
            }
        )
        if (
            heads.rank_weight.ndim != 2
            or heads.rank_weight.shape[1] != RANK_CLASSES
            or heads.rank_bias.shape != (RANK_CLASSES,)
            or heads.suit_weight.shape != (heads.rank_weight.shape[0], SUIT_CLASSES)
            or heads.suit_bias.shape != (SUIT_CLASSES,)
        ):
            raise ValueError("heads of the wrong shape")
        return heads

    @classmethod
    def load(cls, path: Path) -> Heads:
        """The generic heads stored beside a model; :class:`ConfigurationError` if unusable."""
        import numpy as np

        try:
            with np.load(path, allow_pickle=False) as data:
                return cls.from_arrays(data)
        except FileNotFoundError as error:
            raise ConfigurationError(f"model heads {path} not found") from error
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
            raise ConfigurationError(f"model heads {path} are unusable: {error}") from error


@dataclass(frozen=True)
class FaceCheck:
    """The deck's mean faces (:mod:`vision.face`) and when they may confirm a corner reading:
    one whose score reaches ``floor`` (but not the deck's threshold) is answered when the
    warped face names the same card (:func:`face_agrees`, by at least ``level``); one below
    the floor when it names it clearly (:func:`face_names_clearly`)."""

    templates: np.ndarray  # float32 (52, 2, FACE_HEIGHT, FACE_WIDTH)
    floor: float
    level: float
    # Where each rank's suits differ (vision.face.suit_parts), from the templates.
    parts: dict[str, SuitPart] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        import numpy as np

        from vision.face import FACE_HEIGHT, FACE_WIDTH, suit_parts

        if self.templates.shape != (52, 2, FACE_HEIGHT, FACE_WIDTH):
            raise ValueError(f"mean faces of shape {self.templates.shape}")
        if not np.isfinite(self.templates).all():
            raise ValueError("mean faces that are not finite numbers")
        object.__setattr__(self, "parts", suit_parts(self.templates))
        # A NaN level or floor would make every comparison false, which here would mean
        # "never confirms": safe, but a damaged file should be refused, not half read.
        if not (math.isfinite(self.floor) and 0.0 < self.floor <= 1.0):
            raise ValueError(f"face floor {self.floor!r} is not a probability")
        if not (math.isfinite(self.level) and self.level >= 0.0):
            raise ValueError(f"face level {self.level!r} is not a margin")

    def agrees(self, said: FaceReading, face_index: int) -> bool:
        """:func:`face_agrees` at this deck's level."""
        return face_agrees(said, face_index, self.level)

    def settles(self, said: FaceReading, face_index: int) -> bool:
        """:func:`face_settles` at this deck's level."""
        return face_settles(said, face_index, self.level)

    def names_other_suit(self, said: FaceReading, face_index: int) -> bool:
        """:func:`face_names_other_suit`."""
        return face_names_other_suit(said, face_index)

    def names_other_rank(self, said: FaceReading, face_index: int, corners: int = 1) -> bool:
        """:func:`face_names_other_rank`."""
        return face_names_other_rank(said, face_index, corners)

    def names_clearly(self, said: FaceReading, face_index: int) -> bool:
        """:func:`face_names_clearly` at this deck's level."""
        return face_names_clearly(said, face_index, self.level)


def face_agrees(said: FaceReading, face_index: int, level: float) -> bool:
    """True when what a face said of face ``face_index`` (:func:`vision.face.reading`) names
    it by ``level``, matching it by :data:`FACE_CONFIRM_MATCH`. One rule for the recogniser
    and the enrolment's calibration, which sets the level."""
    return said.named == face_index and said.margin >= level and said.match >= FACE_CONFIRM_MATCH


def face_names_clearly(said: FaceReading, face_index: int, level: float) -> bool:
    """True when what a face said of face ``face_index`` names it as clearly as a face must
    name another suit to veto an answer (:data:`SUIT_VETO_MARGIN`, :data:`SUIT_VETO_MATCH`),
    and by the deck's ``level`` (the calibration's bound on faces agreeing with wrong
    readings). Clear enough to say which of two suits of one rank, that two corners read,
    lies there, and to lift a reading below the face check's floor (a corner reading it at
    even odds at least): the veto asks the same of the face to take an answer away."""
    return (
        said.named == face_index
        and said.margin >= max(level, SUIT_VETO_MARGIN)
        and said.match >= SUIT_VETO_MATCH
    )


def face_settles(said: FaceReading, face_index: int, level: float) -> bool:
    """True when what a face said of face ``face_index`` settles a dispute of the corners:
    it names the card clearly (:func:`face_names_clearly`) and, over any rival rank a corner
    read, prefers the card's rank by :data:`RANK_SETTLE_MARGIN` (and the deck's ``level``)."""
    return face_names_clearly(said, face_index, level) and said.rank_margin >= max(
        level, RANK_SETTLE_MARGIN
    )


def face_names_other_suit(said: FaceReading, face_index: int) -> bool:
    """True when what a face said of face ``face_index`` (:func:`vision.face.reading`) names
    the same rank in another suit, by at least :data:`SUIT_VETO_MARGIN`, matching it by at
    least :data:`SUIT_VETO_MATCH`: the corners' suit is then in doubt (a deck whose network
    reads clubs as spades answered such cards wrong)."""
    from controller.kernel.cards import ALL_FACES

    return (
        said.named != face_index
        and ALL_FACES[said.named].rank == ALL_FACES[face_index].rank
        and -said.margin >= SUIT_VETO_MARGIN
        and said.match >= SUIT_VETO_MATCH
    )


@dataclass(frozen=True)
class EnrolledDeck:
    """Fine-tuned heads for one deck, and where they came from.

    ``appearance_weight`` is what each corner's unit-length thumbnail is multiplied by
    before it joins the embedding as the heads' input; 0 means the heads read the embedding
    alone (decks enrolled before the thumbnail existed, format 2).
    """

    heads: Heads
    model_digest: str
    threshold: float
    info: dict[str, object]
    appearance_weight: float = 0.0
    faces: FaceCheck | None = None  # None for decks enrolled before format 5
    # Read from a format 4 file, whose mean faces this reader no longer compares.
    faces_set_aside: bool = False

    def __post_init__(self) -> None:
        import numpy as np

        # A damaged or hand-edited file must be refused, not read: a NaN weight or threshold
        # turns every score into NaN, and every comparison with NaN is false.
        if not (math.isfinite(self.appearance_weight) and self.appearance_weight >= 0):
            raise ValueError(f"appearance weight {self.appearance_weight!r} is not a weight")
        if not (math.isfinite(self.threshold) and 0.0 < self.threshold <= 1.0):
            raise ValueError(f"threshold {self.threshold!r} is not a probability")
        if not all(np.isfinite(array).all() for array in self.heads.arrays().values()):
            raise ValueError("heads with weights that are not finite numbers")
        expected = EMBEDDING_SIZE + (APPEARANCE_SIZE if self.appearance_weight else 0)
        if self.heads.inputs != expected:
            raise ValueError(
                f"heads over {self.heads.inputs} values, but the deck's features have {expected}"
            )

    def calibration_summary(self) -> str:
        """One line for the engineer: what the deck's own calibration found."""
        info = self.info
        if "calibration" in info:
            return f"calibration: {info['calibration']}"
        return (
            f"calibration: {info.get('calibration_pictures')} pictures cross-fitted, "
            f"{info.get('calibration_wrong_without_threshold')} wrong without a threshold "
            f"(highest wrong score {float(info.get('calibration_highest_wrong_score', 0.0)):.6f}), "
            f"{float(info.get('calibration_correct_at_threshold', 0.0)):.2%} correct at the "
            "threshold"
            + (
                f", {float(info.get('calibration_correct_with_face', 0.0)):.2%} with the face "
                f"check (level {float(info.get('calibration_face_level', 0.0)):.3f}, "
                f"{info.get('calibration_face_agreed_with_wrong')} face(s) agreed with a wrong "
                "reading; the vetoes (suit, rank) turned away "
                f"{info.get('calibration_vetoed_right', 0)} right reading(s)"
                + (
                    f"; it settled {info['calibration_face_settled_right']} "
                    "reading(s) whose corners disagreed "
                    f"({info.get('calibration_face_settled_wrong', 0)} wrong)"
                    if "calibration_face_settled_right" in info
                    else ""
                )
                + ")"
                if "calibration_face_level" in info
                else ""
            )
        )

    @property
    def locator_revision(self) -> int | None:
        """The locator revision the deck was enrolled and calibrated with; None for a deck
        enrolled before it was recorded (revisions 1 and 2)."""
        value = self.info.get("locator_revision")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def stale_warning(self) -> str | None:
        """What to tell the engineer when the deck reads with less than a new enrolment
        would give it, or None: enrolled with another corner locator, or with mean faces
        this reader sets aside (format 4). Such a deck still reads (one enrolled with locator
        revision 1 read better with revision 3), so it is not refused; but its heads were
        fitted, and its threshold calibrated, on the corner candidates that locator found,
        and a new locator finds corners they never saw (plastic's covered AC, read as AS at
        0.9998 under revision 2: docs/vision.md); and without its face check it has no suit
        veto. A deck whose face check was calibrated with another comparison of the face
        (:data:`vision.face.FACE_REVISION`) is read with its level as it is."""
        from vision.face import FACE_REVISION
        from vision.locate import LOCATOR_REVISION

        reasons = []
        enrolled_with = self.locator_revision
        if enrolled_with != LOCATOR_REVISION:
            if enrolled_with is not None:
                was = f"revision {enrolled_with} of the corner locator"
            elif "locator_revision" in self.info:
                was = f"a corner locator revision it records as {self.info['locator_revision']!r}"
            else:
                was = "an older revision of the corner locator"
            reasons.append(
                f"the deck was enrolled with {was} and this is revision {LOCATOR_REVISION}: "
                "its heads and threshold were fitted on the corners that locator found"
            )
        face_revision = self.info.get("face_revision")
        if self.faces is not None and face_revision != FACE_REVISION:
            if isinstance(face_revision, int) and not isinstance(face_revision, bool):
                was = f"revision {face_revision} of the face comparison"
            else:
                was = "an older comparison of the face"
            reasons.append(
                f"its face check's level was calibrated with {was} and this is revision "
                f"{FACE_REVISION}: a face may now name a wrong card more clearly than it allows"
            )
        if self.faces_set_aside:
            reasons.append(
                f"its mean faces are of deck format 4 and this reader compares format "
                f"{FORMAT_VERSION}'s: it reads without the face check and its suit veto"
            )
        return "; ".join(reasons) + "; enrol the deck again" if reasons else None

    def features(self, embedding: np.ndarray, patches: np.ndarray) -> np.ndarray:
        """The heads' input for corners with these embeddings and uint8 BGR patches."""
        return heads_input(embedding, patches, self.appearance_weight)

    def probabilities(
        self, embedding: np.ndarray, patches: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(rank (N, 14), suit (N, 4)) probabilities of N corners."""
        return self.heads.probabilities(self.features(embedding, patches))

    def save(self, path: Path) -> None:
        """Write the deck to ``path``, all of it or nothing.

        The file is written beside ``path`` and renamed over it only once complete, so an
        interrupted enrolment (Ctrl-C, a full disk, a power cut) leaves the deck that was
        there before, never a truncated one the recogniser would refuse at the next start.
        """
        import numpy as np

        path.parent.mkdir(parents=True, exist_ok=True)
        meta = {
            "format": FORMAT_VERSION,
            "model_digest": self.model_digest,
            "threshold": self.threshold,
            "appearance_weight": float(self.appearance_weight),
            "info": self.info,
        }
        arrays = self.heads.arrays()
        if self.faces is not None:
            meta["face_floor"] = self.faces.floor
            meta["face_level"] = self.faces.level
            # Half precision: a correlation needs no more, and the file is half as large.
            arrays["face_templates"] = self.faces.templates.astype(np.float16)
        # A name of its own, so two saves to one path cannot write into each other's file;
        # os.open with 0o666 gives the file the usual permissions (the umask's), where
        # tempfile.mkstemp's 0o600 would hide the deck from a daemon running as another user.
        partial = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.partial")
        try:
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            with os.fdopen(descriptor, "wb") as handle:
                np.savez(handle, meta=np.array(json.dumps(meta)), **arrays)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(partial, path)
        finally:
            partial.unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> EnrolledDeck:
        """Read a deck file; :class:`ConfigurationError` if missing, damaged or foreign."""
        import numpy as np

        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"]))
                if meta.get("format") not in _READABLE_FORMATS:
                    raise ConfigurationError(
                        f"enrolled deck {path} has format {meta.get('format')!r}, "
                        f"expected {' or '.join(map(str, sorted(_READABLE_FORMATS)))}: "
                        "enrol the deck again"
                    )
                faces = None
                set_aside = "face_templates" in data and meta["format"] < _FACE_FORMAT
                if "face_templates" in data and not set_aside:
                    faces = FaceCheck(
                        templates=np.asarray(data["face_templates"], np.float32),
                        floor=float(meta["face_floor"]),
                        level=float(meta["face_level"]),
                    )
                return cls(
                    heads=Heads.from_arrays(data),
                    model_digest=str(meta["model_digest"]),
                    threshold=float(meta["threshold"]),
                    info=dict(meta.get("info", {})),
                    appearance_weight=float(meta.get("appearance_weight", 0.0)),
                    faces=faces,
                    faces_set_aside=set_aside,
                )
        except FileNotFoundError as error:
            raise ConfigurationError(f"enrolled deck {path} not found") from error
        except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as error:
            raise ConfigurationError(f"enrolled deck {path} is not a deck file: {error}") from error


def face_names_other_rank(said: FaceReading, face_index: int, corners: int = 1) -> bool:
    """True when what a face said of face ``face_index`` names another rank and prefers it
    (or another rank) over the reading's by :data:`RANK_VETO_MARGIN` in both alignments
    (:func:`vision.face.rank_margin`), matching what it names by :data:`SUIT_VETO_MATCH`: the
    corners' rank is then in doubt (tango's five of spades, its index washed out by glare,
    read as a three by its one corner in view at 0.985). ``corners`` is how many index
    corners read face ``face_index`` (at even odds at least): against two, the face must
    prefer another rank by :data:`RANK_VETO_MARGIN_TWO_CORNERS`."""
    from controller.kernel.cards import ALL_FACES

    margin = RANK_VETO_MARGIN_TWO_CORNERS if corners >= 2 else RANK_VETO_MARGIN
    return (
        ALL_FACES[said.named].rank != ALL_FACES[face_index].rank
        and -said.rank_margin >= margin
        and said.match >= SUIT_VETO_MATCH
    )
