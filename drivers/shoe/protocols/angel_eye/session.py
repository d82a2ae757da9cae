"""Angel Eye II-EX's session: one-character SEQ, no heartbeat, no retransmission on request.

Pure: frames from :mod:`~drivers.shoe.protocols.angel_eye.codec` in, events out; every field
of a frame is read through the codec's dataclasses. See ``docs/shoe-protocol.md``, section 1.
"""

from __future__ import annotations

from typing import Final

from controller.kernel.errors import ConfigurationError
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
from drivers.shoe.options import ProtocolOptions
from drivers.shoe.protocols.angel_eye import codec as angel_eye
from drivers.shoe.protocols.angel_eye.commissioning import (
    AngelEyeObservations,
    angel_eye_report,
)
from drivers.shoe.protocols.angel_eye.options import AngelEyeOptions
from drivers.shoe.protocols.angel_eye.variants import (
    BIT7_SETTINGS,
    SIGNAL_CODES,
    VARIANT_NAMES,
    SequenceCounter,
)
from drivers.shoe.sessions import (
    Capabilities,
    HostCommand,
    Reaction,
    ShoeResult,
    ShoeSession,
    logger,
)

COMMANDS: Final[dict[HostCommand, tuple[str, str]]] = {
    HostCommand.LOCK: ("LK", "02"),
    HostCommand.UNLOCK: ("LK", "01"),
    HostCommand.CLEAR_ERROR: ("EC", "00"),
    HostCommand.CONFIRM_GAME: ("GP", "00"),
}
_BCC_ERROR: Final = 0x02


class AngelEyeSession(ShoeSession):
    """Angel Eye II-EX: one-character SEQ, no heartbeat, no retransmission on request.

    Sequence numbers are unwrapped into a running count by a
    :class:`~drivers.shoe.protocols.angel_eye.variants.SequenceCounter` under the configured variant
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
    capabilities = Capabilities(commands=frozenset(HostCommand))

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

    @classmethod
    def from_options(cls, options: ProtocolOptions) -> AngelEyeSession:
        if not isinstance(options, AngelEyeOptions):
            raise TypeError(f"the Angel Eye session takes AngelEyeOptions, not {options!r}")
        return cls(
            bcc_includes_stx=options.command_bcc_includes_stx,
            variant=options.variant,
            data_bit7=options.data_bit7,
        )

    def commissioning_report(self) -> str:
        return angel_eye_report(self)

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
        kind, value = COMMANDS[command]
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
                        'set [shoe.angel-eye] data_bit7 = "ignored" once commissioned',
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
                "shoe SEQ %r contradicts the Angel Eye profile (now %s): "
                "check [shoe.angel-eye] variant",
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
            result = frame.game_result
            self.observed.results += 1
            logger.info("the shoe's own result: %s (SEQ %s)", result.text, frame.seq_text)
            reaction.results.append((len(events), ShoeResult(result, sequence, at)))
        elif code == "E":
            error = frame.error
            if error.unreadable_card:
                events.append(CardMisread(sequence, at))
            else:
                events.append(ShoeFault(f"E{error.code}", error.message, at))
        elif code == "e":
            events.append(ShoeFaultCleared(f"E{frame.error_cleared.code}", at))
        elif code == "L":
            events.append(ShoeLockChanged(frame.lock.locked, at))
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
