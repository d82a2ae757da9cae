"""A card shoe on a real pseudo-terminal, speaking a real protocol through the production codec.

:class:`ShoeSimulator` opens a pty, points a symlink at its slave side (the driver opens the
symlink, as it would open ``/dev/serial/by-id/...``), shuffles the decks with the cut card at
the chosen depth and sends one card each time :meth:`ShoeSimulator.draw` is called. Faults
are injected on the wire by a manipulator (garbage, corrupted checksums, duplicates, drops,
byte-at-a-time writes) or in the shoe (unreadable cards, a foreign card, a cable pull, a
stuck card). Every event it emits is recorded with its sequence number in :attr:`truth`
(and as JSON lines in the truth file), which is what tests compare the driver against.

Everything that depends on the protocol (the bytes of each event, the heartbeat, the answers
to the host, how a frame is spoilt) is the protocol's speaker's, built from its codec
(:mod:`drivers.shoe.speaker`, ``drivers/shoe/protocols/<name>/speaker.py``), found by name in
:mod:`drivers.shoe.registry`: this module has no branch on a protocol.

Threads: the caller's thread draws; one background thread reads host commands, sends
heartbeats and retransmissions (a speaker's answers) and owns the pty's life cycle, so a file
descriptor is never closed under a ``select`` that is waiting on it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pty
import random
import select
import threading
import time
import tty
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any, Final

from controller.kernel.cards import CARDS_PER_DECK, Card
from controller.kernel.errors import ConfigurationError, DeviceError
from drivers.shoe.registry import protocol as shoe_protocol
from drivers.shoe.registry import protocol_names
from drivers.shoe.sessions import HostCommand
from drivers.shoe.speaker import GARBLED, ShoeAction, ShoeSpeaker
from simulators.shoe.orders import shoe_cards

logger = logging.getLogger(__name__)

BYTEWISE_GAP_S: Final = 0.0005  # between single-byte writes, so the reader sees them apart
LOOP_S: Final = 0.05
PULL_AFTER_S: Final = 0.01  # a scheduled cable pull waits this long after the card's frame
# Where each card goes when a draw names no target: the first four cards of a baccarat hand.
BACCARAT_DEAL: Final = (("player", 1), ("banker", 1), ("player", 2), ("banker", 2))


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """Rates are probabilities per frame (wire faults) or per draw (shoe faults)."""

    garbage_rate: float = 0.0
    corrupt_rate: float = 0.0
    duplicate_rate: float = 0.0
    drop_rate: float = 0.0
    bytewise_rate: float = 0.0
    unreadable_rate: float = 0.0
    foreign_rate: float = 0.0
    pull_every: int = 0
    """Pull the cable after every N cards (0: never)."""
    pull_seconds: float = 0.5
    stuck_every: int = 0
    """Jam every Nth card for ``stuck_seconds`` of silence (0: never)."""
    stuck_seconds: float = 3.0

    def __post_init__(self) -> None:
        for name in (
            "garbage_rate",
            "corrupt_rate",
            "duplicate_rate",
            "drop_rate",
            "bytewise_rate",
            "unreadable_rate",
            "foreign_rate",
        ):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigurationError(f"{name} must be a probability in [0, 1]")
        if self.pull_every < 0 or self.stuck_every < 0:
            raise ConfigurationError("fault schedules count cards: they cannot be negative")
        if self.pull_seconds < 0 or self.stuck_seconds < 0:
            raise ConfigurationError("fault durations cannot be negative")


@dataclass(frozen=True, slots=True)
class Emitted:
    """One event the shoe emitted, as recorded in the truth file."""

    sequence: int
    event: str  # card, cut_card, misread, fault, fault_cleared, lock, signal, result
    card: str | None = None
    foreign: bool = False
    detail: str | None = None


@dataclass(slots=True)
class WireStats:
    frames: int = 0
    garbage: int = 0
    corrupted: int = 0
    duplicated: int = 0
    dropped: int = 0
    bytewise: int = 0
    unplugged_lost: int = 0
    overflow_lost: int = 0
    damaged: set[int] = field(default_factory=set)
    """Sequence numbers of which no intact copy reached the pty (yet)."""


def make_speaker(protocol: str, settings: dict[str, Any]) -> ShoeSpeaker:
    """Protocol ``protocol``'s speaker with the settings it takes from ``settings``.

    The same settings may be given to a shoe of any protocol (a suite makes every protocol's
    shoe with one call): each speaker takes its own. A setting no protocol's shoe has is a
    :class:`ConfigurationError`.
    """
    speaker = shoe_protocol(protocol).speaker
    known = set().union(*(shoe_protocol(name).speaker.setting_names() for name in protocol_names()))
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ConfigurationError(f"no simulated shoe has a setting {unknown[0]!r}")
    own = speaker.setting_names()
    return speaker(**{key: value for key, value in settings.items() if key in own})


class ShoeSimulator:
    """A shoe on a pty behind ``link``; start it, draw cards, stop it (or use ``with``).

    ``shoe`` holds the shoe's own settings, its protocol's speaker's (Angel Eye:
    ``variant``, ``data_bit7``, ``bcc_includes_stx``). Drive it from one thread at a time
    (the CLI serialises stdin and socket commands with a lock); its own background thread
    only answers the host and sends heartbeats.
    """

    def __init__(
        self,
        protocol: str,
        link: Path | str,
        *,
        seed: int = 0,
        decks: int = 8,
        cut_card_depth: int = 14,
        order: str = "shuffled",
        faults: FaultPlan | None = None,
        truth_path: Path | str | None = None,
        **shoe: Any,
    ) -> None:
        self.speaker = make_speaker(protocol, shoe)  # ConfigurationError naming the protocols
        if decks < 1:
            raise ConfigurationError("a shoe holds at least one deck")
        if not 0 <= cut_card_depth <= decks * CARDS_PER_DECK:
            raise ConfigurationError(
                f"cut card depth must be between 0 and {decks * CARDS_PER_DECK} cards"
            )
        self.protocol = protocol
        # Checked now, not at the first new shoe: a bad --order is a start-up error.
        shoe_cards(order, decks, random.Random(0))
        self.order = order
        self.link = Path(link)
        self.decks = decks
        self.cut_card_depth = cut_card_depth
        self.faults = faults or FaultPlan()
        self.signals: list[str] = []
        """Signals sent that took no sequence number (Angel Eye's free-signal variants)."""
        self._deal = 0
        self._shuffle_rng = random.Random(seed)
        self._fault_rng = random.Random(seed + 1)
        self.truth: list[Emitted] = []
        self._truth_path = Path(truth_path) if truth_path else None
        self._truth_file: IO[str] | None = None
        self.wire = WireStats()
        self.commands: list[str] = []
        """Host commands received, decoded, in order, in the protocol's words (``"LK 02"``,
        ``"LOCK"``...)."""
        self.host_commands: list[HostCommand | None] = []
        """The same commands as the table asks them (None: one the table has no word for)."""
        self.locked = False
        self.error_code: int | None = None
        self.shoe_number = 0
        self._cards: list[Card] = []
        self._next = 0
        self._cut_at = 0
        self._cut_drawn = False
        self._cards_drawn = 0
        self._sequence = 0
        self._drawn_faces: list[Card] = []
        # pty state, owned by the background thread (writes take _write_lock).
        self._master: int | None = None
        self._slave: int | None = None
        self._write_lock = threading.RLock()
        self._requests: list[tuple[str, float]] = []
        self._request_done = threading.Condition(threading.Lock())
        self._replug_at: float | None = None
        self._silent_until = 0.0
        self._last_sent = 0.0
        self.last_write_at = 0.0
        """time.perf_counter() just before the write() that handed the latest bytes to the
        pty (an upper bound on when the frame's last byte was on the line)."""
        self._wake_r, self._wake_w = -1, -1
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.new_shoe()

    # -- life cycle -------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            raise DeviceError("the shoe simulator is already running")
        if not self.link.parent.is_dir():
            # Said before anything is opened: the symlink (made beside the pty) is what fails,
            # and the error would otherwise name the pty.
            raise ConfigurationError(
                f"cannot put the shoe's link {self.link} in {self.link.parent}: the folder "
                f"{self.link.parent} does not exist"
            )
        if self._truth_path is not None:
            self._truth_file = self._truth_path.open("a", encoding="utf-8")
        self._wake_r, self._wake_w = os.pipe()
        self._stop.clear()
        self._plug()
        self._thread = threading.Thread(target=self._serve, name="shoe-simulator", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stop.set()
            self._wake()
            thread.join(5.0)
        self._unplug_now()
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1
        if self._truth_file is not None:
            self._truth_file.close()
            self._truth_file = None

    def __enter__(self) -> ShoeSimulator:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def plugged(self) -> bool:
        return self._master is not None

    @property
    def slave_path(self) -> str | None:
        """The tty the link points at now (it changes at every replug)."""
        slave = self._slave
        return os.ttyname(slave) if slave is not None else None

    # -- the shoe ---------------------------------------------------------------------------

    def new_shoe(self) -> None:
        """Shuffle a fresh shoe (the sequence numbering carries on)."""
        cards = shoe_cards(self.order, self.decks, self._shuffle_rng)
        self._cards = cards
        self._next = 0
        self._cut_at = len(cards) - self.cut_card_depth
        self._cut_drawn = False
        self._drawn_faces = []
        self.shoe_number += 1

    @property
    def cards_left(self) -> int:
        return len(self._cards) - self._next

    def draw(
        self, target: str | None = None, index: int | None = None, *, garbled: bool = False
    ) -> Emitted:
        """Take the next thing out of the shoe (a card, or the cut card) and send it.

        Without a ``target`` the cards go Player 1, Banker 1, Player 2, Banker 2, Player 1...
        (a protocol that reports where each card goes says so; the others do not).
        ``garbled``: the card goes out as a misread whose frame names no card (Angel Eye: its
        ``D`` frame with suit "none"), whatever the fault plan says.
        """
        if target is None:
            target, dealt_index = BACCARAT_DEAL[self._deal % len(BACCARAT_DEAL)]
            index = dealt_index if index is None else index
        elif index is None:
            index = 1
        wait = self._silent_until - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        if not self._cut_drawn and self._next >= self._cut_at:
            self._cut_drawn = True
            return self._emit("cut_card")
        if self._next >= len(self._cards):
            raise DeviceError("the shoe is empty: start a new shoe")
        faults, rng = self.faults, self._fault_rng
        self._cards_drawn += 1
        self._deal += 1
        if faults.stuck_every and self._cards_drawn % faults.stuck_every == 0:
            self.stuck(faults.stuck_seconds)
            time.sleep(faults.stuck_seconds)
        if faults.foreign_rate and rng.random() < faults.foreign_rate and self._drawn_faces:
            # A ninth copy: a face this shoe has already dealt, not taken from the shoe.
            emitted = self._emit(
                "card", card=rng.choice(self._drawn_faces), foreign=True, target=target, index=index
            )
        else:
            card = self._cards[self._next]
            self._next += 1
            self._drawn_faces.append(card)
            if garbled:
                emitted = self._emit(
                    "misread", card=card, detail=GARBLED, target=target, index=index
                )
            elif faults.unreadable_rate and rng.random() < faults.unreadable_rate:
                emitted = self._emit("misread", card=card)
            else:
                emitted = self._emit("card", card=card, target=target, index=index)
        if faults.pull_every and self._cards_drawn % faults.pull_every == 0:
            time.sleep(PULL_AFTER_S)  # the cable comes out between two cards, not inside one
            self.unplug(faults.pull_seconds)
        return emitted

    def signal(self, code: str = "S") -> Emitted | None:
        """Send a signal, if the protocol has them (Angel Eye: ``S`` start of communication,
        ``P`` stand by).

        One that takes no sequence number (Angel Eye's free-signal variants) carries the last
        one and is not in :attr:`truth` (see :attr:`signals`); returns None then.
        """
        codes = self.speaker.signal_codes
        if not codes:
            raise ConfigurationError(f"the {self.protocol} protocol has no signals")
        if code not in codes:
            raise ConfigurationError(f"signals are {' and '.join(codes)}, not {code!r}")
        return self._emit("signal", detail=code)

    def report_result(
        self, outcome: str, player_pair: bool = False, banker_pair: bool = False
    ) -> Emitted:
        """The shoe reports its own result of the hand, if the protocol has it (Angel Eye
        ``G``)."""
        if not self.speaker.reports_results:
            raise ConfigurationError(f"the {self.protocol} protocol reports no results")
        return self._emit(
            "result", detail=self.speaker.result_detail(outcome, player_pair, banker_pair)
        )

    def report_fault(self, code: int = 2) -> Emitted:
        """The shoe reports one of its own errors (:data:`~drivers.shoe.speaker.FAULT_MESSAGES`;
        2 = overdraw)."""
        self.error_code = code
        return self._emit("fault", detail=str(code))

    def turn_key(self, locked: bool) -> Emitted:
        """The physical lock key was turned."""
        self.locked = locked
        return self._emit("lock", detail="1" if locked else "0")

    def stuck(self, seconds: float) -> None:
        """A card jams: nothing at all (not even heartbeats) for ``seconds``."""
        self._silent_until = time.monotonic() + seconds

    def send_garbage(self, count: int = 16) -> None:
        self._write(self._garbage(count), bytewise=False)

    # -- the cable --------------------------------------------------------------------------

    def unplug(self, seconds: float | None = None) -> None:
        """Pull the cable: the pty closes and the link vanishes; back after ``seconds``."""
        self._request("unplug", -1.0 if seconds is None else seconds)

    def replug(self) -> None:
        """Plug the cable back: a new pty behind the same link."""
        self._request("replug", 0.0)

    def _request(self, what: str, argument: float) -> None:
        if self._thread is None:
            raise DeviceError("the shoe simulator is not running")
        with self._request_done:
            self._requests.append((what, argument))
            self._wake()
            if not self._request_done.wait_for(lambda: not self._requests, timeout=5.0):
                raise DeviceError(f"the shoe simulator did not {what}")

    def _plug(self) -> None:
        master, slave = pty.openpty()
        tty.setraw(slave)
        os.set_blocking(master, False)
        self.speaker.plugged()
        temporary = self.link.with_name(self.link.name + ".new")
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
        os.symlink(os.ttyname(slave), temporary)
        with self._write_lock:
            self._master, self._slave = master, slave
        os.replace(temporary, self.link)
        self._replug_at = None
        logger.info("shoe plugged in: %s -> %s", self.link, os.ttyname(slave))

    def _unplug_now(self) -> None:
        with self._write_lock:
            master, slave = self._master, self._slave
            self._master = self._slave = None
            for fd in (master, slave):
                if fd is not None:
                    os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            self.link.unlink()

    # -- the background thread --------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._wake_w, b"x")

    def _serve(self) -> None:
        try:
            while not self._stop.is_set():
                self._handle_requests()
                if self._replug_at is not None and time.monotonic() >= self._replug_at:
                    self._plug()
                master = self._master
                watched = [self._wake_r] if master is None else [self._wake_r, master]
                readable, _, _ = select.select(watched, [], [], LOOP_S)
                if self._wake_r in readable:
                    os.read(self._wake_r, 4096)
                if master is not None and master in readable:
                    try:
                        data = os.read(master, 4096)
                    except OSError:
                        data = b""  # EIO: no one has the slave open; nothing to read
                    if data:
                        self._host_bytes(data)
                self._heartbeat()
        except Exception:  # pragma: no cover - a simulator bug must be visible, not silent
            logger.exception("shoe simulator thread failed")
            raise

    def _handle_requests(self) -> None:
        with self._request_done:
            requests, self._requests = self._requests, []
            for what, argument in requests:
                if what == "unplug":
                    if self._master is not None:
                        self._unplug_now()
                        logger.info("shoe unplugged")
                    self._replug_at = time.monotonic() + argument if argument >= 0 else None
                elif what == "replug" and self._master is None:
                    self._plug()
            self._request_done.notify_all()

    def _heartbeat(self) -> None:
        every = self.speaker.heartbeat_s
        if every is None or self._master is None:
            return
        now = time.monotonic()
        if now < self._silent_until or now - self._last_sent < every:
            return
        self._write(self.speaker.heartbeat(self._sequence), False)

    # -- protocol: emitting -----------------------------------------------------------------

    def _emit(
        self,
        event: str,
        card: Card | None = None,
        foreign: bool = False,
        detail: str | None = None,
        target: str = "player",
        index: int = 1,
    ) -> Any:
        speaker = self.speaker
        with self._write_lock:
            if not speaker.takes_number(event, detail):
                # An event that takes no number (a free signal): it carries the last one.
                self.signals.append(detail or "")
                action = ShoeAction(self._sequence, event, card, detail, target, index)
                self._transmit(speaker.encode(action), -len(self.signals))
                self.wire.damaged.discard(-len(self.signals))
                return None
            self._sequence += 1
            record = Emitted(self._sequence, event, str(card) if card else None, foreign, detail)
            self.truth.append(record)
            if self._truth_file is not None:
                self._truth_file.write(json.dumps(_without_none(asdict(record))) + "\n")
                self._truth_file.flush()
            raw = speaker.encode(ShoeAction(record.sequence, event, card, detail, target, index))
            speaker.sent(record.sequence, raw)
            self._transmit(raw, record.sequence)
        return record

    # -- the wire manipulator ---------------------------------------------------------------

    def _garbage(self, count: int) -> bytes:
        return bytes(self._fault_rng.randrange(256) for _ in range(count))

    def _transmit(self, raw: bytes, sequence: int) -> None:
        faults, rng, stats = self.faults, self._fault_rng, self.wire
        stats.frames += 1
        copies = 2 if faults.duplicate_rate and rng.random() < faults.duplicate_rate else 1
        stats.duplicated += copies - 1
        intact = False
        for copy in range(copies):
            if faults.drop_rate and rng.random() < faults.drop_rate:
                stats.dropped += 1
                continue
            piece = raw
            spoilt = False
            if faults.garbage_rate and rng.random() < faults.garbage_rate:
                stats.garbage += 1
                noise = self._garbage(rng.randint(1, 8))
                piece = noise + piece
                spoilt = self.speaker.noise_spoils(noise)
            if copy == 0 and faults.corrupt_rate and rng.random() < faults.corrupt_rate:
                stats.corrupted += 1
                piece = piece[: len(piece) - len(raw)] + self.speaker.corrupt(raw, rng)
                spoilt = True
            bytewise = bool(faults.bytewise_rate) and rng.random() < faults.bytewise_rate
            stats.bytewise += bytewise
            if self._write(piece, bytewise) and not spoilt:
                intact = True
        if intact:
            stats.damaged.discard(sequence)
        else:
            stats.damaged.add(sequence)

    def _write(self, data: bytes, bytewise: bool) -> bool:
        """Write to the pty; False if the cable is out or nobody is reading (bytes lost)."""
        with self._write_lock:
            master = self._master
            if master is None:
                self.wire.unplugged_lost += 1
                return False
            self._last_sent = time.monotonic()
            chunks = [data[i : i + 1] for i in range(len(data))] if bytewise else [data]
            for number, chunk in enumerate(chunks):
                if number:
                    time.sleep(BYTEWISE_GAP_S)
                view = memoryview(chunk)
                while view:
                    # Stamped before the call that hands the bytes over: the reader may
                    # decode them before this thread returns from write().
                    self.last_write_at = time.perf_counter()
                    try:
                        written = os.write(master, view)
                    except BlockingIOError:
                        self.wire.overflow_lost += 1
                        return False
                    view = view[written:]
            return True

    # -- the host, through the protocol's speaker (a ShoeSide) -----------------------------

    def _host_bytes(self, data: bytes) -> None:
        with self._write_lock:  # the draw thread's events and the answers never interleave
            self.speaker.host_bytes(data, self)

    @property
    def last_sequence(self) -> int:
        """The number of the last event the shoe numbered (0: none)."""
        return self._sequence

    def write(self, data: bytes) -> None:
        self._write(data, False)

    def transmit(self, raw: bytes, sequence: int) -> None:
        self._transmit(raw, sequence)

    def command_received(self, text: str, command: HostCommand | None) -> None:
        self.commands.append(text)
        self.host_commands.append(command)

    def clear_error(self) -> int | None:
        """Clear the shoe's error and report it cleared; None if there was none."""
        code, self.error_code = self.error_code, None
        if code is not None:
            self._emit("fault_cleared", detail=str(code))
        return code


def _without_none(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if value not in (None, False)}
