"""livetable's native protocol's session: every event exactly once and in order.

Pure: :mod:`~drivers.shoe.protocols.native.codec` frames in, events, acknowledgements and
resend requests out. See ``docs/shoe-protocol.md``, section 3.
"""

from __future__ import annotations

from typing import Final

from controller.kernel.cards import parse_card
from controller.kernel.errors import ConfigurationError, RulesError
from drivers.shoe.codec import DecoderStats
from drivers.shoe.events import (
    CardDrawn,
    CardMisread,
    CardsLost,
    CutCardDrawn,
    ShoeFault,
    ShoeFaultCleared,
    ShoeLockChanged,
)
from drivers.shoe.protocols.native import codec as native
from drivers.shoe.sessions import Capabilities, HostCommand, Reaction, ShoeSession, logger

NATIVE_SILENCE_S: Final = 5 * native.HEARTBEAT_S  # offline within the 1 s requirement
NATIVE_RESEND_INTERVAL_S: Final = 0.2  # do not ask again while an answer may be on its way

COMMANDS: Final[dict[HostCommand, str]] = {
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
    capabilities = Capabilities(
        retransmits=True,
        gaps_always_visible=True,
        heartbeat_timeout_s=NATIVE_SILENCE_S,
        commands=frozenset(COMMANDS),
    )

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
        word = COMMANDS.get(command)
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
