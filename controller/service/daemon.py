"""``livetable run``: one process per table, speaking MQTT to the platform and supervisors.

The daemon is the assembly (:mod:`controller.service.assembly`: journaled table, runtime, shoe
driver, camera) plus an MQTT link:

- every journaled event's effects become numbered API messages in the outbox
  (:mod:`controller.service.publishing`), and a publisher thread sends them in order, from the
  outbox, whenever the broker is there: a broker that was away gets everything it missed,
  and a restarted daemon resends from the last event the broker acknowledged;
- requests arrive on ``.../request/<role>/<account>/<command>``
  (:mod:`controller.service.mqtt_api`), are validated on the MQTT thread, and those that act
  on the table run on the table's thread (a :class:`~controller.service.runtime.RuntimeTask`)
  so that they see and change the state without a race; every answer is kept, so a repeated
  request is answered again and executed once, across restarts too. ``status`` is answered
  on the MQTT thread; ``events`` pages on a thread of their own, the platform's first
  (:mod:`controller.service.read_lanes`), and ``audit`` (every supervisor command journaled,
  with its answer) on another, from the journal read-only (:mod:`controller.service.audit`).

The main thread runs the table's loop, feeds systemd's watchdog and stops cleanly on SIGTERM
(availability ``offline``, journal closed) well within 2 s.

One daemon per journal: it holds the journal's lock (:class:`~controller.service.journal.
JournalLock`) from before it opens anything, and a second one on the same journal fails at
once naming the first. A journal or outbox that cannot be written (a full disk) stops the
table: no further input is taken, the requests that wait are answered ``unavailable``,
availability goes ``offline``, and ``run`` raises the one-line error (file, SQLite's words,
free space), so the process exits non-zero; a start on a disk still full fails with the
same line. Table commands, and ``events`` and ``audit`` pages, are counted per account
(:mod:`controller.service.request_limits`): a flood is answered ``rate_limited`` and costs the
journal nothing, and the answers of pages wait for the broker beyond 1 MiB unacknowledged.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import queue
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.kernel.cli_support import examples
from controller.kernel.errors import ConfigurationError, JournalError, TableError
from controller.kernel.logs import LIFECYCLE_LOGGER
from controller.mqtt.connection import (
    Subscriptions,
    broker_text,
    publish_packet_bytes,
    watch_connection,
)
from controller.service import sd_notify
from controller.service.assembly import AssembledTable, DeviceEffects, Effects, assemble
from controller.service.audit import AuditReader
from controller.service.config import LivetableConfig, MetricsConfig, MqttConfig, load_config
from controller.service.journal import Journal, JournalEntry, JournalLock
from controller.service.journaled_table import log_reused_journal
from controller.service.mqtt_api import (
    EVENTS_PAGE_MAX,
    TABLE_COMMANDS,
    Request,
    RequestError,
    parse_request,
    table_event,
)
from controller.service.outbox import Outbox, open_outbox, outbox_path
from controller.service.pictures import PictureReader, picture_store, round_pictured
from controller.service.publishing import (
    Publications,
    command_key,
    decision_key,
    replayed_batch,
)
from controller.service.read_lanes import ReadLanes
from controller.service.request_limits import CommandLimits, ReadLimits
from controller.service.runtime import RuntimeTask
from controller.service.signing import HeadSigner, load_signing_key
from controller.service.wire import dealer_message, encode, response_message
from controller.table.commands import DEALERS_REVISION, held_text
from controller.table.effects import CommandAnswered, Effect, EffectBatch, PublishEvent, TellDealer
from controller.table.events import ControllerStopping
from controller.table.state import ACTIVE_PHASES, phase_at_stake

if TYPE_CHECKING:
    from controller.service.metrics import TableMetrics

logger = logging.getLogger(__name__)

# Events handed to the MQTT client and not yet acknowledged: bounds what the client holds
# in memory (it retransmits these itself after a reconnect within the process's life).
PUBLISH_WINDOW = 200
# Requests waiting for the table's thread beyond this are answered "unavailable" at once: a
# flood must not grow the queue without bound.
MAX_QUEUED_REQUESTS = 1000
# Bytes of answers handed to the MQTT client and not yet acknowledged by the broker beyond
# which the readers (events and audit pages) wait before they send another: the client
# keeps every unacknowledged QoS 1 message in memory, and every answer and event queued
# behind them waits its turn. 1 MiB is 16 full pages, a few milliseconds on the studio's
# network; the answers of status and of table commands never wait for it.
READ_ANSWERS_IN_FLIGHT_BYTES = 1 << 20
# A reader that waits this long for that room answers "unavailable" instead (the broker
# takes nothing, or slowly): its answer is a few hundred bytes.
READ_ROOM_WAIT_S = 5.0
# How long a stop waits for the last messages to reach the broker.
STOP_FLUSH_S = 1.0
# An idle table says its retained state again after this long. A broker cluster can hand a
# newcomer an older retained state after its nodes died and came back (seen on NATS: a node
# whose copy of the retained messages missed the table's last one, while the table, on
# another node, had no reason to reconnect); saying it again heals every node's copy.
RESTATE_S = 30.0
# MQTT 5 session expiry: the broker keeps the daemon's subscription to requests (and the
# requests sent meanwhile) across a restart of the daemon or a short network outage.
SESSION_EXPIRY_S = 3600
# A request that was the last to arrive before the link dropped this many times is not
# handled again: answered "poisoned", acknowledged, logged once (it would take the table off
# the broker at every reconnect otherwise).
POISON_AFTER_DROPS = 3
# A drop this long after a request arrived is not blamed on it.
POISON_BLAME_S = 10.0
# Requests remembered for that (their digests): the most recent ones.
POISON_MEMORY = 256


class Route:
    """Where a request's answer goes: its response topic and MQTT 5 correlation data, the
    command's name as the request gave it (the answer echoes it), and for a page its role
    and account (whose read budget its answer frees)."""

    __slots__ = ("account", "command", "correlation", "role", "topic")

    def __init__(self, topic: str, correlation: bytes | None, command: str = "") -> None:
        self.topic = topic
        self.correlation = correlation
        self.command = command
        self.role = ""
        self.account = ""


class Topics:
    def __init__(self, prefix: str, table_id: str) -> None:
        base = f"{prefix}/{table_id}"
        self.base = base
        self.availability = f"{base}/availability"
        self.state = f"{base}/state"
        self.events = f"{base}/events"
        self.dealer = f"{base}/dealer"
        self.requests = f"{base}/request/+/+/+"

    def response(self, account: str) -> str:
        return f"{self.base}/response/{account}"


class MqttLink:
    """The broker connection: the publisher thread, the request subscription, availability."""

    def __init__(
        self,
        config: MqttConfig,
        topics: Topics,
        publications: Publications,
        outbox: Outbox,
        on_request: Callable[[str, bytes, Any], None],
    ) -> None:
        import paho.mqtt.client as mqtt

        self._mqtt = mqtt
        self.config = config
        self.topics = topics
        self.publications = publications
        self.outbox = outbox
        self.on_request = on_request
        v5 = config.protocol == "5"
        self.v5 = v5
        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2,
            client_id=config.client_id,
            protocol=mqtt.MQTTv5 if v5 else mqtt.MQTTv311,
            clean_session=None if v5 else False,
            # A request is acknowledged by us, before its answer goes out (see _on_message).
            manual_ack=True,
        )
        if config.username is not None:
            self.client.username_pw_set(config.username, config.password)
        if config.tls is not None:
            self.client.tls_set(
                ca_certs=str(config.tls.ca_file),
                certfile=None if config.tls.cert_file is None else str(config.tls.cert_file),
                keyfile=None if config.tls.key_file is None else str(config.tls.key_file),
            )
        # The will is registered with the node the connection is on and dies with it: when
        # that node dies and the daemon lives on (and moves to another node), no `offline` is
        # said, which is right. Each new connection registers it again.
        self.client.will_set(topics.availability, "offline", qos=1, retain=True)
        self.client.max_inflight_messages_set(PUBLISH_WINDOW)
        self.client.reconnect_delay_set(0.2, 5)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_publish = self._on_publish
        self.client.on_message = self._on_message
        self.client.on_subscribe = self._on_subscribe
        # Every failed or dropped connection moves on to the next of the cluster's nodes,
        # with the same client id and persistent session (see controller.mqtt.connection).
        self.watch = watch_connection(
            self.client,
            config.host,
            config.port,
            protocol=config.protocol,
            username=config.username,
            client_id=config.client_id,
            log=logger,
            hosts=config.brokers,
        )
        self.subscriptions = Subscriptions(
            self.client, [(topics.requests, 1)], log=logger, on_done=self._subscribed
        )
        # The largest packet the broker takes: the configured one, lowered by an MQTT 5
        # broker's CONNACK (a bridged broker's limit further on is not in it).
        self.max_packet = config.max_packet_bytes
        self._too_large: set[tuple[str, int]] = set()  # what was already logged as such
        # Requests: when each arrived on this connection, and how many drops each preceded.
        self._last_request: tuple[bytes, float] | None = None
        self._drops: OrderedDict[bytes, int] = OrderedDict()
        self._poisoned: OrderedDict[bytes, int] = OrderedDict()  # digest -> its drops
        self.on_poisoned: Callable[[str, bytes, Any, int], None] | None = None
        # Told each event the broker acknowledged (the metrics' card delivery times).
        self.on_acked: Callable[[int], None] | None = None
        self._lock = threading.Lock()
        self.connected = threading.Event()
        self._stopping = threading.Event()
        self._next_seq = outbox.delivered_seq + 1
        self._inflight: dict[int, int] = {}  # mid -> event seq
        self._early_acks: set[int] = set()
        self._other_mids: set[int] = set()
        # Answers not yet acknowledged: their message ids and sizes, and the sum.
        self._answer_bytes: dict[int, int] = {}
        self._answers_in_flight = 0
        self._answer_acked = threading.Condition(self._lock)
        self._delivered = outbox.delivered_seq
        self._acked: set[int] = set()
        self._sent_state_version = -1
        self._state_sent_at = time.monotonic()
        self._dealer: bytes | None = None
        self._dealer_sent: bytes | None = None
        self._thread: threading.Thread | None = None
        # One sending round at a time: the publisher's, or the table thread's (send_now).
        self._round = threading.Lock()
        self.connects = 0
        publications.send_with(self.send_now)

    # -- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        properties = None
        if self.v5:
            from paho.mqtt.packettypes import PacketTypes
            from paho.mqtt.properties import Properties

            properties = Properties(PacketTypes.CONNECT)
            properties.SessionExpiryInterval = SESSION_EXPIRY_S
        self.client.connect_async(
            self.config.host,
            self.config.port,
            keepalive=self.config.keepalive_s,
            clean_start=False if self.v5 else self._mqtt.MQTT_CLEAN_START_FIRST_ONLY,
            properties=properties,
        )
        self.client.loop_start()
        self._thread = threading.Thread(target=self._publish_loop, name="mqtt-publisher")
        self._thread.start()

    def stop(self) -> None:
        """Send what is left (briefly), say ``offline``, disconnect."""
        deadline = time.monotonic() + STOP_FLUSH_S
        while self.connected.is_set() and time.monotonic() < deadline and not self._drained():
            time.sleep(0.02)
        self._stopping.set()
        with self._answer_acked:
            self._answer_acked.notify_all()
        with self.publications.changed:
            self.publications.changed.notify_all()
        if self._thread is not None:
            self._thread.join(2.0)
        self._save_delivered()
        if self.connected.is_set():
            info = self.client.publish(self.topics.availability, "offline", qos=1, retain=True)
            with contextlib.suppress(RuntimeError, ValueError):
                info.wait_for_publish(max(0.1, deadline - time.monotonic()))
        self.client.disconnect()
        self.client.loop_stop()
        self.watch.close()
        self.subscriptions.close()

    def _drained(self) -> bool:
        with self._lock:
            events_done = self._next_seq > self.outbox.last_seq and not self._inflight
        version, _state = self.publications.state_snapshot()
        return events_done and version == self._sent_state_version

    # -- MQTT callbacks (the client's thread) -----------------------------------------------

    def _on_connect(
        self, client: Any, _userdata: Any, _flags: Any, reason: Any, props: Any
    ) -> None:
        if reason.is_failure:
            return  # said by the connection's watch, at error level
        self.connects += 1
        told = getattr(props, "MaximumPacketSize", None) if props is not None else None
        self.max_packet = min(self.config.max_packet_bytes, told or self.config.max_packet_bytes)
        logger.info(
            "connected to the broker %s (packets up to %d bytes)",
            broker_text(*self.watch.broker),
            self.max_packet,
        )
        self.subscriptions.subscribe()
        info = client.publish(self.topics.availability, "online", qos=1, retain=True)
        self._register(info.mid, None)
        with self._lock:
            # The state is retained: say it again on every connect (a broker without
            # persistence lost it).
            self._sent_state_version = -1
            self._dealer_sent = None
        self.connected.set()
        with self.publications.changed:
            self.publications.changed.notify_all()

    def _on_subscribe(
        self, _client: Any, _userdata: Any, mid: int, reasons: Any, _props: Any
    ) -> None:
        self.subscriptions.on_suback(mid, reasons)

    def _subscribed(self, refused: list[str]) -> None:
        if refused:
            # The requests stay in the session the broker keeps, if it has one; none come
            # on this connection until the next one is granted.
            logger.error(
                "the broker %s refused the subscription to the requests (%s): no request "
                "reaches the table until it reconnects",
                broker_text(*self.watch.broker),
                ", ".join(refused),
            )

    def _on_disconnect(
        self, _client: Any, _userdata: Any, _flags: Any, reason: Any, _props: Any
    ) -> None:
        if self._stopping.is_set():
            # Our own goodbye at shutdown, not an outage: nothing for an operator to act on.
            logger.info("disconnected from the broker")
        elif self.connected.is_set():
            logger.warning("lost the broker: %s; the table goes on and the events wait", reason)
            self._blame_drop()
        self.connected.clear()

    def _blame_drop(self) -> None:
        """The link dropped: the request that arrived last, if just before, is counted."""
        last, self._last_request = self._last_request, None
        if last is None or time.monotonic() - last[1] > POISON_BLAME_S:
            return
        digest = last[0]
        self._drops[digest] = self._drops.pop(digest, 0) + 1
        while len(self._drops) > POISON_MEMORY:
            self._drops.popitem(last=False)

    def _on_publish(
        self, _client: Any, _userdata: Any, mid: int, _reason: Any, _props: Any
    ) -> None:
        with self._lock:
            seq = self._inflight.pop(mid, None)
            if seq is None:
                size = self._answer_bytes.pop(mid, None)
                if size is not None:
                    self._answers_in_flight -= size
                    self._answer_acked.notify_all()
                if mid in self._other_mids:
                    self._other_mids.discard(mid)
                else:
                    # Acknowledged before the publishing thread could note the id: it
                    # finds it here (see _register).
                    self._early_acks.add(mid)
                return
            self._ack(seq)
            # The publisher is needed only if events wait for room in the window; how far
            # the broker acknowledged is written with the outbox's next commit.
            waiting = self._next_seq <= self.outbox.last_seq
        if waiting:
            with self.publications.changed:
                self.publications.changed.notify_all()

    def _register(self, mid: int, seq: int | None, answer_bytes: int = 0) -> None:
        """Note a message id just returned by publish (``seq`` for an event, None for a
        state, dealer line or answer: ``answer_bytes``, its size). Holding our lock across
        publish() could deadlock with the client's own lock, so an acknowledgement may come
        first."""
        with self._lock:
            if mid in self._early_acks:
                self._early_acks.discard(mid)
                if seq is not None:
                    self._ack(seq)
            elif seq is not None:
                self._inflight[mid] = seq
            else:
                self._other_mids.add(mid)
                if answer_bytes:
                    self._answer_bytes[mid] = answer_bytes
                    self._answers_in_flight += answer_bytes

    def wait_answer_room(self, limit: int, timeout: float) -> bool:
        """Wait until the answers not yet acknowledged are fewer than ``limit`` bytes (a
        reader's, before it sends a page); False if they still are not after ``timeout``
        seconds, or the link stops."""
        with self._answer_acked:
            return self._answer_acked.wait_for(
                lambda: self._answers_in_flight < limit or self._stopping.is_set(), timeout
            ) and not self._stopping.is_set()

    def _ack(self, seq: int) -> None:
        if self.on_acked is not None:
            self.on_acked(seq)
        self._acked.add(seq)
        advanced = self._delivered
        while advanced + 1 in self._acked:
            advanced += 1
            self._acked.discard(advanced)
        if advanced != self._delivered:
            self._delivered = advanced
            self.outbox.note_delivered(advanced)

    def _on_message(self, client: Any, _userdata: Any, message: Any) -> None:
        payload = bytes(message.payload)
        properties = getattr(message, "properties", None)
        digest = hashlib.sha256(message.topic.encode() + b"\0" + payload).digest()[:16]
        # Taken, so acknowledged now, before its answer: an answer that costs the link (or
        # a crash while it is handled) must not bring the request back at every reconnect.
        if message.qos > 0:
            client.ack(message.mid, message.qos)
        previous, self._last_request = self._last_request, (digest, time.monotonic())
        if previous is not None and previous[0] != digest:
            self._drops.pop(previous[0], None)  # the link outlived it
        drops = self._drops.get(digest, 0)
        try:
            if drops >= POISON_AFTER_DROPS or digest in self._poisoned:
                self._last_request = None
                self._poison(digest, message.topic, payload, properties, drops)
                return
            self.on_request(message.topic, payload, properties)
        except Exception:  # a bug must not stop the client's thread
            logger.exception("a request could not be handled")

    def _poison(
        self, digest: bytes, topic: str, payload: bytes, properties: Any, drops: int
    ) -> None:
        drops = self._poisoned.get(digest) or drops
        if digest not in self._poisoned:
            logger.error(
                "request on %r dropped unhandled: the link to the broker dropped %d times "
                "right after it arrived (answered 'poisoned')",
                topic[:200],
                drops,
            )
            self._poisoned[digest] = drops
            while len(self._poisoned) > POISON_MEMORY:
                self._poisoned.popitem(last=False)
        self._drops.pop(digest, None)
        if self.on_poisoned is not None:
            self.on_poisoned(topic, payload, properties, drops)

    # -- publishing (the publisher thread) ---------------------------------------------------

    def set_dealer(self, body: bytes) -> None:
        """Called on the table's thread among an event's effects: sent with the event's
        messages, by the round that follows their record (see :meth:`send_now`)."""
        with self.publications.changed:
            self._dealer = body

    def respond(self, route: Route, response: dict[str, Any]) -> None:
        """Publish an answer; one that cannot be published is logged, never raised (it
        runs on the table's thread, which must go on)."""
        try:
            self._respond(route, response)
        except (ValueError, TypeError, OSError) as error:
            logger.warning("could not answer on %r: %s", route.topic[:200], error)

    def _properties(self, route: Route) -> Any:
        if not (self.v5 and route.correlation is not None):
            return None
        from paho.mqtt.packettypes import PacketTypes
        from paho.mqtt.properties import Properties

        properties = Properties(PacketTypes.PUBLISH)
        properties.CorrelationData = route.correlation
        return properties

    def packet_bytes(self, topic: str, body: bytes, properties: Any = None) -> int:
        return publish_packet_bytes(topic, body, properties, self.v5)

    def answer_room(self, route: Route) -> int:
        """How many bytes an answer's JSON may have on ``route`` under the broker's limit."""
        return self.max_packet - self.packet_bytes(route.topic, b"", self._properties(route))

    def _respond(self, route: Route, response: dict[str, Any]) -> None:
        properties = self._properties(route)
        body = encode(response)
        size = self.packet_bytes(route.topic, body, properties)
        if size > self.max_packet:
            # The broker would drop the link for it: say so instead, in a few hundred bytes.
            logger.warning(
                "an answer to %s on %r is %d bytes, more than the broker takes (%d): answered "
                "too_large instead",
                response.get("command"),
                route.topic[:200],
                size,
                self.max_packet,
            )
            body = encode(
                response_message(
                    response.get("transaction"),
                    str(response.get("command", "")),
                    False,
                    f"the answer would be {size} bytes, more than the broker takes "
                    f"({self.max_packet})",
                    code="too_large",
                )
            )
        info = self.client.publish(route.topic, body, qos=1, properties=properties)
        self._register(info.mid, None, len(body))

    def _fits(self, what: str, number: int, topic: str, body: bytes) -> bool:
        """Whether a message fits the broker's limit; one that does not is logged once and
        not sent (the broker would drop the link for it, again at every reconnect)."""
        size = self.packet_bytes(topic, body)
        if size <= self.max_packet:
            return True
        if (what, number) not in self._too_large:
            self._too_large.add((what, number))
            logger.error(
                "%s %d is %d bytes, more than the broker takes (%d): not published",
                what,
                number,
                size,
                self.max_packet,
            )
        return False

    def send_now(self) -> bool:
        """On the table's thread, right after a journal row's messages went into the outbox:
        send them there and then, one thread hop less on a card's way out. True if all was
        sent; otherwise (no broker, the publish window full, the publisher in a round of its
        own) the publisher sends the rest (it is notified next)."""
        if not self.connected.is_set() or self._stopping.is_set():
            return False
        if not self._round.acquire(blocking=False):
            return False
        try:
            self._send_round()
            return self._all_sent()
        except Exception:  # the table's thread must go on; the publisher retries
            logger.exception("publishing from the table's thread failed")
            return False
        finally:
            self._round.release()

    def _send_round(self) -> None:
        self._send_events()
        self._send_state()
        self._send_dealer()

    def _all_sent(self) -> bool:
        with self._lock:
            events_sent = self._next_seq > self.outbox.last_seq
        version, _state = self.publications.state_snapshot()
        return (
            events_sent
            and version == self._sent_state_version
            and self._dealer == self._dealer_sent
        )

    def _publish_loop(self) -> None:
        changed = self.publications.changed
        while not self._stopping.is_set():
            with changed:
                signalled = changed.wait(0.5)
            try:
                if not signalled:
                    # At rest: write down how far the broker acknowledged (during play,
                    # that goes with the outbox's commits).
                    self._save_delivered()
                if not self.connected.is_set():
                    continue
                if not signalled and time.monotonic() - self._state_sent_at >= RESTATE_S:
                    with self._lock:
                        self._sent_state_version = -1  # the retained state, said again
                with self._round:
                    self._send_round()
                # A long catch-up commits nothing: write the mark down as it goes.
                self._save_delivered(behind=PUBLISH_WINDOW)
            except Exception:
                logger.exception("publishing failed; retrying")
                time.sleep(0.2)

    def _save_delivered(self, behind: int = 1) -> None:
        """Write the delivery mark down. One that cannot be written (a full disk) is left:
        it only costs resending events the broker already has. The table's next input,
        whose row or messages cannot be written either, stops the table with the line that
        names the disk's trouble (and a start on that disk fails with the same line)."""
        try:
            self.outbox.save_delivered(behind)
        except JournalError as error:
            logger.debug("the delivery mark was not written: %s", error)

    def _send_events(self) -> None:
        while self.connected.is_set() and not self._stopping.is_set():
            with self._lock:
                seq = self._next_seq
                if seq > self.outbox.last_seq or len(self._inflight) >= PUBLISH_WINDOW:
                    return
            body = self.outbox.get(seq)
            if body is None:  # pragma: no cover - the outbox is written before it is read
                return
            if not self._fits("event", seq, self.topics.events, body):
                with self._lock:
                    self._next_seq = seq + 1
                    self._ack(seq)  # as delivered as it can be: `events` answers for it
                continue
            info = self.client.publish(self.topics.events, body, qos=1)
            if info.rc != self._mqtt.MQTT_ERR_SUCCESS:
                # Not connected after all: the client queued it and sends it on reconnect.
                logger.debug("event %d queued by the client (rc %s)", seq, info.rc)
            with self._lock:
                self._next_seq = seq + 1
            self._register(info.mid, seq)

    def _send_state(self) -> None:
        version, state = self.publications.state_snapshot()
        if state is None or version == self._sent_state_version:
            return
        with self._lock:
            if self._next_seq <= state["seq"]:
                return  # the events that led to this state go first
        body = encode(state)
        if self._fits("state", version, self.topics.state, body):
            info = self.client.publish(self.topics.state, body, qos=1, retain=True)
            self._register(info.mid, None)
        self._sent_state_version = version
        self._state_sent_at = time.monotonic()

    def _send_dealer(self) -> None:
        body = self._dealer
        if body is not None and body != self._dealer_sent:
            if self._fits("dealer line", len(body), self.topics.dealer, body):
                info = self.client.publish(self.topics.dealer, body, qos=1, retain=True)
                self._register(info.mid, None)
            self._dealer_sent = body


class TableDaemon:
    """A table, its journal and outbox, and its MQTT link."""

    def __init__(
        self,
        config: LivetableConfig,
        clock: Callable[[], float] = time.time,
        *,
        shoe: bool = True,
        camera_source: Any = None,
    ) -> None:
        config.require("mqtt")
        self.config = config
        self.clock = clock
        self.signer: HeadSigner | None = None
        signing_key = None
        if config.signing_key is not None:
            # Before the journal is touched: a table told to sign never runs unsigned.
            try:
                signing_key = load_signing_key(config.signing_key)
            except ConfigurationError as error:
                where = f"{config.source}: " if config.source is not None else ""
                raise ConfigurationError(f"{where}{error}") from error
        # Before anything is opened: a second daemon on this journal stops here.
        self.lock = JournalLock.acquire(config.table.journal_path)
        try:
            self._open(shoe, camera_source)
            if signing_key is not None:
                self.signer = HeadSigner(
                    signing_key, self.assembled.table.journal, config.table.table_id, clock
                )
        except BaseException:
            self.lock.release()
            raise

    def _open(self, shoe: bool, camera_source: Any) -> None:
        config = self.config
        table_id = config.table.table_id
        self.metrics: TableMetrics | None = None
        self.topics = Topics(config.mqtt.topic_prefix, table_id)  # type: ignore[union-attr]
        with Journal(config.table.journal_path) as journal:
            epoch = journal.epoch  # a new journal gets its epoch here
        self.outbox = open_outbox(outbox_path(config.table.journal_path))
        try:
            if self.outbox.journal_epoch not in (None, epoch):
                logger.warning(
                    "the outbox %s follows from another journal (epoch %s, the journal's is "
                    "%s): rebuilding it",
                    self.outbox.path,
                    self.outbox.journal_epoch,
                    epoch,
                )
                self.outbox.reset()
            self.outbox.bind_epoch(epoch)
            self.publications = Publications(table_id, self.outbox, epoch)
            self._routes: dict[str, Route] = {}
            self.limits = CommandLimits()
            self.read_limits = ReadLimits()
            # Answers on the link, which is made last (it needs the replayed table).
            self.audits: AuditReader[Route] = AuditReader(
                config.table.journal_path,
                self.outbox,
                epoch,
                lambda route: self.link.answer_room(route),
                self._respond_read,
            )
            self.pages: ReadLanes[Route] = ReadLanes(self._serve_page, "events-reader")
            self.pictures = PictureReader(
                config.table.journal_path,
                picture_store(config, camera_source is not None),
                lambda route: self.link.answer_room(route),
                self._respond_read,
            )
            self._reads_stopping = threading.Event()
            self.assembled = self._assemble(shoe, camera_source)
        except BaseException:
            self.outbox.close()
            raise
        try:
            if self.publications.seq != self.outbox.last_seq:
                # The outbox holds more events than the journal gives: it belongs to another
                # journal (restored from elsewhere). Rebuild it from this journal.
                logger.warning(
                    "the outbox %s does not match the journal (%d events, the journal gives "
                    "%d): rebuilding it",
                    self.outbox.path,
                    self.outbox.last_seq,
                    self.publications.seq,
                )
                self.assembled.close()
                self.outbox.reset()
                self.outbox.bind_epoch(epoch)
                self.publications = Publications(table_id, self.outbox, epoch)
                self.assembled = self._assemble(shoe, camera_source)
            self.publications.live()
            self.link = MqttLink(
                config.mqtt,  # type: ignore[arg-type]
                self.topics,
                self.publications,
                self.outbox,
                self.handle_request,
            )
            self.link.on_poisoned = self._answer_poisoned
            if config.metrics is not None:
                self.metrics = self._serve_metrics(config.metrics)
        except BaseException:
            self.close()
            raise

    def _serve_metrics(self, config: MetricsConfig) -> TableMetrics:
        """``/metrics`` from the replayed table on (ConfigurationError if it cannot listen)."""
        # Imported only here: prometheus_client costs a table without [metrics] a tenth
        # to a half of a second at every start.
        from controller.service.metrics import TableMetrics

        table = self.config.table
        metrics = TableMetrics(
            table.table_id, table.game, table.journal_path, self.link.connected.is_set
        )
        metrics.started(self.publications.state_snapshot()[1])
        self.link.on_acked = metrics.acknowledged
        metrics.serve(config)
        return metrics

    def close(self) -> None:
        """Close the table and its outbox and let the journal go, without running it (what
        :meth:`run` does when it ends)."""
        try:
            if self.metrics is not None:
                self.metrics.close()
            self.audits.stop()
            self.pictures.stop()
            self.assembled.close()
        finally:
            try:
                self.outbox.close()
            finally:
                self.lock.release()

    def _assemble(self, shoe: bool, camera_source: Any) -> AssembledTable:
        def handler(devices: DeviceEffects) -> Effects:
            return Effects(devices, self._publish)

        return assemble(
            self.config,
            handler,
            clock=self.clock,
            observe=self._replayed,
            shoe=shoe,
            camera_source=camera_source,
        )

    @property
    def runtime(self) -> Any:
        return self.assembled.runtime

    # -- effects (the table's thread) -----------------------------------------------------

    def _replayed(self, entry: JournalEntry, effects: list[Effect]) -> None:
        self.publications.replaying(entry.seq)
        self.publications.record(replayed_batch(entry, effects))

    def _publish(self, batch: EffectBatch) -> None:
        """What one event published, after the devices took theirs: the dealer's line to
        the link, the messages to the outbox (whose sending follows at once), the commands'
        answers to whoever waits for them. JournalError if the outbox cannot be written.
        A settlement's row is signed first (with a key), so its state carries the signature."""
        if (
            self.signer is not None
            and batch.journal_seq is not None
            and any(
                isinstance(effect, PublishEvent) and effect.name == "round_settled"
                for effect in batch.effects
            )
        ):
            self._sign_head(republish=False)
        metrics = self.metrics
        if metrics is not None:
            # Before the sending: the broker may acknowledge a card before record returns.
            metrics.expect(batch, self.publications.seq, metrics.clock())
        for effect in batch.effects:
            if isinstance(effect, TellDealer):
                self.link.set_dealer(encode(dealer_message(effect)))
        for response, answered in self.publications.record(batch):
            route = self._routes.pop(answered.command_id, None)
            if route is not None:
                self.link.respond(route, {**response, "command": route.command})
        if metrics is not None:
            metrics.published(
                batch, self.publications.state_snapshot()[1], self.publications.seq
            )
        if self.signer is not None and round_pictured(batch):
            # The round's last row is its picture of the table: signed too, so that its
            # evidence bundle can be made at once.
            self._sign_head()

    def _sign_head(self, republish: bool = True) -> None:
        """Sign the journal's head and publish the signature (the table's thread)."""
        assert self.signer is not None
        signed = self.signer.sign()
        if signed is not None:
            logger.debug("signed the journal's head: row %d (%s)", signed.seq, signed.key)
            self.publications.set_signed(signed.published(), republish)

    def _sign_if(self, wanted: bool) -> None:
        """Sign when ``wanted``; a journal that cannot take it stops the table as a row
        that cannot be written does (see :meth:`run`)."""
        if self.signer is None or not wanted or self.runtime.failure is not None:
            return
        try:
            self._sign_head()
        except JournalError as error:
            self.runtime.fail(error)

    # -- requests (the MQTT thread, then the table's) -------------------------------------

    def _route(self, topic: str, properties: Any) -> Route | None:
        levels = topic.split("/")
        if len(levels) != 6:
            return None
        default = self.topics.response(levels[4])
        response_topic = getattr(properties, "ResponseTopic", None) if properties else None
        correlation = getattr(properties, "CorrelationData", None) if properties else None
        # An MQTT 5 response topic is honoured under the account's own response topic only:
        # a request must not make the table publish anywhere else.
        if (
            isinstance(response_topic, str)
            and (response_topic == default or response_topic.startswith(default + "/"))
            and not set("+#\0") & set(response_topic)
            and len(response_topic.encode()) < 1024
        ):
            return Route(response_topic, correlation)
        return Route(default, correlation)

    def handle_request(self, topic: str, payload: bytes, properties: Any) -> None:
        route = self._route(topic, properties)
        try:
            request = parse_request(
                topic, payload, self.topics.base.split("/")[0], self.config.table.table_id
            )
        except RequestError as error:
            logger.info("request refused (%s): %s", error.code, error.message)
            if route is not None:
                self.link.respond(
                    route,
                    response_message(
                        error.transaction, error.command, False, error.message, code=error.code
                    ),
                )
            return
        if request.command == "status":
            _version, state = self.publications.state_snapshot()
            self.link.respond(
                route,  # type: ignore[arg-type]
                response_message(
                    request.transaction, "status", True, "the table's state", data={"state": state}
                ),
            )
            return
        if request.command in ("events", "audit", "pictures"):
            self._read(request, route)  # type: ignore[arg-type]
            return
        limited = self._over_budget(request)
        if limited is not None:
            # Answered here, so that a flood neither waits in the table's queue nor delays
            # the other accounts' requests; the table's thread checks again (_execute).
            self.link.respond(route, limited)  # type: ignore[arg-type]
            return
        if self.runtime.events.qsize() > MAX_QUEUED_REQUESTS:
            self.link.respond(
                route,  # type: ignore[arg-type]
                response_message(
                    request.transaction,
                    request.command,
                    False,
                    "the table is busy; send the request again shortly",
                    code="unavailable",
                ),
            )
            return
        self.runtime.submit(RuntimeTask(lambda: self._execute(request, route)))  # type: ignore[arg-type]

    def _read(self, request: Request, route: Route) -> None:
        """Queue an ``events`` or ``audit`` page for its reader, within the account's read
        budget (:class:`~controller.service.request_limits.ReadLimits`): read on a thread of
        its own, neither this thread's other requests nor the table's cards wait for it."""
        route.command, route.role, route.account = request.command, request.role, request.account
        why = self.read_limits.admit(request.account, request.role)
        if why is not None:
            self.link.respond(
                route,
                response_message(
                    request.transaction, request.command, False, why, code="rate_limited"
                ),
            )
            return
        if request.command == "audit":
            # The audit's own reader (controller.service.audit): a long journal's search.
            queued = self.audits.submit(request, route)
        elif request.command == "pictures":
            queued = self.pictures.submit(request, route)
        else:
            queued = self.pages.submit(request, route)
        if not queued:
            self.read_limits.done(request.account, request.role)
            self.link.respond(
                route,
                response_message(
                    request.transaction,
                    request.command,
                    False,
                    f"the table is busy with other {request.command} requests; send it again "
                    "shortly",
                    code="unavailable",
                ),
            )

    def _serve_page(self, request: Request, route: Route) -> None:
        """An ``events`` page, on the events reader's thread."""
        try:
            reply = self._events_since(request, route)
        except JournalError as error:
            reply = response_message(
                request.transaction,
                "events",
                False,
                f"the events cannot be read now: {error}",
                code="unavailable",
            )
        except Exception:  # the reader goes on: the next page is answered
            logger.exception("an events request could not be answered")
            reply = response_message(
                request.transaction,
                "events",
                False,
                "the events could not be read (the table logged why)",
                code="unavailable",
            )
        self._respond_read(route, reply)

    def _respond_read(self, route: Route, answer: dict[str, Any]) -> None:
        """Send a reader's answer once the answers on their way to the broker leave room
        for it (:data:`READ_ANSWERS_IN_FLIGHT_BYTES`), and let its account's page go."""
        try:
            deadline = time.monotonic() + READ_ROOM_WAIT_S
            room = False
            # In short waits: a stop must not wait for the broker.
            while not room and not self._reads_stopping.is_set() and time.monotonic() < deadline:
                room = self.link.wait_answer_room(READ_ANSWERS_IN_FLIGHT_BYTES, 0.1)
            if not room:
                answer = response_message(
                    answer.get("transaction"),
                    route.command,
                    False,
                    "the table's answers are not getting through to the broker now; send it "
                    "again shortly",
                    code="unavailable",
                )
            self.link.respond(route, answer)
        finally:
            self.read_limits.done(route.account, route.role)

    def _answer_poisoned(self, topic: str, payload: bytes, properties: Any, drops: int) -> None:
        route = self._route(topic, properties)
        if route is None:
            return
        try:
            request = parse_request(
                topic, payload, self.topics.base.split("/")[0], self.config.table.table_id
            )
            transaction, command = request.transaction, request.command
        except RequestError as error:
            transaction, command = error.transaction, error.command
        self.link.respond(
            route,
            response_message(
                transaction,
                command,
                False,
                f"not handled: the table's link to the broker dropped {drops} times right after "
                "this request arrived; it is dropped (send it again with a new transaction if "
                "it is still wanted)",
                code="poisoned",
            ),
        )

    def _over_budget(self, request: Request) -> dict[str, Any] | None:
        """The ``rate_limited`` answer for a table command over its account's budget
        (:mod:`controller.service.request_limits`), or None. A repeat of a request already answered
        is not counted: its stored answer costs the journal nothing."""
        if request.command not in TABLE_COMMANDS:
            return None
        why = self.limits.refusal(request.account, request.role)
        if why is None or self.outbox.answer(command_key(request.account, request.transaction)):
            return None
        return response_message(
            request.transaction, request.command, False, why, code="rate_limited"
        )

    def _other_round(self, request: Request) -> dict[str, Any]:
        """The refusal of a ``cancel`` that names a round other than the one in play, or
        None. Read on the table's thread, so the round cannot change before the command is
        taken: a round that ended (and the next that opened) after the supervisor read the
        state is never voided in its place. Refused here, the command takes no effect and
        is journaled nowhere, like one the table never received."""
        if request.command != "cancel" or "round_id" not in request.args:
            return None
        named = int(request.args["round_id"])
        in_play = self.assembled.table.machine.round_in_progress()
        if named == in_play:
            return None
        now = "no round is in play" if in_play is None else f"round {in_play} is"
        return response_message(
            request.transaction,
            request.command,
            False,
            f"round {named} is not the round in play ({now}): nothing cancelled",
            code="refused",
        )

    def _held(self, request: Request) -> dict[str, Any] | None:
        """The refusal (code ``held``) of an ``open_round`` while the table holds between
        rounds, or None. Read on the table's thread like :meth:`_other_round`, and journaled
        nowhere: the platform asks again once the state's ``holds`` are empty."""
        state = self.assembled.table.machine.state
        if request.command != "open_round" or not state.round_holds:
            return None
        return response_message(
            request.transaction, request.command, False, held_text(state), code="held"
        )

    def _unavailable(self, request: Request) -> dict[str, Any]:
        """The answer to a request the stopped table can no longer take (see :meth:`run`)."""
        return response_message(
            request.transaction,
            request.command,
            False,
            f"the table stopped: {self.runtime.failure}",
            code="unavailable",
        )

    def _events_since(self, request: Request, route: Route) -> dict[str, Any]:
        """Up to ``limit`` events after ``since``, and no more than one answer can carry
        under the broker's packet limit (``more`` says whether others follow)."""
        since = int(request.args["since"])
        limit = int(request.args.get("limit", EVENTS_PAGE_MAX))
        rows = self.outbox.since(since, limit)
        last = self.outbox.last_seq
        room = self.link.answer_room(route)

        def answer(count: int) -> dict[str, Any]:
            taken = rows[:count]
            return response_message(
                request.transaction,
                "events",
                True,
                f"{count} event(s) after {since}",
                data={
                    "epoch": self.publications.epoch,
                    "events": [json.loads(body) for _seq, body in taken],
                    "last_seq": last,
                    "more": (taken[-1][0] if taken else since) < last,
                },
            )

        # The events are re-encoded as they were stored (the same encoder): each adds its
        # stored bytes and a comma to the answer's empty envelope.
        size = len(encode(answer(0))) + len(str(len(rows)))
        count = 0
        for _seq, body in rows:
            if size + len(body) + 1 > room:
                break
            size += len(body) + 1
            count += 1
        reply = answer(count)
        while count > 0 and len(encode(reply)) > room:  # pragma: no cover - the sum is exact
            count -= 1
            reply = answer(count)
        if count == 0 and rows:
            seq, body = rows[0]
            return response_message(
                request.transaction,
                "events",
                False,
                f"event {seq} alone ({len(body)} bytes) is more than an answer can carry under "
                f"the broker's packet limit ({self.link.max_packet} bytes); the events after it "
                f"are answered from since={seq}",
                code="too_large",
            )
        return reply

    def _execute(self, request: Request, route: Route) -> None:
        """Run a table command on the table's thread: once per key, answered every time."""
        key = command_key(request.account, request.transaction)
        route.command = request.command
        known = self.outbox.answer(key)
        if known is not None:
            self.link.respond(route, {**json.loads(known), "command": request.command})
            return
        if self.runtime.failure is not None:
            self.link.respond(route, self._unavailable(request))
            return
        limited = self._over_budget(request)
        if limited is not None:
            self.link.respond(route, limited)
            return
        other_round = self._other_round(request) or self._held(request)
        if other_round is not None:
            self.link.respond(route, other_round)
            return
        if request.command == "decide":
            self._decide(request, route, key)
            return
        self._routes[key] = route
        batch = self.runtime.take(table_event(request, key, self.clock()))
        if self._routes.pop(key, None) is not None and self.runtime.failure is not None:
            # Not taken, or taken but its answer not kept: the same request, sent again
            # after the restart, gets the table's answer.
            self.link.respond(route, self._unavailable(request))
        self._count(request, batch, key)

    def _count(self, request: Request, batch: EffectBatch | None, key: str) -> None:
        """Charge a journaled command to its account's budget (refused or not)."""
        if batch is None or batch.journal_seq is None:
            return  # not journaled: it cost nothing
        refused = any(
            isinstance(effect, CommandAnswered) and effect.command_id == key and not effect.ok
            for effect in batch.effects
        )
        self.limits.taken(request.account, request.role, refused)

    def _decide(self, request: Request, route: Route, key: str) -> None:
        args = request.args
        known = self.outbox.answer(decision_key(int(args["request_seq"])))
        if known is not None:
            self.link.respond(route, {**json.loads(known), "transaction": request.transaction})
            return
        awaited = self.publications.awaited
        wanted = None if awaited is None else awaited[1]
        if (
            awaited is None
            or awaited[0] != args["request_seq"]
            or wanted is None
            or (wanted.get("round_id"), wanted.get("kind"), wanted.get("box"), wanted.get("hand"))
            != (args["round_id"], args["kind"], args["box"], args["hand"])
        ):
            self.link.respond(
                route,
                response_message(
                    request.transaction,
                    "decide",
                    False,
                    "no such decision is awaited now (see the last decision_requested event)",
                    code="stale",
                ),
            )
            return
        batch = self.runtime.take(table_event(request, key, self.clock()))
        if batch is None or self.runtime.failure is not None:
            self.link.respond(route, self._unavailable(request))
            return
        effects = batch.effects
        taken = [e for e in effects if isinstance(e, PublishEvent) and e.name == "decision_taken"]
        if batch.journal_seq is not None:
            self.limits.taken(request.account, request.role, refused=not taken)
        if taken and batch.journal_seq is not None:
            response = response_message(
                request.transaction, "decide", True, "decision taken", data=dict(taken[0].payload)
            )
            self.outbox.store_answer(key, batch.journal_seq, encode(response))
        else:
            reasons = [getattr(e, "reason", "") for e in effects if hasattr(e, "reason")]
            response = response_message(
                request.transaction,
                "decide",
                False,
                "; ".join(r for r in reasons if r) or "the decision was not taken",
                code="refused",
            )
        self.link.respond(route, response)

    # -- the loop ---------------------------------------------------------------------------

    def failure(self) -> JournalError | None:
        """Why the table stopped taking input (its journal or outbox cannot be written)."""
        failure: JournalError | None = self.runtime.failure
        return failure

    def _starting_line(self) -> str:
        """The table, its game, shoe, broker and journal, and the rows it replayed."""
        table, shoe, broker = self.config.table, self.config.shoe, self.config.mqtt
        game = f"{table.game} ({table.variant})" if table.game == "baccarat" else table.game
        shoe_text = f"shoe {shoe.port} ({shoe.protocol})" if shoe is not None else "no shoe"
        assert broker is not None  # required by __init__
        login = f"user {broker.username}" if broker.username else "anonymous"
        tls = ", TLS" if broker.tls is not None else ""
        brokers = ", ".join(broker_text(*each) for each in broker.brokers)
        return (
            f"table {table.table_id} starting: {game}, {shoe_text}, broker "
            f"{brokers} (MQTT {broker.protocol}{tls}, client "
            f"{broker.client_id}, {login}), journal {table.journal_path} "
            f"({self.assembled.table.journal.last_seq} rows replayed)"
        )

    def run(self, stop: threading.Event, closing: threading.Event | None = None) -> int:
        """Run the table until ``stop`` is set (0), or until its journal or outbox cannot be
        written: then the requests that wait are answered ``unavailable``, the table is
        closed and availability goes ``offline``, and the error is raised.

        ``closing`` set (the first SIGTERM): the table holds between rounds (``closing``),
        the round in play finishes, and then the table stops as for ``stop``; or when
        ``[table] stop_timeout_s`` has passed first (the journal keeps the round)."""
        watchdog = sd_notify.watchdog_interval_s()
        ping_every = None if watchdog is None else watchdog / 2
        last_ping = 0.0
        # What runs and when it is ready: the two lines a healthy table logs without -v.
        lifecycle = logging.getLogger(LIFECYCLE_LOGGER)
        lifecycle.info("%s", self._starting_line())
        self.audits.start()
        self.pictures.start()
        self.pages.start()
        self.link.start()
        try:
            # A table that carries on an old journal says so (its numbers carry on too).
            log_reused_journal(self.assembled.table, logging.WARNING)
            self.assembled.start()
            # The head as the table starts (its replay and this start's rows) is signed now,
            # so the first state already carries a signature.
            self._sign_if(self.signer is not None and self.signer.unsigned())
            if self.failure() is None:
                sd_notify.ready(f"table {self.config.table.table_id} running")
                lifecycle.info(
                    "table %s running: ready, %d event(s) published so far",
                    self.config.table.table_id,
                    self.publications.seq,
                )
            closing_since: float | None = None
            while not stop.is_set() and self.failure() is None:
                if closing is not None and closing.is_set():
                    if closing_since is None:
                        closing_since = time.monotonic()
                        self._hold_for_closing()
                    if self._closed(closing_since):
                        break
                self.runtime.step()
                self._sign_if(self.signer is not None and self.signer.due())
                if ping_every is not None and time.monotonic() - last_ping >= ping_every:
                    sd_notify.watchdog_ping()
                    last_ping = time.monotonic()
            self._answer_waiting()
            # The last rows, before the journal closes.
            self._sign_if(self.signer is not None and self.signer.unsigned())
        finally:
            sd_notify.stopping()
            try:
                # First: its read-only connection must not outlive the journal's own (the
                # last to close folds the write-ahead log back into the journal).
                self._reads_stopping.set()
                if self.metrics is not None:
                    self.metrics.close()
                self.audits.stop()
                self.pictures.stop()
                self.pages.stop()
                self.assembled.close()
            finally:
                try:
                    self.link.stop()
                    self.outbox.close()
                finally:
                    self.lock.release()
        failure = self.failure()
        if failure is not None:
            raise failure
        return 0

    def _hold_for_closing(self) -> None:
        """Journal ``ControllerStopping``: the table finishes the round in play and opens
        none (machine revision 6; a journal of an older one stops at once, as it did)."""
        machine = self.assembled.table.machine
        if machine.revision < DEALERS_REVISION:
            return
        self.runtime.take(ControllerStopping(self.clock()))
        logging.getLogger(LIFECYCLE_LOGGER).info(
            "table %s closing: %s, then it stops (within %g s; a second SIGTERM stops it now)",
            self.config.table.table_id,
            "the round in play finishes" if self._in_play() else "no round in play",
            self.config.table.stop_timeout_s,
        )

    def _in_play(self) -> bool:
        """Whether a round or a burn is in progress (paused included)."""
        return phase_at_stake(self.assembled.table.machine.state) in ACTIVE_PHASES

    def _closed(self, since: float) -> bool:
        """Whether a closing table may stop now: nothing in play, or no more time for it."""
        if self.assembled.table.machine.revision < DEALERS_REVISION or not self._in_play():
            return True
        if time.monotonic() - since < self.config.table.stop_timeout_s:
            return False
        logger.warning(
            "the round in play did not finish within stop_timeout_s (%g s): stopping; the "
            "journal keeps it and the restart pauses it (recovered)",
            self.config.table.stop_timeout_s,
        )
        return True

    def _answer_waiting(self) -> None:
        """After a failure: take nothing more, and answer the requests that wait in the
        queue (each ``unavailable``). The queued device events are not taken, as none that
        would come while the table is stopped."""
        if self.failure() is None:
            return
        while True:
            try:
                waiting = self.runtime.events.get_nowait()
            except queue.Empty:
                return
            if isinstance(waiting, RuntimeTask):
                self.runtime.handle(waiting)


def run_daemon(args: argparse.Namespace) -> int:
    config = load_config(Path(args.config))
    if config.shoe is None:
        raise ConfigurationError(f"{args.config} has no [shoe] section, which `run` needs")
    stop = threading.Event()
    closing = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        # The first SIGTERM (systemctl stop) lets the round in play finish; a second one, or
        # SIGINT, stops at once (the journal loses nothing either way).
        if signum == signal.SIGTERM and not closing.is_set():
            logger.info("SIGTERM: closing between rounds (again to stop at once)")
            closing.set()
            return
        logger.info("signal %d: stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        daemon = TableDaemon(config)
    except TableError:
        raise
    return daemon.run(stop, closing)


RUN_HELP = """Run one table as a daemon: read the shoe (and the camera), journal every event
before it takes effect, and speak the MQTT API to the game platform and the supervisors.
Under systemd it reports ready after the journal's replay and feeds the watchdog from its
event loop. On SIGTERM it holds the table between rounds (closing: no round opens), lets the
round in play finish (within [table] stop_timeout_s, default 120), then stops cleanly
(availability offline, journal closed); a second SIGTERM stops it at once.

The configuration has the sections [table], [shoe], [camera] (optional; with it, [vision]
deck names the studio's deck, enrolled with livetable camera enrol), [mqtt] and
[metrics] (optional: listen = "127.0.0.1:9464" serves /metrics for Prometheus); one wrong
key stops the start with one line naming the key and the file. The MQTT API and the
configuration are documented in the mqtt-api and install guides under docs."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a table: shoe, camera, journal and the MQTT API (the daemon)",
        description=RUN_HELP,
        epilog=examples(
            "livetable run --config /etc/livetable/t1.toml",
            note="Installed as a service: systemctl enable --now livetable@t1 reads that file.",
        ),
    )
    parser.add_argument("--config", required=True, help="the table's TOML file")
    parser.set_defaults(func=run_daemon)
