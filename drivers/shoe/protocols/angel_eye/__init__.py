"""Angel Eye II-EX style baccarat shoes: ENQ event telegrams, STX host commands, ACK/NAK.

The plug-in's parts: ``codec`` (frames and payloads, decoders), ``variants`` (how a shoe
numbers its frames, and finding it out), ``session`` (the host's side), ``options`` (the
``[shoe.angel-eye]`` table), ``speaker`` (the simulated shoe's side) and ``commissioning``
(the monitor's report).
"""

from drivers.shoe.protocols.angel_eye.options import AngelEyeOptions
from drivers.shoe.protocols.angel_eye.session import AngelEyeSession
from drivers.shoe.protocols.angel_eye.speaker import AngelEyeSpeaker
from drivers.shoe.registry import ShoeProtocol

PROTOCOL = ShoeProtocol("angel-eye", AngelEyeSession, AngelEyeSpeaker, AngelEyeOptions)
