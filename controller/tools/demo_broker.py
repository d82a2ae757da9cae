"""The demo's broker: where its clients connect (``--broker`` as :class:`BrokerAddress`) and
the check that a given broker lets the demo's one account do what the demo does."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controller.kernel.errors import ConfigurationError
from controller.mqtt.connection import broker_text

# The topic prefix of every table of the demo.
TOPIC_PREFIX = "livetable"

MQTT_VERSIONS = ("3.1.1", "5")
# With --broker and no --mqtt: MQTT 5, whose PUBACK reason codes let the broker check tell a
# refused publish at once and which mosquitto (the shipped broker) speaks. A broker that
# speaks only 3.1.1 (nats-server) refuses it in its CONNACK and the demo says to try 3.1.1.
DEFAULT_BROKER_MQTT = "5"
# The embedded broker (amqtt) speaks MQTT 3.1.1 only.
EMBEDDED_BROKER_MQTT = "3.1.1"
# Debian's bundle of the system's CAs (ca-certificates), where Python's default may be absent.
SYSTEM_CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"


@dataclasses.dataclass
class BrokerAddress:
    """Where the demo's clients and daemons connect, and as whom."""

    host: str
    port: int
    login: tuple[str, str] | None = None
    # The MQTT version every client of the demo speaks (the daemons' [mqtt] protocol).
    mqtt_protocol: str = DEFAULT_BROKER_MQTT
    # Whether the URL named it (?mqtt=...): then --mqtt may not say otherwise.
    protocol_named: bool = False
    # A cluster's nodes, host:port first, that the daemons and the people move on to when
    # their node fails ([mqtt] hosts); empty: host:port alone.
    hosts: tuple[tuple[str, int], ...] = ()
    # TLS (mqtts://), trusting tls_ca or, when None, the system's CAs.
    tls: bool = False
    tls_ca: str | None = None

    @property
    def url(self) -> str:
        """The broker as a person reads it: ``mqtt://host:port`` or ``mqtts://host:port``."""
        return f"{'mqtts' if self.tls else 'mqtt'}://{broker_text(self.host, self.port)}"

    @property
    def client_tls(self) -> dict[str, Any]:
        """The TLS arguments of every client the demo starts (the API client's)."""
        return {"tls": self.tls, "tls_ca": self.tls_ca}

    def daemon_ca_file(self) -> str | None:
        """The CA file a table's or the console's ``[mqtt.tls] ca_file`` names (their TOML
        takes a file, not "the system's store"): --tls-ca, else the system's bundle."""
        if not self.tls:
            return None
        if self.tls_ca is not None:
            return str(Path(self.tls_ca).resolve())
        import ssl

        for candidate in (ssl.get_default_verify_paths().cafile, SYSTEM_CA_BUNDLE):
            if candidate and Path(candidate).is_file():
                return candidate
        raise ConfigurationError(
            f"--broker {self.url}: no system CA bundle found for the tables: give --tls-ca"
        )

    @property
    def paho_protocol(self) -> int:
        import paho.mqtt.client as mqtt

        return mqtt.MQTTv5 if self.mqtt_protocol == "5" else mqtt.MQTTv311

    def watch_command(self) -> str:
        # -i: a studio broker refuses a client without an id (and takes the account's name
        # as its id); mosquitto_sub sends none unless told.
        login = f" -u {self.login[0]} -P {self.login[1]} -i {self.login[0]}" if self.login else ""
        client_id = "" if self.login else " -i livetable-watch"
        tls = ""
        if self.tls:
            tls = f" --cafile {self.tls_ca}" if self.tls_ca else " --capath /etc/ssl/certs"
        return (
            f"mosquitto_sub -h {self.host} -p {self.port}{tls}{login}{client_id} "
            f"-t '{TOPIC_PREFIX}/#' -v"
        )


def parse_broker_url(text: str, tls_ca: str | None = None) -> BrokerAddress:
    """``--broker`` as the one parser of :mod:`controller.mqtt.broker_name` reads it: a host,
    host:port, ``mqtt[s]://[user:password@]host[:port][?mqtt=3.1.1|5]`` or a list of nodes;
    ``tls_ca`` (--tls-ca) makes a bare name TLS, trusting that CA."""
    from controller.mqtt.broker_name import parse_broker_name

    try:
        name = parse_broker_name(text, tls=tls_ca is not None)
    except ValueError as error:
        raise ConfigurationError(f"--broker: {error}") from None
    login = None if name.login is None else (name.login[0], name.login[1] or "")
    return BrokerAddress(
        name.host,
        name.port,
        login,
        name.protocol or DEFAULT_BROKER_MQTT,
        name.protocol is not None,
        name.hosts,
        name.tls,
        tls_ca,
    )


def broker_argument(text: str) -> str:
    """``--broker``'s type: a bad name is an argument error (usage, exit 2). The name is read
    again with --tls-ca once every option is known (:func:`parse_broker_url`)."""
    try:
        parse_broker_url(text)
    except ConfigurationError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--broker").lstrip(": ")) from None
    return text

# -- what a broker given with --broker must let the demo do ------------------------------------

# How long the broker check waits for each answer (a CONNACK, a PUBACK, a message back): a
# broker answers in milliseconds; this only bounds one that says nothing at all.
CHECK_ANSWER_S = 10.0
# The account name under which the check writes a response topic nobody reads.
CHECK_ACCOUNT = "livetable-demo-check"
# A CONNACK's "unsupported protocol version" (MQTT 5's reason code 0x84; paho maps MQTT 3.1.1's
# return code 1 onto it): nats-server answers an MQTT 5 CONNECT so.
UNSUPPORTED_PROTOCOL_VERSION = 0x84


class _BrokerProbe:
    """One connection of the broker check in the demo's MQTT version (the API client's
    :func:`start_client`), noting its CONNACK, PUBACKs, SUBACK, messages and whether the
    broker dropped it. It does not reconnect: a drop is an answer."""

    def __init__(self, broker: BrokerAddress, suffix: str) -> None:
        from controller.client.api_client import start_client

        self.lock = threading.Condition()
        self.connack: Any = None
        self.dropped: Any = None
        self.suback: list[Any] | None = None
        self.pubacks: dict[int, Any] = {}
        self.received: list[str] = []
        self.client = start_client(
            broker.host,
            broker.port,
            f"{CHECK_ACCOUNT}-{os.getpid()}-{suffix}",
            on_connect=self._note("connack"),
            on_message=lambda _c, _u, message: self._add(self.received, message.topic),
            on_disconnect=self._on_disconnect,
            on_subscribe=lambda _c, _u, _mid, reasons, _p: self._set("suback", list(reasons)),
            on_publish=lambda _c, _u, mid, reason, _p: self._put(mid, reason),
            protocol=broker.paho_protocol,
            login=broker.login,
            reconnect_delay_s=(600, 600),
            **broker.client_tls,
        )

    def _note(self, name: str) -> Callable[..., None]:
        return lambda _c, _u, _f, reason, _p: self._set(name, reason)

    def _on_disconnect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        self._set("dropped", reason)

    def _set(self, name: str, value: Any) -> None:
        with self.lock:
            setattr(self, name, value)
            self.lock.notify_all()

    def _add(self, into: list[str], topic: str) -> None:
        with self.lock:
            into.append(topic)
            self.lock.notify_all()

    def _put(self, mid: int, reason: Any) -> None:
        with self.lock:
            self.pubacks[mid] = reason
            self.lock.notify_all()

    def wait(self, condition: Callable[[], bool]) -> bool:
        with self.lock:
            return self.lock.wait_for(condition, CHECK_ANSWER_S)

    def publish(self, topic: str) -> Any:
        """Publish at QoS 1 and wait: the PUBACK's reason, or None if the connection
        dropped (or nothing came)."""
        info = self.client.publish(topic, json.dumps({"transaction": CHECK_ACCOUNT}), qos=1)
        self.wait(lambda: info.mid in self.pubacks or self.dropped is not None)
        return self.pubacks.get(info.mid)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@contextlib.contextmanager
def _said_by_the_api_client() -> Any:
    """The API client's connection problems, kept (not logged) while the broker check runs:
    the check says the first in one line itself."""
    said: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            said.append(record.getMessage())

    api_logger = logging.getLogger("controller.client.api_client")
    handler, propagate = Keep(logging.WARNING), api_logger.propagate
    api_logger.addHandler(handler)
    api_logger.propagate = False
    try:
        yield said
    finally:
        api_logger.removeHandler(handler)
        api_logger.propagate = propagate


def check_broker(broker: BrokerAddress, ids: list[str], viewer: str) -> None:
    """That the broker lets the demo's one account do what the demo does, else a
    :class:`ConfigurationError` in one line naming what it refused: the connection (its
    credentials, or the MQTT version: "refused MQTT 5: try --mqtt 3.1.1"); a publish to a
    table's topics or of a request under the platform's, the supervisor's or the viewer's
    role (its ACL: told by MQTT 5's PUBACK; under MQTT 3.1.1 a broker acknowledges a publish
    it drops, so each is read back by a second connection, within :data:`CHECK_ANSWER_S`);
    a second connection of the same account (a broker that takes the account's name as the
    client id drops the first); a message on a table's topic passed back to the account (its
    ACL for reading)."""

    from controller.client.api_client import PROBE_TABLE

    url = broker.url
    user = broker.login[0] if broker.login is not None else None
    who = f"account {user}" if user is not None else "an anonymous client"
    needs = (
        "the demo's view, tables, platform and supervisor all use the one account of --broker: "
        "it needs a broker that lets one account read and write every table's topics, e.g. "
        "mosquitto without an ACL, or the demo's own broker (no --broker)"
    )
    with _said_by_the_api_client() as said, contextlib.ExitStack() as probes:
        first = _BrokerProbe(broker, "a")
        probes.callback(first.close)
        first.wait(lambda: first.connack is not None or bool(said))
        if first.connack is None:
            problem = said[0].split(f"{broker.host}:{broker.port} ", 1)[-1] if said else ""
            raise ConfigurationError(
                f"the broker at {url} {problem or f'did not answer in {CHECK_ANSWER_S:g} s'}"
            )
        if getattr(first.connack, "value", None) == UNSUPPORTED_PROTOCOL_VERSION:
            other = "3.1.1" if broker.mqtt_protocol == "5" else "5"
            raise ConfigurationError(
                f"the broker at {url} refused MQTT {broker.mqtt_protocol}: try --mqtt {other}"
            )
        if first.connack.is_failure:
            hint = (
                f"account {user}: a wrong password, or an account the broker does not know"
                if user is not None
                else "no account was given: --broker mqtt://user:password@host:port"
            )
            raise ConfigurationError(
                f"the broker at {url} refused the connection ({first.connack}): {hint}"
            )
        written = [f"{TOPIC_PREFIX}/{table_id}/response/{CHECK_ACCOUNT}" for table_id in ids]
        requests = [
            f"{TOPIC_PREFIX}/{PROBE_TABLE}/request/{role}/{name}/status"
            for role, name in (
                ("platform", "platform"),
                ("supervisor", "demo-supervisor"),
                ("viewer", viewer),
            )
        ]
        acknowledged = broker.mqtt_protocol == "5"
        for topic in written + requests if acknowledged else []:
            reason = first.publish(topic)
            if reason is None or reason.is_failure:
                what = "no answer" if reason is None else str(reason)
                raise ConfigurationError(
                    f"the broker at {url} refused {who} a publish to {topic} ({what}): {needs}"
                )
        second = _BrokerProbe(broker, "b")
        probes.callback(second.close)
        second.wait(lambda: second.connack is not None)
        first.publish(written[0])
        if first.dropped is not None:
            raise ConfigurationError(
                f"the broker at {url} allows one connection per account (a second connection "
                f"of {who} dropped the first: it takes the account's name as the client id): "
                f"{needs}"
            )
        # The tables read their requests under the same account: under MQTT 3.1.1 they are
        # read back too (a refused subscription is named; a refused read or publish is not).
        reads = [f"{TOPIC_PREFIX}/+/response/{CHECK_ACCOUNT}"] + (
            [] if acknowledged else [f"{TOPIC_PREFIX}/{PROBE_TABLE}/request/+/+/status"]
        )
        second.client.subscribe([(read, 1) for read in reads])
        second.wait(lambda: second.suback is not None)
        if second.suback is None or any(reason.is_failure for reason in second.suback):
            raise ConfigurationError(
                f"the broker at {url} refused {who} the subscription to {' and '.join(reads)} "
                f"({second.suback}): {needs}"
            )
        for topic in written[:1] if acknowledged else written + requests:
            first.publish(topic)
            if not second.wait(lambda topic=topic: topic in second.received):
                why = (
                    "its ACL does not let it read a table's topics"
                    if acknowledged
                    else "its ACL refuses the publish or the read: MQTT 3.1.1 does not say which"
                )
                raise ConfigurationError(
                    f"the broker at {url} does not pass {topic} back to {who} within "
                    f"{CHECK_ANSWER_S:g} s ({why}): {needs}"
                )
