"""Validate MQTT API messages against ``docs/asyncapi.yaml``: the document is the contract.

:func:`validate_message` takes a topic and a payload, finds the channel whose address
matches the topic (``{prefix}/{table}/state``, ``.../request/{role}/{account}/decide`` and
so on; a parameter with an ``enum``, such as a request channel's ``role``, must match it
too), and validates the payload against that channel's message schema with
``jsonschema``'s draft 2020-12 validator. A payload that does not fit raises
AssertionError naming the topic, the path in the payload and the path in the schema.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ASYNCAPI_PATH = Path(__file__).resolve().parent.parent.parent / "docs" / "asyncapi.yaml"
DOCUMENT_URI = "urn:livetable:asyncapi"


@dataclass(frozen=True)
class _Channel:
    name: str
    pattern: re.Pattern[str]
    schema_ref: str  # "#/components/schemas/..."
    content_type: str


@functools.cache
def load_document() -> dict[str, Any]:
    """The AsyncAPI document, read once."""
    with ASYNCAPI_PATH.open(encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    assert isinstance(document, dict), f"{ASYNCAPI_PATH} is not a YAML mapping"
    return document


def _resolve(document: dict[str, Any], ref: str) -> dict[str, Any]:
    assert ref.startswith("#/"), ref
    node: Any = document
    for part in ref[2:].split("/"):
        node = node[part]
    return node  # type: ignore[no-any-return]


def _follow(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = _resolve(document, node["$ref"])
    return node


@functools.cache
def _channels() -> tuple[_Channel, ...]:
    document = load_document()
    default_type = document.get("defaultContentType", "application/json")
    channels = []
    for name, channel in document["channels"].items():
        parameters = channel.get("parameters", {})
        pattern = ""
        for piece in re.split(r"(\{[^}]+\})", channel["address"]):
            if piece.startswith("{") and piece.endswith("}"):
                parameter = _follow(document, parameters[piece[1:-1]])
                enum = parameter.get("enum")
                pattern += (
                    "(?:" + "|".join(re.escape(value) for value in enum) + ")"
                    if enum
                    else "[^/#+]+"
                )
            else:
                pattern += re.escape(piece)
        (message_ref,) = channel["messages"].values()
        message = _follow(document, message_ref)
        channels.append(
            _Channel(
                name,
                re.compile(pattern),
                message["payload"]["$ref"],
                message.get("contentType", default_type),
            )
        )
    return tuple(channels)


@functools.cache
def _registry() -> Registry:
    resource = Resource.from_contents(load_document(), default_specification=DRAFT202012)
    return Registry().with_resource(DOCUMENT_URI, resource)


@functools.cache
def validator(schema_ref: str) -> Draft202012Validator:
    """A validator for one schema of the document, e.g. ``#/components/schemas/State``."""
    return Draft202012Validator({"$ref": DOCUMENT_URI + schema_ref}, registry=_registry())


def channel_for(topic: str) -> str:
    """The name of the channel ``topic`` belongs to; AssertionError if none."""
    return _channel(topic).name


def _channel(topic: str) -> _Channel:
    levels = topic.split("/")
    if len(levels) > 4 and levels[2] == "response":
        # An MQTT 5 response topic below the account's own: the same channel.
        topic = "/".join(levels[:4])
    matches = [channel for channel in _channels() if channel.pattern.fullmatch(topic)]
    assert len(matches) == 1, f"{topic!r} matches {len(matches)} channels of {ASYNCAPI_PATH.name}"
    return matches[0]


def validate_value(schema_ref: str, value: Any, what: str = "the value") -> None:
    """Validate ``value`` against one schema of the document; AssertionError if it fails."""
    error = best_match(validator(schema_ref).iter_errors(value))
    if error is not None:
        raise AssertionError(_describe(what, schema_ref, error)) from None


def validate_message(topic: str, payload: bytes) -> None:
    """Validate one message of the API by its topic; AssertionError saying where it fails."""
    channel = _channel(topic)
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as error:
        raise AssertionError(f"{topic}: the payload is not UTF-8: {error}") from None
    if channel.content_type == "application/json":
        try:
            value: Any = json.loads(text)
        except ValueError as error:
            raise AssertionError(f"{topic}: the payload is not JSON: {error}") from None
    else:
        value = text
    validate_value(channel.schema_ref, value, f"{topic} ({channel.name})")


def _describe(what: str, schema_ref: str, error: ValidationError) -> str:
    where = "/".join(str(part) for part in error.absolute_path) or "(the whole message)"
    schema_path = "/".join(str(part) for part in error.absolute_schema_path)
    return (
        f"{what} does not fit {schema_ref}: at {where}: {error.message} (schema path {schema_path})"
    )
