"""The native shoe's side, for the simulator: numbered events held until acknowledged,
resent from any number asked, a heartbeat when idle. Built from the native codec's frames."""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from drivers.shoe.protocols.native import codec as native
from drivers.shoe.protocols.native.session import COMMANDS
from drivers.shoe.speaker import FAULT_MESSAGES, ShoeAction, ShoeSide, ShoeSpeaker

HOLD_MAX: Final = 10_000  # events kept for retransmission until acknowledged
_KINDS: Final = {
    "card": native.CARD,
    "cut_card": native.CUT_CARD,
    "misread": native.UNREADABLE,
    "fault": native.FAULT,
    "fault_cleared": native.FAULT_CLEARED,
    "lock": native.LOCK,
}
_ASKED: Final = {word: command for command, word in COMMANDS.items()}


class NativeSpeaker(ShoeSpeaker):
    name = "native"
    heartbeat_s = native.HEARTBEAT_S

    def __init__(self) -> None:
        self._decoder = native.NativeDecoder()
        self._held: OrderedDict[int, bytes] = OrderedDict()

    def encode(self, action: ShoeAction) -> bytes:
        event, detail = action.event, action.detail
        if event == "card":
            payload = str(action.card)
        elif event == "fault":
            payload = f"E{detail} {FAULT_MESSAGES.get(int(detail or 0), 'error')}"
        elif event == "fault_cleared":
            payload = f"E{detail}"
        elif event == "lock":
            payload = detail or ""
        else:
            payload = ""
        return native.NativeFrame(_KINDS[event], action.sequence, payload).to_bytes()

    def sent(self, sequence: int, raw: bytes) -> None:
        self._held[sequence] = raw
        if len(self._held) > HOLD_MAX:
            self._held.popitem(last=False)  # forgotten unacknowledged: N says so

    def heartbeat(self, last_sequence: int) -> bytes:
        return native.NativeFrame(native.HEARTBEAT, last_sequence).to_bytes()

    def plugged(self) -> None:
        self._decoder.reset()

    def host_bytes(self, data: bytes, shoe: ShoeSide) -> None:
        for frame in self._decoder.feed(data):
            if frame.kind == native.ACKNOWLEDGE:
                while self._held and next(iter(self._held)) <= frame.sequence:
                    self._held.popitem(last=False)
            elif frame.kind == native.RESEND:
                last = shoe.last_sequence
                oldest = next(iter(self._held), last + 1)
                if frame.sequence < oldest and frame.sequence <= last:
                    # Asked for events it no longer holds (acknowledged, or released when
                    # the buffer was full): N says where what it can resend starts, so the
                    # host never waits for them.
                    shoe.write(native.NativeFrame(native.GONE, oldest).to_bytes())
                for sequence, raw in list(self._held.items()):
                    if sequence >= frame.sequence:
                        shoe.transmit(raw, sequence)
            elif frame.kind == native.COMMAND:
                shoe.command_received(frame.payload, _ASKED.get(frame.payload))
                if frame.payload in ("LOCK", "UNLOCK"):
                    shoe.turn_key(frame.payload == "LOCK")
                elif frame.payload == "CLEAR":
                    shoe.clear_error()
