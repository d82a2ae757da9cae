"""The Angel Eye shoe's side, for the simulator: event telegrams numbered as the variant
counts, host commands answered with ACK or NAK. Every byte is built from the codec's frames
and payloads (the card, error, lock and result bytes included)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from controller.kernel.errors import ConfigurationError
from drivers.shoe.protocols.angel_eye import codec as angel_eye
from drivers.shoe.protocols.angel_eye.session import COMMANDS
from drivers.shoe.protocols.angel_eye.variants import RULES
from drivers.shoe.speaker import GARBLED, ShoeAction, ShoeSide, ShoeSpeaker, ShoeVariant

ANY_SEQ_SYMBOLS: Final = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # what an any-byte shoe sends here
_ASKED: Final = {wire: command for command, wire in COMMANDS.items()}
_INVALID_OPERATION: Final = 0x14  # NAK: clear an error when there is none


class AngelEyeSpeaker(ShoeSpeaker):
    """``bcc_includes_stx``: the host-command BCC the shoe accepts (None: either; others
    get NAK 02). ``variant``: how it counts SEQ (:data:`~.variants.RULES`). ``data_bit7``:
    False sends data bytes with bit 7 clear (the other public reading)."""

    name = "angel-eye"
    signal_codes = ("S", "P")
    reports_results = True
    variants: ClassVar[Mapping[str, ShoeVariant]] = {
        "mod10-free-signals": ShoeVariant({"variant": "mod10-free-signals"}),
        "wrap9": ShoeVariant({"variant": "wrap9"}),
        "wrap9-free-signals+bit7-clear": ShoeVariant(
            {"variant": "wrap9-free-signals", "data_bit7": False}
        ),
        "any-seq+bit7-clear": ShoeVariant(
            {"variant": "any-seq", "data_bit7": False}, gaps_visible=False
        ),
    }

    def __init__(
        self, bcc_includes_stx: bool | None = None, variant: str = "mod10", data_bit7: bool = True
    ) -> None:
        if variant not in RULES:
            raise ConfigurationError(
                f"unknown Angel Eye variant {variant!r}: expected one of {', '.join(RULES)}"
            )
        self.bcc_includes_stx = bcc_includes_stx
        self.variant = variant
        self.data_bit7 = data_bit7
        self._commands = angel_eye.HostCommandDecoder(bcc_includes_stx)

    def takes_number(self, event: str, detail: str | None) -> bool:
        return event != "signal" or RULES[self.variant].signals_numbered

    def _symbol(self, sequence: int) -> int:
        """The SEQ symbol of event ``sequence`` under the variant (an EventFrame.sequence)."""
        rule = RULES[self.variant]
        if rule.modulus is None or rule.lowest is None:
            return ANY_SEQ_SYMBOLS[(sequence - 1) % len(ANY_SEQ_SYMBOLS)]
        return rule.lowest + (sequence - rule.lowest) % rule.modulus

    def encode(self, action: ShoeAction) -> bytes:
        if not self.takes_number(action.event, action.detail):
            # A signal that takes no number carries the last one (the first, before any).
            symbol = self._symbol(action.sequence or 1)
            return angel_eye.EventFrame(symbol, action.detail or "S").to_bytes()
        frame = self._frame(action)
        if self.data_bit7 or frame.code == "M":
            return frame.to_bytes()
        # A shoe that leaves bit 7 clear; a byte that would then be a control byte keeps it.
        data = bytes(
            byte & 0x7F if byte & 0x7F not in angel_eye.CONTROL_BYTES else byte
            for byte in frame.data
        )
        return angel_eye.EventFrame(frame.sequence, frame.code, data).to_bytes()

    def _frame(self, action: ShoeAction) -> angel_eye.EventFrame:
        symbol, event, detail = self._symbol(action.sequence), action.event, action.detail
        if event == "card" and action.card is not None:
            return angel_eye.EventFrame.card(symbol, action.card, action.target, action.index)
        if event == "signal":
            return angel_eye.EventFrame(symbol, detail or "S")
        if event == "result":
            result = angel_eye.GameResult.from_data(bytes.fromhex(detail or "80"))
            return angel_eye.EventFrame(symbol, "G", result.to_data())
        if event == "cut_card":
            return angel_eye.EventFrame(symbol, "C")
        if event == "misread" and detail == GARBLED and action.card is not None:
            # The card's own frame, its suit "none" (000): the shoe saw a card go out and
            # could not name its suit.
            payload = angel_eye.CardPayload(
                angel_eye.TARGET_CODES[action.target], action.index, 0, action.card.rank_index
            )
            return angel_eye.EventFrame(symbol, "D", payload.to_data())
        if event == "misread":
            error = angel_eye.ErrorPayload(angel_eye.UNREADABLE_CARD_ERROR)
            return angel_eye.EventFrame(symbol, "E", error.to_data())
        if event == "fault":
            error = angel_eye.ErrorPayload(int(detail or 0))
            return angel_eye.EventFrame(symbol, "E", error.to_data())
        if event == "fault_cleared":
            cleared = angel_eye.ErrorClearedPayload(int(detail or 0))
            return angel_eye.EventFrame(symbol, "e", cleared.to_data())
        return angel_eye.EventFrame(symbol, "L", angel_eye.LockPayload(detail == "1").to_data())

    def result_detail(self, outcome: str, player_pair: bool, banker_pair: bool) -> str:
        return f"{angel_eye.GameResult.of(outcome, player_pair, banker_pair).raw:02X}"

    def plugged(self) -> None:
        self._commands = angel_eye.HostCommandDecoder(self.bcc_includes_stx)

    def host_bytes(self, data: bytes, shoe: ShoeSide) -> None:
        for command in self._commands.feed(data):
            self._command(command, shoe)
        for _raw, nak_code in self._commands.rejected:
            shoe.write(angel_eye.Nak(nak_code).to_bytes())
        self._commands.rejected.clear()

    def _command(self, command: angel_eye.HostCommand, shoe: ShoeSide) -> None:
        shoe.command_received(
            f"{command.command} {command.value}", _ASKED.get((command.command, command.value))
        )
        if command.command == "LK":
            shoe.locked = command.value == "02"
        elif command.command == "EC":
            if shoe.error_code is None:
                shoe.write(angel_eye.Nak(_INVALID_OPERATION).to_bytes())
                return
            shoe.write(angel_eye.Ack().to_bytes())
            shoe.clear_error()
            return
        shoe.write(angel_eye.Ack().to_bytes())

    def describe(self) -> str:
        return f"Angel Eye variant {self.variant}, data bit 7 {self._bit7}"

    def status(self) -> str:
        return f"variant={self.variant} bit7={self._bit7}"

    @property
    def _bit7(self) -> str:
        return "set" if self.data_bit7 else "clear"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--command-bcc",
            choices=("either", "with-stx", "without-stx"),
            default="either",
            help="Angel Eye: which host-command BCC the shoe accepts (others get NAK 02)",
        )
        parser.add_argument(
            "--variant",
            choices=tuple(RULES),
            default="mod10",
            help="Angel Eye: how SEQ counts (mod10 '0'-'9'; wrap9 '1'-'9'; -free-signals: S "
            "and P take no number; any-seq: letters)",
        )
        parser.add_argument(
            "--data-bit7-clear",
            action="store_true",
            help="Angel Eye: send data bytes with bit 7 clear (the other public reading)",
        )

    @classmethod
    def settings_from(cls, args: argparse.Namespace) -> dict[str, Any]:
        bcc = {"either": None, "with-stx": True, "without-stx": False}[args.command_bcc]
        return {
            "bcc_includes_stx": bcc,
            "variant": args.variant,
            "data_bit7": not args.data_bit7_clear,
        }
