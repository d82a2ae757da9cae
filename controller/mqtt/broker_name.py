"""How a broker is named on a command line: the one parser behind every ``--broker``.

Every form names one broker or a cluster's nodes (a comma-separated list, the first tried
first, the next when one fails or drops):

- ``host``, ``host:port``, ``[v6 address]:port`` (a port left out is 1883, 8883 with TLS);
- ``mqtt://[user[:password]@]host[:port][,host[:port]...][?mqtt=3.1.1|5]``;
- ``mqtts://...`` likewise: TLS, trusting the CA that ``--tls-ca`` names or else the
  system's store.

A bad name is a :class:`ValueError` whose text is one line saying what is wrong and what a
broker looks like; the commands put their option's name in front of it.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Final
from urllib.parse import parse_qs, unquote, urlsplit

from controller.mqtt.connection import MQTT_PROTOCOLS, broker_text

DEFAULT_PORT: Final = 1883
DEFAULT_TLS_PORT: Final = 8883
# The schemes a broker URL may have, and whether each speaks TLS.
SCHEMES: Final = {"mqtt": False, "mqtts": True}
FORMS: Final = "mqtt://host:port, mqtts://host:port, host:port, host or a list of them"


@dataclass(frozen=True, slots=True)
class BrokerName:
    """A broker (or a cluster's nodes) as a command line named it."""

    nodes: tuple[tuple[str, int], ...]
    """(host, port) of each node, the first tried first; never empty."""
    tls: bool = False
    login: tuple[str, str | None] | None = None
    """(user, password) from the URL (password None when the URL gives none)."""
    protocol: str | None = None
    """The MQTT version the URL asks for (``?mqtt=``), None when it names none."""

    @property
    def host(self) -> str:
        return self.nodes[0][0]

    @property
    def port(self) -> int:
        return self.nodes[0][1]

    @property
    def hosts(self) -> tuple[tuple[str, int], ...]:
        """Every node when there are several ([mqtt] hosts), none for one broker."""
        return self.nodes if len(self.nodes) > 1 else ()

    def url(self) -> str:
        """The broker as a person reads it (no account): ``mqtt://host:port`` or
        ``mqtts://n1:8883,n2:8883``."""
        scheme = "mqtts" if self.tls else "mqtt"
        return f"{scheme}://{','.join(broker_text(*node) for node in self.nodes)}"


def _bad(text: str, why: str) -> ValueError:
    return ValueError(f"must look like {FORMS}, not {text!r} ({why})")


def _node(text: str, item: str, default_port: int) -> tuple[str, int]:
    """One ``host``, ``host:port``, ``[v6]`` or ``[v6]:port``."""
    if item.startswith("["):
        host, bracket, rest = item[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise _bad(text, f"{item!r} is not [IPv6 address]:port")
        port_text = rest[1:] if rest else None
    elif item.count(":") > 1:
        # An IPv6 address without brackets has no room for a port.
        host, port_text = item, None
    else:
        host, colon, port_text_or_empty = item.partition(":")
        port_text = port_text_or_empty if colon else None
    if not host:
        raise _bad(text, f"{item!r} has no host")
    if port_text is None:
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"{item!r}: a broker is host:port with a port 1-65535")
    return host, int(port_text)


def parse_broker_name(
    text: str, *, tls: bool = False, default_port: int | None = None
) -> BrokerName:
    """``--broker``'s text as a :class:`BrokerName`; ValueError in one line otherwise.

    ``tls``: the command was given a CA (``--tls-ca``), so a name without a scheme speaks
    TLS too. ``default_port``: the port of a node that names none (``ctl --port``), instead
    of 1883 (8883 with TLS)."""
    text = text.strip()
    if not text:
        raise _bad(text, "empty")
    login: tuple[str, str | None] | None = None
    protocol: str | None = None
    if "://" in text:
        try:
            parts = urlsplit(text)
        except ValueError as error:  # unbalanced brackets
            raise _bad(text, str(error)) from None
        scheme = parts.scheme.lower()
        if scheme not in SCHEMES:
            raise _bad(text, f"unknown scheme {parts.scheme + '://'!r}")
        if tls and not SCHEMES[scheme]:
            raise ValueError(f"{text!r} is plain MQTT but --tls-ca asks for TLS: use mqtts://")
        tls = SCHEMES[scheme]
        if parts.path not in ("", "/") or parts.fragment:
            raise _bad(text, "a broker URL ends at host:port, with ?mqtt= at most")
        # The account is before the last @: a password may hold a comma, a colon or an @.
        account, at, where = parts.netloc.rpartition("@")
        if at:
            user, colon, password = account.partition(":")
            if not user:
                raise _bad(text, "an account without a user name")
            login = (unquote(user), unquote(password) if colon else None)
        query = parse_qs(parts.query, keep_blank_values=True)
        unknown = sorted(set(query) - {"mqtt"})
        if unknown:
            raise ValueError(
                f"{text!r}: unknown parameter {unknown[0]!r} (only mqtt=3.1.1 or mqtt=5)"
            )
        if "mqtt" in query:
            protocol = query["mqtt"][-1]
            if protocol not in MQTT_PROTOCOLS:
                raise ValueError(f"{text!r}: mqtt must be 3.1.1 or 5, not {protocol!r}")
    else:
        where = text
        if "@" in where:
            raise _bad(text, "an account goes in a URL: mqtt://user:password@host:port")
        if "/" in where or "?" in where:
            raise _bad(text, "a scheme is mqtt:// or mqtts://")
    if not where.strip():
        raise _bad(text, "no host")
    port = default_port or (DEFAULT_TLS_PORT if tls else DEFAULT_PORT)
    nodes: list[tuple[str, int]] = []
    for item in (part.strip() for part in where.split(",")):
        if not item:
            raise ValueError(f"{text!r}: an empty broker between commas")
        node = _node(text, item, port)
        if node in nodes:
            raise ValueError(f"{text!r} names {broker_text(*node)} twice")
        nodes.append(node)
    return BrokerName(tuple(nodes), tls, login, protocol)


def broker_argument(text: str) -> BrokerName:
    """``--broker``'s argparse type: a bad name is a usage error (exit 2), in one line."""
    try:
        return parse_broker_name(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
