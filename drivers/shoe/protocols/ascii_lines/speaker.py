"""The ASCII line shoe's side, for the simulator: a card a line; anything that is not a card
(the cut card, a misread) is a line the driver cannot read. Built from the codec's lines."""

from __future__ import annotations

import random

from drivers.shoe.protocols.ascii_lines import codec
from drivers.shoe.speaker import ShoeAction, ShoeSpeaker


class AsciiLineSpeaker(ShoeSpeaker):
    name = "ascii"

    def encode(self, action: ShoeAction) -> bytes:
        if action.event == "card" and action.card is not None:
            return codec.CardLine(action.card).to_bytes()
        # The line protocol has nothing but cards; anything else reads as a bad line.
        return codec.UnreadableLine(b"??").to_bytes()

    def corrupt(self, raw: bytes, rng: random.Random) -> bytes:
        """No checksum to spoil: a character of the line instead."""
        position = rng.randrange(len(raw) - 2)
        return raw[:position] + bytes((rng.randrange(256),)) + raw[position + 1 :]

    def noise_spoils(self, noise: bytes) -> bool:
        # No frame start to resync on: noise after its last line break joins the card's line.
        return bool(noise.replace(b"\r", b"\n").rsplit(b"\n", 1)[-1])
