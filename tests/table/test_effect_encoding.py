"""The effects' names outside the process (``livetable journal export``) are written out in
``EFFECT_ENCODING``, like the events' ``ENCODINGS``: not taken from the Python class names."""

from __future__ import annotations

import dataclasses

import pytest

from controller.table import effects
from controller.table.effects import (
    EFFECT_ENCODING,
    AskCamera,
    Effect,
    PublishEvent,
    TellDealer,
)

# The names and fields the exports have always had (tests/demo/test_journal_of_a_demo.py and the
# camera's tests read them): a change here is a change of what old exports mean.
NAMES_AND_FIELDS = {
    "PublishState": ("state",),
    "PublishEvent": ("name", "payload"),
    "TellDealer": ("action", "message", "position", "count"),
    "LockShoe": (),
    "UnlockShoe": (),
    "AskCamera": ("position", "reason", "card_number"),
    "StartTimer": ("timer_id", "purpose", "duration_s", "due_at"),
    "CommandAnswered": ("command_id", "command", "by", "ok", "message"),
    "EventRejected": ("event", "reason"),
    "CheckpointTaken": ("published",),
}


def test_every_effect_has_its_name_and_every_field_written_out() -> None:
    defined = {
        each
        for each in vars(effects).values()
        if isinstance(each, type) and issubclass(each, Effect) and each is not Effect
    }
    assert set(EFFECT_ENCODING) == defined
    assert dict(EFFECT_ENCODING.values()) == NAMES_AND_FIELDS
    for cls, (_name, fields) in EFFECT_ENCODING.items():
        # In the class's order: an export's keys stay in the order they always had.
        assert fields == tuple(field.name for field in dataclasses.fields(cls)), cls


def test_an_effect_is_exported_under_its_written_name_whatever_its_class_is_called() -> None:
    names = AskCamera.__name__, AskCamera.__qualname__
    AskCamera.__name__ = AskCamera.__qualname__ = "CameraQuestion"
    try:
        exported = AskCamera("banker", "misread", 1).to_dict()
    finally:
        AskCamera.__name__, AskCamera.__qualname__ = names
    assert exported == {
        "effect": "AskCamera",
        "position": "banker",
        "reason": "misread",
        "card_number": 1,
    }
    assert list(TellDealer("deal", "Deal the player's card", "player").to_dict()) == [
        "effect",
        "action",
        "message",
        "position",
        "count",
    ]


def test_an_effect_class_the_encoding_does_not_list_is_refused() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class LoudEvent(PublishEvent):
        """A subclass is not its parent: it would say PublishEvent for something else."""

    with pytest.raises(TypeError, match="LoudEvent"):
        LoudEvent("round_opened").to_dict()
