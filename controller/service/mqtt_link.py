"""The daemon's link to the broker: one MQTT connection, its publisher thread and its
subscription to requests.

Every journaled event's effects are numbered API messages in the outbox
(:mod:`controller.service.publishing`); the publisher thread sends them in order, from the
outbox, whenever the broker is there: a broker that was away gets everything it missed, and
a restarted daemon resends from the last event the broker acknowledged. The retained state
and the dealer's line follow, the availability is said (and the will says ``offline``), and
no message goes out larger than the broker takes. Requests arrive on
``.../request/<role>/<account>/<command>`` (:class:`Topics`) and are handed, acknowledged, to
the daemon's request pipeline (:mod:`controller.service.request_pipeline`); a request that
preceded a drop of the link too often is answered ``poisoned`` instead. The answers go back
on each request's :class:`Route`, and the answers of pages wait for the broker's room.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from controller.kernel.errors import JournalError
from controller.kernel.logs import DAEMON_LOGGER
from controller.mqtt.connection import (
    Subscriptions,
    broker_text,
    publish_packet_bytes,
    watch_connection,
)
from controller.service.config import MqttConfig
from controller.service.outbox import Outbox
from controller.service.publishing import Publications
from controller.service.wire import encode, response_message

logger = logging.getLogger(DAEMON_LOGGER)

# Events handed to the MQTT client and not yet acknowledged: bounds what the client holds
# in memory (it retransmits these itself after a reconnect within the process's life).
PUBLISH_WINDOW = 200
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
