"""Answer the table's ``AskCamera`` effects from a camera, on a thread of its own.

The state machine asks for a card by hand and slot (``AskCamera(position, reason,
card_number)``); this component crops the slot's region
(:func:`drivers.camera.card_slot`) from a few consecutive frames taken after the question,
asks the recogniser (:meth:`vision.recognise.Recogniser.recognise_frames`, which votes
across them) and puts the answer on the table's queue as ``CameraRead(position, card, at)``.

It is thin on purpose. Every failure is an abstention (``card=None``), which the table
turns into a pause for a supervisor: no camera configured, a slot the camera has no region
for, no frame within the deadline (camera offline), the recogniser failing or unsure. A
wrong card is far worse than none. Each abstention is logged with its cause; a card's face
is logged only for face-up reads (``misread``, ``cross_check``), never for the hole card.

The runtime's thread only puts the question on this reader's queue
(:meth:`CameraReader.ask`): reading takes tens of milliseconds per frame, and the table
must not wait for it. OpenCV (through ``vision``) is imported when the reader starts with a
camera, never when this module is imported.
"""

from __future__ import annotations

import logging
import math
import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from controller.kernel.cards import Card
from controller.kernel.config_file import check_keys, invalid
from controller.kernel.errors import ConfigurationError, TableError
from controller.table.effects import AskCamera
from controller.table.events import CameraRead
from drivers.camera import FrameSource, card_slot

if TYPE_CHECKING:
    import numpy as np

    from vision.recognise import Recogniser

logger = logging.getLogger(__name__)

# Reasons whose card lies face up for all to see: its face may go to the log.
FACE_UP_REASONS: Final = frozenset({"misread", "cross_check"})

_CONFIG_KEYS: Final = frozenset({"deck", "model", "frames", "deadline_s"})
DECK_ENV: Final = "LIVETABLE_VISION_DECK"
MODEL_ENV: Final = "LIVETABLE_VISION_MODEL"


@dataclass(frozen=True, slots=True)
class ReaderConfig:
    """How the camera reader reads (the ``[vision]`` table of a table's TOML config).

    ``deck``: the studio's enrolled deck (``livetable camera enrol``), which a table's
    camera needs (:func:`require_deck`). ``model``: another corner network than the shipped one.
    ``frames``: consecutive frames voted on per answer. ``deadline_s``: how long a read may
    wait for frames (and for the card to appear in its slot) before abstaining; keep it
    well under the table's camera timer (``dealer_idle_s``).
    """

    deck: Path | None = None
    model: Path | None = None
    frames: int = 3
    deadline_s: float = 2.0

    def __post_init__(self) -> None:
        if isinstance(self.frames, bool) or not isinstance(self.frames, int):
            raise invalid("frames", "a whole number", self.frames, section="vision")
        if not 1 <= self.frames <= 25:
            raise invalid("frames", "1..25", self.frames, section="vision")
        deadline = self.deadline_s
        if isinstance(deadline, bool) or not isinstance(deadline, int | float):
            raise invalid("deadline_s", "a number of seconds", deadline, section="vision")
        if not (math.isfinite(deadline) and 0 < deadline <= 60):
            raise invalid("deadline_s", "in (0, 60] seconds", deadline, section="vision")

    @classmethod
    def from_mapping(
        cls,
        mapping: Mapping[str, Any],
        base_dir: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> ReaderConfig:
        """Validate a ``[vision]`` table; relative paths are taken from ``base_dir`` (the
        TOML file's folder). ``LIVETABLE_VISION_DECK`` and ``LIVETABLE_VISION_MODEL``
        override the paths (containers mount the deck where they like)."""
        if not isinstance(mapping, Mapping):
            raise ConfigurationError("[vision] must be a table")
        check_keys(mapping, _CONFIG_KEYS, "vision")
        environ = os.environ if environ is None else environ
        paths: dict[str, Path | None] = {}
        for key, variable in (("deck", DECK_ENV), ("model", MODEL_ENV)):
            value: object = environ.get(variable) or mapping.get(key)
            if value is None:
                paths[key] = None
                continue
            if not isinstance(value, str) or not value.strip():
                raise invalid(key, "a file path", value, section="vision")
            path = Path(value).expanduser()
            if not path.is_absolute() and base_dir is not None:
                path = base_dir / path
            paths[key] = path
        return cls(
            deck=paths["deck"],
            model=paths["model"],
            frames=mapping.get("frames", 3),
            deadline_s=mapping.get("deadline_s", 2.0),
        )


def require_deck(config: ReaderConfig | None, *, check_file: bool = True) -> Path:
    """The enrolled deck a table's camera reads with; ConfigurationError, in one line that
    names the fix, when none is named or (``check_file``) none is there yet.

    Without a deck the shipped model reads alone, and it is not safe alone: on a design it
    was not trained on it abstains on most cards, and on one it reads some clubs as spades
    surely (39 wrong of 2,000 at up to 0.998, docs/vision.md), beyond any threshold's reach.
    """
    if config is None or config.deck is None:
        raise ConfigurationError(
            "[camera] needs the studio's enrolled deck as [vision] deck (the shipped model "
            "alone misreads some card designs): make it with livetable camera enrol "
            "(docs/camera.md)"
        )
    if check_file and not config.deck.is_file():
        raise ConfigurationError(
            f"[vision] deck {config.deck} is not enrolled yet: make it with livetable camera "
            f"enrol ... -o {config.deck} (docs/camera.md)"
        )
    return config.deck


def load_recogniser(config: ReaderConfig) -> Recogniser:
    """The recogniser ``config`` names (imports OpenCV); ConfigurationError if the deck or
    the model is missing, damaged, or the deck was enrolled with another model."""
    from vision.deck import EnrolledDeck
    from vision.model import DEFAULT_MODEL
    from vision.recognise import SLOT_SINGLE_CORNER_THRESHOLD, Recogniser

    deck = EnrolledDeck.load(config.deck) if config.deck is not None else None
    if deck is not None and (warning := deck.stale_warning()):
        logger.warning("camera deck %s: %s", config.deck, warning)
    # A slot's region is centred on the slot: in a blackjack cascade it also shows the index
    # of the card beneath, which must never be read as the slot's card; a neighbour may cover
    # one index corner, so an answer from one corner alone must score higher.
    return Recogniser(
        config.model or DEFAULT_MODEL,
        deck=deck,
        slot_centred=True,
        single_corner_threshold=SLOT_SINGLE_CORNER_THRESHOLD,
    )


@dataclass(frozen=True, slots=True)
class CameraAnswer:
    """What the reader answered to one ``AskCamera``: ``card`` is None when it abstained,
    and ``why`` says why (or ``"recognised"``). ``slot`` is the region read (None if the
    question named no slot)."""

    ask: AskCamera
    slot: str | None
    card: Card | None
    why: str
    frames: int = 0
    confidence: float = 0.0


class CameraReader:
    """Reads the cards the table asks for from ``source`` and submits ``CameraRead`` events.

    ``source`` is any :class:`drivers.camera.FrameSource` (the capture thread or the camera
    simulator), or None when the table has no camera (every question is then answered with
    an abstention at once). ``submit`` puts an event on the table's queue (thread-safe).
    ``recogniser`` overrides the one ``config`` names. ``on_answer`` is told every answer
    (from the reader's thread), for a console or a test.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. :meth:`ask` is the
    runtime's ``ask_camera``: it only queues the question.
    """

    def __init__(
        self,
        source: FrameSource | None,
        submit: Callable[[object], None],
        *,
        config: ReaderConfig | None = None,
        recogniser: Recogniser | None = None,
        clock: Callable[[], float] = time.time,
        on_answer: Callable[[CameraAnswer], None] | None = None,
    ) -> None:
        self.source = source
        self.submit = submit
        self.config = config or ReaderConfig()
        self.clock = clock
        self.on_answer = on_answer
        self._recogniser = recogniser
        self._questions: queue.Queue[AskCamera | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.answered = 0

    def start(self) -> None:
        """Load the recogniser (when there is a camera) and start the reading thread.

        No deck, or a missing or foreign one, is a ConfigurationError here, at start-up, not
        an abstention (or a wrong card) on every card later."""
        if self._thread is not None:
            raise TableError("the camera reader is already started")
        if self.source is not None and self._recogniser is None:
            # The file itself is checked by loading it, in the loader's words.
            require_deck(self.config, check_file=False)
            self._recogniser = load_recogniser(self.config)
        self._thread = threading.Thread(target=self._work, name="camera-reader", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Finish the question being read, drop the rest (unanswered: the table's camera
        timer pauses the round), and join the thread."""
        thread = self._thread
        if thread is None:
            return
        while True:
            try:
                dropped = self._questions.get_nowait()
            except queue.Empty:
                break
            if dropped is not None:
                logger.warning("camera reader stopped before reading %s", dropped.position)
        self._questions.put(None)
        thread.join(self.config.deadline_s + 5.0 if timeout is None else timeout)
        if thread.is_alive():
            raise TableError("the camera reader did not stop in time")
        self._thread = None

    def __enter__(self) -> CameraReader:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    def ask(self, effect: AskCamera) -> None:
        """Queue a question; returns at once (called on the table's thread)."""
        if self._thread is None:
            raise TableError("the camera reader is not started")
        self._questions.put(effect)

    # The reading thread.

    def _work(self) -> None:
        while True:
            question = self._questions.get()
            if question is None:
                return
            try:
                answer = self.read(question)
            except Exception as error:  # a bug must not silence the table's camera
                logger.error("camera reader failed: %s", type(error).__name__)
                answer = CameraAnswer(
                    question, None, None, f"internal error ({type(error).__name__})"
                )
            if self.on_answer is not None:
                # Told before the table hears it, so a console shows the reading first.
                try:
                    self.on_answer(answer)
                except Exception:  # pragma: no cover - the observer's bug, not ours
                    logger.exception("camera answer observer failed")
            event = CameraRead(
                question.position, answer.card, float(self.clock()), question.card_number
            )
            try:
                self.submit(event)
            except Exception:  # the thread must live on for the next question
                logger.exception("the camera's answer could not be handed to the table")
                continue
            self.answered += 1

    def read(self, question: AskCamera) -> CameraAnswer:
        """Read one question now, on the calling thread; never raises for a device,
        configuration or recognition failure (it abstains and logs why)."""
        try:
            slot = card_slot(question.position, question.card_number)
        except (ConfigurationError, TypeError) as error:
            return self._abstain(question, None, f"no card slot: {error}")
        source, recogniser = self.source, self._recogniser
        if source is None or recogniser is None:
            return self._abstain(question, slot, "no camera is configured")
        if slot not in source.regions:
            return self._abstain(question, slot, "the camera has no region for this slot")
        deadline = time.monotonic() + self.config.deadline_s
        try:
            latest = source.latest()
        except TableError as error:
            return self._abstain(question, slot, f"camera error: {error}")
        newer_than = latest.number if latest is not None else 0
        frames_read = 0
        recognition = None
        # Frames taken after the question: the card may still be on its way to its spot,
        # so while the slot shows no card at all, look again until the deadline. Any other
        # answer (a card, or a card the recogniser is unsure of) is final: asking again and
        # again would only give a doubtful reading more chances to pass. Except for a hole
        # card: it is asked for as the dealer is told to turn it over, so the first frames
        # show its back or a card half turned. Then any abstention means "look again", and
        # a card read after one is taken only when the next reading agrees.
        patient = question.reason == "hole_reveal"
        readings = 0
        previous: Card | None = None
        confirmed = False
        while True:
            images, newer_than, failure = self._images(source, slot, newer_than, deadline)
            if failure is not None:
                if recognition is not None:  # the slot stayed unreadable until the deadline
                    failure = "no card found within the deadline"
                return self._abstain(question, slot, failure, frames_read)
            frames_read += len(images)
            try:
                recognition = recogniser.recognise_frames(images)
            except Exception as error:  # OpenCV's own errors are not ours: contain them
                return self._abstain(
                    question, slot, f"recogniser error ({type(error).__name__})", frames_read
                )
            readings += 1
            confirmed = recognition.card is not None and (
                readings == 1 or recognition.card == previous
            )
            previous = recognition.card
            if patient and confirmed:
                break
            if not patient and recognition.reason != "no card found":
                break
            if time.monotonic() >= deadline:
                break
        if patient and recognition.card is not None and not confirmed:
            return self._abstain(
                question, slot, "the reading was not confirmed before the deadline", frames_read
            )
        if recognition.card is None:
            why = recognition.reason
            if why == "no card found":  # it looked until the deadline
                why = "no card found within the deadline"
            return self._abstain(question, slot, why, frames_read, recognition.confidence)
        if question.reason in FACE_UP_REASONS:
            logger.info(
                "camera read %s at %s (%s, confidence %.4f, %d frames)",
                recognition.card,
                slot,
                question.reason,
                recognition.confidence,
                frames_read,
            )
        else:
            logger.info(
                "camera read the card at %s (%s: face not logged, %d frames)",
                slot,
                question.reason,
                frames_read,
            )
        return CameraAnswer(
            question, slot, recognition.card, "recognised", frames_read, recognition.confidence
        )

    def _images(
        self, source: FrameSource, slot: str, newer_than: int, deadline: float
    ) -> tuple[list[np.ndarray], int, str | None]:
        """``frames`` crops of ``slot`` from frames newer than ``newer_than``; the last
        frame's number; the reason for none, if the camera failed or the deadline passed."""
        images = []
        while len(images) < self.config.frames:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return images, newer_than, "no frame from the camera within the deadline"
            try:
                frame = source.wait_for_frame(newer_than=newer_than, timeout=remaining)
                if frame is None:
                    return images, newer_than, "no frame from the camera within the deadline"
                newer_than = frame.number
                images.append(source.region(slot, frame).image)
            except TableError as error:
                return images, newer_than, f"camera error: {error}"
            except Exception as error:  # OpenCV's errors while cropping
                return images, newer_than, f"camera error ({type(error).__name__})"
        return images, newer_than, None

    @staticmethod
    def _abstain(
        question: AskCamera,
        slot: str | None,
        why: str,
        frames: int = 0,
        confidence: float = 0.0,
    ) -> CameraAnswer:
        logger.warning(
            "camera abstains on %s (%s): %s",
            slot or question.position,
            question.reason,
            why,
        )
        return CameraAnswer(question, slot, None, why, frames, confidence)
