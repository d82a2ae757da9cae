"""Per-protocol sessions: decoded frames in, :mod:`drivers.shoe.events` and bytes to send out.

A session is the protocol's state between the codec and the port: sequence tracking (gaps
become :class:`CardsLost`, duplicates are dropped), command answers, acknowledgements and
resend requests. It does no I/O and reads no clock: the driver passes ``at`` (wall-clock
time stamped on events) and ``now`` (a monotonic reading for timers), so every session is
testable without a port or a thread.
"""

from __future__ import annotations

import enum
import logging
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar, Final

from controller.kernel.cards import parse_card
from controller.kernel.errors import ConfigurationError, RulesError
from drivers.shoe import angel_eye, ascii_lines, native
from drivers.shoe.angel_eye_variants import (
    BIT7_SETTINGS,
    SIGNAL_CODES,
    VARIANT_NAMES,
    SequenceCounter,
)
from drivers.shoe.codec import DecoderStats
from drivers.shoe.events import (
    CardDrawn,
    CardMisread,
    CardsLost,
    CutCardDrawn,
    ShoeEvent,
    ShoeFault,
    ShoeFaultCleared,
    ShoeLockChanged,
)

logger = logging.getLogger(__name__)


class HostCommand(enum.Enum):
    """What the table may ask of the shoe, whatever the protocol calls it."""

    LOCK = "lock"
    UNLOCK = "unlock"
    CLEAR_ERROR = "clear-error"
    CONFIRM_GAME = "confirm-game"


@dataclass(slots=True)
class Reaction:
    """What a session wants done after some bytes arrived."""

    events: list[ShoeEvent] = field(default_factory=list)
    to_send: bytes = b""
    frames: int = 0
    """Valid frames decoded from these bytes (a sign the shoe is alive)."""
    results: list[tuple[int, ShoeResult]] = field(default_factory=list)
    """The shoe's own hand results (Angel Eye ``G``), not table events (see ShoeResult),
    each with its place in the stream: the number of ``events`` that came before it."""


@dataclass(slots=True)
class SessionStats:
    duplicates_dropped: int = 0
    sequences_lost: int = 0
    resend_requests: int = 0


class ShoeSession(ABC):
    """One protocol's state for one driver; reset of the link via :meth:`closed`."""

    name: ClassVar[str]
    """The protocol's name in ``[shoe] protocol`` and every ``--protocol`` option."""
    default_baudrate: ClassVar[int]
    sequenced: ClassVar[bool] = True
    """Whether frames carry sequence numbers: only then can a lost or repeated card be told."""
    gaps_always_visible: ClassVar[bool] = False
    """Whether the protocol accounts for every card whatever happens between two frames (a
    restart of the table, a cable pulled): it resends each, or names each it lost. A
    one-character SEQ that wraps every ten cards cannot; neither can unnumbered lines."""
    heartbeat_timeout_s: ClassVar[float | None] = None
    """Silence after which the shoe counts as offline; ``None``: the protocol has no
    heartbeat, the shoe is online as soon as its port is open."""
    supported_commands: ClassVar[frozenset[HostCommand]] = frozenset()

    def __init__(self) -> None:
        self.session_stats = SessionStats()

    @property
    @abstractmethod
    def decoder_stats(self) -> DecoderStats: ...

    def resume(self, last_sequence: int) -> None:
        """Number on from ``last_sequence``, the last shoe sequence number an earlier run
        delivered (a restarted table's journal), before the port is first opened: the first
        frame then shows what the shoe sent while nobody read it. A protocol without
        numbers has nothing to resume."""
        return None

    def opened(self, now: float) -> bytes:
        """The port has just been (re)opened; returns bytes to send first."""
        return b""

    @abstractmethod
    def receive(self, data: bytes, at: float, now: float) -> Reaction: ...

    def poll(self, now: float) -> bytes:
        """Timers: bytes to send now that no data has arrived."""
        return b""

    @abstractmethod
    def closed(self) -> None:
        """The link dropped: a partial frame will never be completed."""

    @abstractmethod
    def command(self, command: HostCommand) -> bytes:
        """Encode ``command``; :class:`ConfigurationError` if the protocol has none."""


# --- Angel Eye ------------------------------------------------------------------------------

_ANGEL_EYE_COMMANDS: Final[dict[HostCommand, tuple[str, str]]] = {
    HostCommand.LOCK: ("LK", "02"),
    HostCommand.UNLOCK: ("LK", "01"),
    HostCommand.CLEAR_ERROR: ("EC", "00"),
    HostCommand.CONFIRM_GAME: ("GP", "00"),
}
_BCC_ERROR: Final = 0x02


@dataclass(frozen=True, slots=True)
class ShoeResult:
    """The shoe's own result of a hand (Angel Eye ``G``), for a cross-check with the table.

    Not a table event (the table computes results itself): the driver hands it to whoever
    asked for it (``ShoeDriver(on_result=...)``) in order with the events around it.
    """

    result: angel_eye.GameResult
    sequence: int | None
    at: float

    @property
    def text(self) -> str:
        return self.result.text


@dataclass(slots=True)
class AngelEyeObservations:
    """What one run saw of an Angel Eye shoe: the commissioning report is made from it."""

    codes: Counter[str] = field(default_factory=Counter)
    seq_symbols: set[str] = field(default_factory=set)
    wraps: Counter[str] = field(default_factory=Counter)
    """SEQ steps across the top of the count, e.g. ``"9→0"``, ``"9→1"``."""
    bit7_set: int = 0
    bit7_clear: int = 0
    impossible: Counter[str] = field(default_factory=Counter)
    """Card frames with a field no shoe can send, by reason."""
    new_shoes_confirmed: int = 0
    results: int = 0
    gaps: int = 0


class AngelEyeSession(ShoeSession):
    """Angel Eye II-EX: one-character SEQ, no heartbeat, no retransmission on request.

    Sequence numbers are unwrapped into a running count by a
    :class:`~drivers.shoe.angel_eye_variants.SequenceCounter` under the configured variant
    (``auto``: found from the first frames): a gap reports the numbers in between as lost;
    a repeated SEQ is a duplicate (the shoe's triple transmission) and dropped. A gap of a
    whole cycle or more looks like a smaller one: the protocol cannot tell, see the docs.
    The count is kept across reconnects, because taking a repeat for a new card would invent
    one, and across a restart of the table from the journal's last number (:meth:`resume`).
    A card frame with an impossible field (Player card 0 or 4, suit 0, rank 14) is a
    :class:`CardMisread` with the reason in the log, never a card.
    """

    name = "angel-eye"
    default_baudrate = 4800
    supported_commands = frozenset(HostCommand)

    def __init__(
        self,
        bcc_includes_stx: bool = True,
        retry_other_bcc: bool = True,
        variant: str = "auto",
        data_bit7: str = "auto",
    ) -> None:
        super().__init__()
        if variant not in VARIANT_NAMES:
            raise ConfigurationError(
                f"unknown Angel Eye variant {variant!r}: expected one of {', '.join(VARIANT_NAMES)}"
            )
        if data_bit7 not in BIT7_SETTINGS:
            raise ConfigurationError(
                f"data_bit7 must be one of {', '.join(BIT7_SETTINGS)}, not {data_bit7!r}"
            )
        self.bcc_includes_stx = bcc_includes_stx
        self.retry_other_bcc = retry_other_bcc
        self.data_bit7 = data_bit7
        self.counter = SequenceCounter(variant)
        alphabet = "any" if variant in ("auto", "any-seq") else "digits"
        self.decoder = angel_eye.AngelEyeDecoder(
            seq_alphabet=alphabet, data_bit7="required" if data_bit7 == "required" else "ignored"
        )
        self.observed = AngelEyeObservations()
        self._pending: angel_eye.HostCommand | None = None
        self._retried = False
        self._cut_card_drawn = False

    @property
    def last_sequence(self) -> int | None:
        return self.counter.last_sequence

    def resume(self, last_sequence: int) -> None:
        self.counter.resume(last_sequence)

    @property
    def variant(self) -> str:
        """The SEQ profile in effect (``auto`` while undecided)."""
        return self.counter.variant

    @property
    def decoder_stats(self) -> DecoderStats:
        return self.decoder.stats

    def closed(self) -> None:
        self.decoder.reset()
        self._pending = None

    def command(self, command: HostCommand) -> bytes:
        kind, value = _ANGEL_EYE_COMMANDS[command]
        self._pending = angel_eye.HostCommand(kind, value, self.bcc_includes_stx)
        self._retried = False
        return self._pending.to_bytes()

    def receive(self, data: bytes, at: float, now: float) -> Reaction:
        reaction = Reaction()
        for frame in self.decoder.feed(data):
            reaction.frames += 1
            if isinstance(frame, angel_eye.EventFrame):
                self._event(frame, at, reaction)
            elif isinstance(frame, angel_eye.Ack):
                self._ack(at, reaction)
            elif isinstance(frame, angel_eye.Nak):
                self._nak(frame, at, reaction)
            else:
                logger.info("shoe reply %r", frame.data)
        return reaction

    def _observe(self, frame: angel_eye.EventFrame) -> None:
        observed = self.observed
        observed.codes[frame.code] += 1
        observed.seq_symbols.add(frame.seq_text)
        if frame.data and frame.code != "M":
            if frame.bit7_set:
                observed.bit7_set += 1
            else:
                observed.bit7_clear += 1
                if self.data_bit7 == "auto" and observed.bit7_clear == 1:
                    logger.warning(
                        "the shoe sends data bytes with bit 7 clear (%r): reading them masked; "
                        'set [shoe] data_bit7 = "ignored" once commissioned',
                        frame,
                    )

    def _sequence(self, frame: angel_eye.EventFrame, at: float, reaction: Reaction) -> int | None:
        """The running sequence number, or None for a duplicate or an unnumbered signal."""
        previous_symbol = self.counter.last_symbol
        counted = self.counter.count(frame)
        if counted.decision is not None:
            logger.info("Angel Eye profile: %s (%s)", self.counter.variant, counted.decision)
        if counted.contradiction:
            logger.error(
                "shoe SEQ %r contradicts the Angel Eye profile (now %s): check [shoe] variant",
                frame.seq_text,
                self.counter.variant,
            )
        if counted.duplicate:
            self.session_stats.duplicates_dropped += 1
            return None
        if counted.sequence is None:
            return None
        if (
            previous_symbol is not None
            and previous_symbol <= 9
            and frame.sequence < previous_symbol
        ):
            self.observed.wraps[f"{previous_symbol}→{frame.seq_text}"] += 1
        if counted.lost:
            self.session_stats.sequences_lost += len(counted.lost)
            self.observed.gaps += 1
            logger.warning("shoe sequence gap: lost %s", counted.lost)
            reaction.events.append(CardsLost(counted.lost, at))
        return counted.sequence

    def _event(self, frame: angel_eye.EventFrame, at: float, reaction: Reaction) -> None:
        self._observe(frame)
        sequence = self._sequence(frame, at, reaction)
        code = frame.code
        if sequence is None:
            if code in SIGNAL_CODES and not self.counter.rule.signals_numbered:
                self._signal(frame)
            return
        events = reaction.events
        if code in ("D", "d"):
            payload = frame.card_payload
            reason = payload.impossible(code)
            if reason is not None:
                self.observed.impossible[reason.split(" (")[0]] += 1
                logger.warning("impossible card in %r: %s; reported as a misread", frame, reason)
                events.append(CardMisread(sequence, at))
                return
            position = payload.target_name if code == "D" else "outside-game"
            events.append(CardDrawn(payload.card(), sequence, at, position=position))
        elif code == "R":
            # Not a new card out of the shoe: the card an overdraw left for the next round.
            logger.info("shoe retransmitted the next round's card: %r", frame)
        elif code == "C":
            self._cut_card_drawn = True
            events.append(CutCardDrawn(sequence, at))
        elif code == "G":
            result = angel_eye.GameResult.from_data(frame.data)
            self.observed.results += 1
            logger.info("the shoe's own result: %s (SEQ %s)", result.text, frame.seq_text)
            reaction.results.append((len(events), ShoeResult(result, sequence, at)))
        elif code == "E":
            error_code = frame.data[0] & 0x3F
            if error_code == angel_eye.UNREADABLE_CARD_ERROR:
                events.append(CardMisread(sequence, at))
            else:
                message = angel_eye.ERROR_MESSAGES.get(error_code, "unknown error")
                events.append(ShoeFault(f"E{error_code}", message, at))
        elif code == "e":
            events.append(ShoeFaultCleared(f"E{frame.data[0] & 0x7F}", at))
        elif code == "L":
            events.append(ShoeLockChanged(bool(frame.data[0] & 0x01), at))
        elif code in SIGNAL_CODES:
            self._signal(frame)
        else:
            logger.info("shoe event %s %r", code, frame.data)

    def _signal(self, frame: angel_eye.EventFrame) -> None:
        if frame.code == "S" and self._cut_card_drawn:
            # After the cut card, the shoe's start signal confirms that a new shoe is in.
            self._cut_card_drawn = False
            self.observed.new_shoes_confirmed += 1
            logger.info("the shoe confirmed a new shoe (S after the cut card)")
        else:
            logger.info("shoe signal %s", frame.code)

    def _ack(self, at: float, reaction: Reaction) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            logger.info("ACK with no command outstanding (noise on the line?)")
        elif pending.command == "LK":
            # The shoe's L event reports only the physical key; the ACK is our confirmation.
            reaction.events.append(ShoeLockChanged(pending.value == "02", at))

    def _nak(self, nak: angel_eye.Nak, at: float, reaction: Reaction) -> None:
        pending = self._pending
        if pending is None:
            logger.info("NAK %02X with no command outstanding", nak.code)
            return
        if nak.code == _BCC_ERROR and self.retry_other_bcc and not self._retried:
            # The BCC span of commands is unresolved; the shoe tells us which one it wants.
            self.bcc_includes_stx = not self.bcc_includes_stx
            logger.warning(
                "shoe rejected the command BCC; switching includes_stx to %s", self.bcc_includes_stx
            )
            self._pending = angel_eye.HostCommand(
                pending.command, pending.value, self.bcc_includes_stx
            )
            self._retried = True
            reaction.to_send += self._pending.to_bytes()
            return
        self._pending = None
        reaction.events.append(
            ShoeFault(
                f"NAK{nak.code:02X}",
                f"shoe refused {pending.command} {pending.value}: {nak.message}",
                at,
            )
        )


# --- ASCII lines ----------------------------------------------------------------------------


class AsciiLineSession(ShoeSession):
    """BeeTek-style lines: no sequence numbers, no heartbeat, no host commands.

    A line that is not a card becomes :class:`CardMisread` so the table can stop and check;
    a lost or duplicated line cannot be detected by this protocol at all.
    """

    name = "ascii"
    default_baudrate = 9600
    sequenced = False

    def __init__(self) -> None:
        super().__init__()
        self.decoder = ascii_lines.AsciiLineDecoder()

    @property
    def decoder_stats(self) -> DecoderStats:
        return self.decoder.stats

    def closed(self) -> None:
        self.decoder.reset()

    def command(self, command: HostCommand) -> bytes:
        raise ConfigurationError(f"the ascii shoe protocol has no host commands ({command.value})")

    def receive(self, data: bytes, at: float, now: float) -> Reaction:
        reaction = Reaction()
        for frame in self.decoder.feed(data):
            if isinstance(frame, ascii_lines.CardLine):
                reaction.frames += 1
                reaction.events.append(CardDrawn(frame.card, None, at))
            else:
                logger.warning("unreadable line from the shoe: %r", frame.raw)
                reaction.events.append(CardMisread(None, at))
        return reaction


# --- native ---------------------------------------------------------------------------------

NATIVE_HEARTBEAT_S: Final = 0.2  # the shoe sends H at least this often when idle
NATIVE_SILENCE_S: Final = 1.0  # five missed heartbeats: offline within the 1 s requirement
NATIVE_RESEND_INTERVAL_S: Final = 0.2  # do not ask again while an answer may be on its way

_NATIVE_COMMANDS: Final[dict[HostCommand, str]] = {
    HostCommand.LOCK: "LOCK",
    HostCommand.UNLOCK: "UNLOCK",
    HostCommand.CLEAR_ERROR: "CLEAR",
}


class NativeSession(ShoeSession):
    """livetable's native protocol: delivers every event exactly once and in order.

    Events are delivered only in sequence; anything after a gap is discarded and the shoe is
    asked to resend from the gap (go-back-N), so a frame lost to noise or a cable pull is
    recovered. The shoe reports events it can no longer resend with ``N``; those become
    :class:`CardsLost` once the numbering is this table's (a resume point, or a delivery).
    Every batch delivered is acknowledged so the shoe can forget it.
    """

    name = "native"
    default_baudrate = 115200
    gaps_always_visible = True
    heartbeat_timeout_s = NATIVE_SILENCE_S
    supported_commands = frozenset(_NATIVE_COMMANDS)

    def __init__(self) -> None:
        super().__init__()
        self.decoder = native.NativeDecoder()
        self.delivered = 0
        """Every event up to this sequence number has been delivered (or reported lost)."""
        self._claimed = False
        """Whether the events up to ``delivered`` are this table's: a resume point or a
        delivery says so. Until then an ``N`` (events the shoe no longer holds) is where
        this table's numbering starts, not a loss: someone else took those."""
        self._command_number = 0
        self._last_request: float | None = None
        self._request_due = False

    @property
    def decoder_stats(self) -> DecoderStats:
        return self.decoder.stats

    def resume(self, last_sequence: int) -> None:
        # Ask the shoe from the first event the journal does not hold: it resends what it
        # kept for nobody, or says with N that it dropped it (then those are lost).
        self.delivered = last_sequence
        self._claimed = True

    def opened(self, now: float) -> bytes:
        self._request_due = True
        self._last_request = None
        return self.poll(now)

    def closed(self) -> None:
        self.decoder.reset()

    def command(self, command: HostCommand) -> bytes:
        word = _NATIVE_COMMANDS.get(command)
        if word is None:
            raise ConfigurationError(f"the native shoe protocol has no {command.value} command")
        self._command_number += 1
        return native.NativeFrame(native.COMMAND, self._command_number, word).to_bytes()

    def poll(self, now: float) -> bytes:
        if not self._request_due:
            return b""
        if self._last_request is not None and now - self._last_request < NATIVE_RESEND_INTERVAL_S:
            return b""
        self._request_due = False
        self._last_request = now
        self.session_stats.resend_requests += 1
        return native.NativeFrame(native.RESEND, self.delivered + 1).to_bytes()

    def receive(self, data: bytes, at: float, now: float) -> Reaction:
        reaction = Reaction()
        delivered_before = self.delivered
        for frame in self.decoder.feed(data):
            reaction.frames += 1
            if frame.kind in native.EVENT_KINDS:
                self._event(frame, at, reaction)
            elif frame.kind == native.HEARTBEAT:
                self._heartbeat(frame.sequence)
            elif frame.kind == native.GONE:
                self._gone(frame.sequence, at, reaction)
            else:
                logger.info("ignoring host-side frame from the shoe: %r", frame)
        if self.delivered > delivered_before:  # not after following a restarted count
            reaction.to_send += native.NativeFrame(native.ACKNOWLEDGE, self.delivered).to_bytes()
        reaction.to_send += self.poll(now)
        return reaction

    def _heartbeat(self, last_sent: int) -> None:
        if last_sent > self.delivered:
            self._request_due = True  # the last event(s) were lost with no later frame
        elif last_sent < self.delivered:
            # A new count: what the shoe sent since it restarted (held, as nobody
            # acknowledged it) is asked for from its first number, not skipped.
            logger.warning(
                "shoe restarted its count at %d (had %d): following it from 1",
                last_sent,
                self.delivered,
            )
            self.delivered = 0
            self._claimed = False
            self._request_due = last_sent > 0

    def _gone(self, oldest_held: int, at: float, reaction: Reaction) -> None:
        if oldest_held <= self.delivered + 1:
            return
        if not self._claimed:
            logger.info("the shoe's events before %d are not this table's", oldest_held)
        else:
            lost = tuple(range(self.delivered + 1, oldest_held))
            self.session_stats.sequences_lost += len(lost)
            reaction.events.append(CardsLost(lost, at))
        self.delivered = oldest_held - 1
        self._claimed = True

    def _event(self, frame: native.NativeFrame, at: float, reaction: Reaction) -> None:
        sequence = frame.sequence
        if sequence <= self.delivered:
            self.session_stats.duplicates_dropped += 1
            return
        if sequence > self.delivered + 1:
            self._request_due = True
            return
        self.delivered = sequence
        self._claimed = True
        events = reaction.events
        kind = frame.kind
        if kind == native.CARD:
            try:
                events.append(CardDrawn(parse_card(frame.payload), sequence, at))
            except RulesError:
                logger.warning("shoe sent an unknown card %r", frame.payload)
                events.append(CardMisread(sequence, at))
        elif kind == native.CUT_CARD:
            events.append(CutCardDrawn(sequence, at))
        elif kind == native.UNREADABLE:
            events.append(CardMisread(sequence, at))
        elif kind == native.FAULT:
            code, _, message = frame.payload.partition(" ")
            events.append(ShoeFault(code, message, at))
        elif kind == native.FAULT_CLEARED:
            events.append(ShoeFaultCleared(frame.payload, at))
        elif kind == native.LOCK:
            events.append(ShoeLockChanged(frame.payload == "1", at))


# --- registry -------------------------------------------------------------------------------
# The one list of shoe protocols: ShoeConfig, every --protocol option, the simulator and the
# contract tests take the names from here.

SESSIONS: Final[dict[str, type[ShoeSession]]] = {
    AngelEyeSession.name: AngelEyeSession,
    AsciiLineSession.name: AsciiLineSession,
    NativeSession.name: NativeSession,
}
PROTOCOL_NAMES: Final = tuple(SESSIONS)


def session_class(protocol: str) -> type[ShoeSession]:
    """The session class for a protocol name; :class:`ConfigurationError` if unknown."""
    try:
        return SESSIONS[protocol]
    except KeyError:
        raise ConfigurationError(
            f"unknown shoe protocol {protocol!r}: expected one of {', '.join(PROTOCOL_NAMES)}"
        ) from None
