"""The dealer's line is built in controller.service.wire from its fields written out, and its
bytes are those the daemon has always published."""

from __future__ import annotations

from controller.service.wire import dealer_message, encode
from controller.table.effects import TellDealer


def test_the_dealer_line_is_the_same_bytes_as_ever() -> None:
    assert encode(dealer_message(TellDealer("deal", "Deal to the player", "player"))) == (
        b'{"action":"deal","api":1,"count":null,"message":"Deal to the player","position":"player"}'
    )
    assert encode(dealer_message(TellDealer("burn", "Burn 7 cards", count=7))) == (
        b'{"action":"burn","api":1,"count":7,"message":"Burn 7 cards","position":null}'
    )
