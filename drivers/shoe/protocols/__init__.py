"""One package per shoe protocol, each registered by one line in :mod:`drivers.shoe.registry`.

A package holds its ``codec`` (pure frames and decoder), its ``session`` (the host's side,
with its capabilities), its ``speaker`` (the simulated shoe's side, built from the codec), its
options if it has settings, and ``PROTOCOL`` naming them. See ``docs/shoe-protocol.md``.
"""
