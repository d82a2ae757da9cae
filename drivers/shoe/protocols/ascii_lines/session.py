"""The ASCII line protocol's session (BeeTek style): a card a line, nothing else.

Pure: :mod:`~drivers.shoe.protocols.ascii_lines.codec` frames in, events out. See
``docs/shoe-protocol.md``, section 2.
"""

from __future__ import annotations

from controller.kernel.errors import ConfigurationError
from drivers.shoe.codec import DecoderStats
from drivers.shoe.events import CardDrawn, CardMisread
from drivers.shoe.protocols.ascii_lines import codec
from drivers.shoe.sessions import Capabilities, HostCommand, Reaction, ShoeSession, logger


class AsciiLineSession(ShoeSession):
    """BeeTek-style lines: no sequence numbers, no heartbeat, no host commands.

    A line that is not a card becomes :class:`CardMisread` so the table can stop and check;
    a lost or duplicated line cannot be detected by this protocol at all.
    """

    name = "ascii"
    default_baudrate = 9600
    capabilities = Capabilities(numbered=False, cut_card=False)

    def __init__(self) -> None:
        super().__init__()
        self.decoder = codec.AsciiLineDecoder()

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
            if isinstance(frame, codec.CardLine):
                reaction.frames += 1
                reaction.events.append(CardDrawn(frame.card, None, at))
            else:
                logger.warning("unreadable line from the shoe: %r", frame.raw)
                reaction.events.append(CardMisread(None, at))
        return reaction
