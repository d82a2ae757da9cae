"""The API client of a studio: :class:`StudioClient`, one account's connection to every table
it may read, each table's feed (:class:`TableFeed`) kept whole and in order."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt

from controller.client.connection import Account, AccountConnection, BrokerRefused, logger
from controller.client.events import EventSeries, page_events

# A StudioClient's catch-up waits no longer for a page: one table that does not answer must
# not hold up the others' (the worker is one thread).
CATCH_UP_TIMEOUT_S = 5.0
# ... and asks again this long after a page that went unanswered.
CATCH_UP_RETRY_S = 2.0


@dataclass
class TableFeed:
    """What one account knows of one table: the latest of its retained topics and its
    events in ``seq`` order (the last ``keep`` of them), without a repeat or a gap."""

    table_id: str
    availability: str | None = None
    """``online``, ``offline``, or None before the table's availability was seen."""
    state: dict[str, Any] | None = None
    dealer: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    last_seq: int = 0
    epoch: str | None = None
    last_message_at: float | None = None
    """``time.time()`` when the last message of this table came (any of its topics)."""
    complete_since: int = 0
    """Every event after this ``seq`` is in :attr:`events` (older ones were not fetched,
    or were let go beyond ``keep``)."""
    ready: bool = False
    """The first catch-up is done: events arriving now are applied at once."""


@dataclass(frozen=True)
class TableUpdate:
    """Something a table said: ``kind`` is ``availability`` (``body`` is its text),
    ``state``, ``event``, ``dealer`` or ``epoch`` (the table's events start again under
    another journal: ``body`` is the new epoch)."""

    table_id: str
    kind: str
    body: Any


# The table id under which the role probe publishes: no daemon reads it, and every ACL
# pattern of a role (``<prefix>/+/request/<role>/<account>/#``) covers it.
PROBE_TABLE = "_probe"


class StudioClient(AccountConnection):
    """One account's MQTT connection to every table it may read: each table's availability,
    state, dealer line and events (:class:`TableFeed`), and requests to any of them.

    A table's events are applied in ``seq`` order: on first sight of a table its last
    ``backfill`` events are fetched (``events`` from its state's ``seq`` less ``backfill``),
    and an event that shows a gap, or a state ahead of the events seen (after a reconnect of
    this client), has the missing ones fetched; both on a worker thread, because an answer
    comes through the same network thread that would be waiting for it. Events that arrive
    meanwhile are held and applied after. ``on_update`` is called with every
    :class:`TableUpdate` as it is applied, from the network or the worker thread;
    ``on_link`` with (True, "") when the connection is up and (False, why) when it drops.
    """

    def __init__(
        self,
        host: str,
        port: int,
        account: Account,
        *,
        prefix: str = "livetable",
        protocol: int = mqtt.MQTTv311,
        tls_ca: str | None = None,
        client_id: str | None = None,
        on_update: Callable[[TableUpdate], None] | None = None,
        on_link: Callable[[bool, str], None] | None = None,
        backfill: int = 1500,
        keep: int = 5000,
        reconnect_delay_s: tuple[int, int] | None = (1, 5),
        login: tuple[str, str | None] | None = None,
        hosts: Sequence[tuple[str, int]] | None = None,
        tls: bool = False,
        read_events: bool = True,
    ) -> None:
        super().__init__(account)
        # False for an account that may not read events (a dealer station's): its feeds
        # hold availability, state and the dealer's line, and no catch-up is ever asked.
        self.read_events = read_events
        self.prefix = prefix
        self.protocol = protocol
        self.on_update = on_update
        self.on_link = on_link
        self.backfill = backfill
        self.keep = keep
        self._feeds: dict[str, TableFeed] = {}
        self._held: dict[str, dict[int, dict[str, Any]]] = {}
        self._wanted: list[str] = []
        self._closing = False
        self.link_up = False
        self.link_why = "connecting"
        self._worker = threading.Thread(
            target=self._catch_up_loop, name=f"catch-up-{account.name}", daemon=True
        )
        self._worker.start()
        every = f"{prefix}/+"
        self._connect(
            host,
            port,
            [
                f"{every}/availability",
                f"{every}/state",
                *([f"{every}/events"] if read_events else []),
                f"{every}/dealer",
                f"{every}/response/{account.name}",
            ],
            client_id,
            login,
            on_disconnect=self._on_disconnect,
            protocol=protocol,
            tls_ca=tls_ca,
            tls=tls,
            reconnect_delay_s=reconnect_delay_s,
            hosts=hosts,
        )

    # -- the connection ---------------------------------------------------------------------

    def _on_disconnect(self, _c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        if not self._closing:
            self._link(False, f"the broker connection dropped: {reason}")

    def _link(self, up: bool, why: str) -> None:
        """Note the connection's state and tell ``on_link`` when it changes."""
        with self._lock:
            if (self.link_up, self.link_why) == (up, why):
                return
            self.link_up, self.link_why = up, why
            self._lock.notify_all()
        if self.on_link is not None:
            self.on_link(up, why)

    def wait_connected(self, timeout: float = 10.0) -> bool:
        """True once connected and subscribed; False on a refusal or after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not self.subscribed.is_set() and self.refused is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.1))
        return self.refused is None

    # -- what the tables say ----------------------------------------------------------------

    def _table_of(self, topic: str) -> tuple[str, str] | None:
        parts = topic.split("/")
        if len(parts) < 3 or parts[0] != self.prefix:
            return None
        return parts[1], parts[2]

    def _on_message(self, _client: Any, _u: Any, message: Any) -> None:
        where = self._table_of(message.topic)
        if where is None:
            return
        table_id, channel = where
        if channel == "response":
            try:
                body = json.loads(message.payload)
            except ValueError:
                logger.warning("not JSON on %s", message.topic)
                return
            with self._lock:
                self._book.answered(body)
            return
        if channel == "availability":
            self._availability(table_id, message.payload.decode(errors="replace"))
            return
        try:
            body = json.loads(message.payload)
        except ValueError:
            logger.warning("not JSON on %s", message.topic)
            return
        if not isinstance(body, dict):
            return
        if channel == "state":
            self._state(table_id, body)
        elif channel == "events":
            self._event(table_id, body)
        elif channel == "dealer":
            with self._lock:
                feed = self._feed(table_id)
                feed.dealer = body
            self._tell(TableUpdate(table_id, "dealer", body))

    def _feed(self, table_id: str) -> TableFeed:
        """Called holding the lock: the table's feed, made (and its first catch-up asked
        for) on first sight."""
        feed = self._feeds.get(table_id)
        if feed is None:
            feed = self._feeds[table_id] = TableFeed(table_id)
            self._want(table_id)
        feed.last_message_at = time.time()
        return feed

    def _want(self, table_id: str) -> None:
        if not self.read_events:
            return
        if table_id not in self._wanted:
            self._wanted.append(table_id)
            self._lock.notify_all()

    def _tell(self, update: TableUpdate) -> None:
        if self.on_update is not None:
            try:
                self.on_update(update)
            except Exception:  # a consumer's bug must not stop the feed
                logger.exception("on_update failed for %s %s", update.table_id, update.kind)

    def _availability(self, table_id: str, text: str) -> None:
        with self._lock:
            feed = self._feed(table_id)
            came_back = text == "online" and feed.availability != "online"
            feed.availability = text
            if came_back and (not feed.ready or self._held.get(table_id)):
                self._want(table_id)  # a catch-up that timed out while it was away
        self._tell(TableUpdate(table_id, "availability", text))

    def _state(self, table_id: str, body: dict[str, Any]) -> None:
        renewed = False
        with self._lock:
            feed = self._feed(table_id)
            last = feed.state
            epoch = body.get("epoch")
            if last is not None and epoch == last.get("epoch") and body["seq"] < last["seq"]:
                return  # an older state than the one held (states go by latest value)
            feed.state = body
            self._lock.notify_all()  # the worker may be waiting for a first state
            if feed.ready and epoch is not None and epoch != feed.epoch:
                # Another journal: its events start again at 1.
                self._restart(feed, epoch)
                renewed = True
            elif feed.ready and int(body.get("seq", 0)) > feed.last_seq:
                self._want(table_id)  # events this client missed (while it was away)
        if renewed:
            self._tell(TableUpdate(table_id, "epoch", body.get("epoch")))
        self._tell(TableUpdate(table_id, "state", body))

    def _restart(self, feed: TableFeed, epoch: str | None) -> None:
        feed.epoch, feed.events, feed.last_seq, feed.complete_since = epoch, [], 0, 0
        feed.ready = False
        self._held.pop(feed.table_id, None)
        self._want(feed.table_id)

    def _event(self, table_id: str, body: dict[str, Any]) -> None:
        applied: list[dict[str, Any]] = []
        with self._lock:
            feed = self._feed(table_id)
            seq = body.get("seq")
            if not isinstance(seq, int):
                return
            if not feed.ready or table_id in self._wanted or self._held.get(table_id):
                # A catch-up is to come or under way: applied after it.
                self._held.setdefault(table_id, {})[seq] = body
                self._want(table_id)
                return
            if seq <= feed.last_seq:
                return  # a repeat (QoS 1)
            if seq > feed.last_seq + 1:
                self._held.setdefault(table_id, {})[seq] = body
                self._want(table_id)
                return
            self._apply(feed, body)
            applied.append(body)
        for event in applied:
            self._tell(TableUpdate(table_id, "event", event))

    def _apply(self, feed: TableFeed, event: dict[str, Any]) -> None:
        """Called holding the lock: ``event`` is the next of ``feed``'s series."""
        feed.events.append(event)
        feed.last_seq = int(event["seq"])
        if len(feed.events) > self.keep:
            dropped = len(feed.events) - self.keep
            feed.complete_since = int(feed.events[dropped - 1]["seq"])
            del feed.events[:dropped]

    # -- catching up (the worker thread) ----------------------------------------------------

    def _catch_up_loop(self) -> None:
        while True:
            with self._lock:
                while not self._wanted and not self._closing:
                    self._lock.wait()
                if self._closing:
                    return
                table_id = self._wanted.pop(0)
            try:
                self._catch_up_table(table_id)
            except (TimeoutError, BrokerRefused, RuntimeError) as error:
                # The table did not answer or refused; what is held stays held. Asked again
                # when it comes back online, and after a while if it still says online.
                logger.info("catching up %s: %s", table_id, error)
                self._retry_later(table_id)
            except Exception:
                logger.exception("catching up %s failed", table_id)

    def _retry_later(self, table_id: str) -> None:
        def again() -> None:
            with self._lock:
                feed = self._feeds.get(table_id)
                if not self._closing and feed is not None and feed.availability == "online":
                    self._want(table_id)

        timer = threading.Timer(CATCH_UP_RETRY_S, again)
        timer.daemon = True
        timer.start()

    def _catch_up_table(self, table_id: str) -> None:
        with self._lock:
            feed = self._feeds[table_id]
            was_ready, epoch = feed.ready, feed.epoch
            if was_ready:
                series = EventSeries(epoch=feed.epoch, last_seq=feed.last_seq)
            elif feed.state is not None:
                # First sight: the last ``backfill`` events only (a long journal holds more
                # than anyone watching needs).
                since = max(0, int(feed.state.get("seq", 0)) - self.backfill)
                series = EventSeries(epoch=feed.state.get("epoch"), last_seq=since)
            else:
                # Its retained state follows its availability: wait for it, rather than
                # fetch a whole journal from 0.
                self._lock.wait_for(lambda: feed.state is not None or self._closing, 2.0)
                if feed.state is not None or self._closing:
                    self._want(table_id)
                    return
                if feed.availability != "online":
                    return  # no state and no daemon: asked again when it comes online
                series = EventSeries()
            if feed.availability == "offline":
                return  # nobody to answer: asked again when it is back online
        since = series.last_seq
        self._page(table_id, series)
        applied: list[dict[str, Any]] = []
        renewed = False
        with self._lock:
            feed = self._feeds[table_id]
            if feed.ready != was_ready or feed.epoch != epoch:
                return  # restarted meanwhile (another journal): that catch-up is queued
            first = int(series.events[0]["seq"]) - 1 if series.events else series.last_seq
            if not was_ready or series.epoch != feed.epoch:
                # The series begins here (first sight, or the table's journal was replaced
                # before its state said so).
                renewed = was_ready
                feed.epoch, feed.events, feed.last_seq = series.epoch, [], first
                feed.complete_since = first if first == since else 0
            for event in series.events:
                if int(event["seq"]) == feed.last_seq + 1:
                    self._apply(feed, event)
                    applied.append(event)
            feed.ready = True
            held = self._held.pop(table_id, {})
            for seq in sorted(held):
                if seq <= feed.last_seq:
                    continue  # a repeat, or in the page already
                if seq > feed.last_seq + 1:
                    # Still a gap (published while the page was read): once more.
                    self._held[table_id] = {s: e for s, e in held.items() if s > feed.last_seq}
                    self._want(table_id)
                    break
                self._apply(feed, held[seq])
                applied.append(held[seq])
            self._lock.notify_all()
        if renewed:
            self._tell(TableUpdate(table_id, "epoch", series.epoch))
        for event in applied:
            self._tell(TableUpdate(table_id, "event", event))

    def _page(self, table_id: str, series: EventSeries) -> EventSeries:
        def ask(command: str, timeout: float | None, **args: Any) -> dict[str, Any]:
            return self.request(table_id, command, timeout, **args)

        return page_events(ask, f"{table_id}: ", series, None, CATCH_UP_TIMEOUT_S)

    # -- reading ----------------------------------------------------------------------------

    def feeds(self) -> dict[str, TableFeed]:
        """A copy of every table's feed, by table id."""
        with self._lock:
            return {table_id: _copy(feed) for table_id, feed in self._feeds.items()}

    def feed(self, table_id: str) -> TableFeed | None:
        with self._lock:
            feed = self._feeds.get(table_id)
            return None if feed is None else _copy(feed)

    def wait_for(
        self, predicate: Callable[[StudioClient], bool], timeout: float, what: str = "it"
    ) -> None:
        """Wait until ``predicate(self)`` holds (it may call :meth:`feed`)."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"timed out waiting for {what}")
            with self._lock:
                self._lock.wait(min(left, 0.1))

    # -- requests ---------------------------------------------------------------------------

    def send(
        self,
        table_id: str,
        command: str,
        transaction: str | None = None,
        *,
        role: str | None = None,
        **args: Any,
    ) -> str:
        """Publish ``command`` to ``table_id`` under a transaction (a new UUID unless given)
        and return the transaction, whose answer :meth:`response` waits for."""
        transaction = transaction or uuid.uuid4().hex
        role = role or self.account.role
        topic = f"{self.prefix}/{table_id}/request/{role}/{self.account.name}/{command}"
        payload = json.dumps({"transaction": transaction, **args})
        self._book.publish(self.client, topic, payload, transaction)
        return transaction

    def request(
        self,
        table_id: str,
        command: str,
        timeout: float | None = None,
        transaction: str | None = None,
        **args: Any,
    ) -> dict[str, Any]:
        """Send ``command`` to ``table_id`` and wait for its answer (as
        :meth:`ApiClient.request`: the same transaction again gets the stored answer)."""
        return self.response(self.send(table_id, command, transaction, **args), timeout)

    def catch_up(
        self,
        table_id: str,
        series: EventSeries | None = None,
        *,
        limit: int | None = None,
        timeout: float | None = None,
    ) -> EventSeries:
        """Page ``table_id``'s events after ``series.last_seq`` (as
        :meth:`ApiClient.catch_up`), apart from its feed: for a round's history or a shoe's
        cards older than the feed holds."""

        def ask(command: str, wait: float | None, **args: Any) -> dict[str, Any]:
            return self.request(table_id, command, wait, **args)

        return page_events(
            ask, f"{table_id}: ", series if series is not None else EventSeries(), limit, timeout
        )

    def probe_role(self, timeout: float = 3.0) -> str | None:
        """The role the broker lets this account send requests under: ``supervisor``,
        ``viewer``, ``dealer`` or None. MQTT 5: from the broker's PUBACK of a ``status``
        request to :data:`PROBE_TABLE` (read by no daemon); MQTT 3.1.1, whose broker drops
        what its ACL refuses without a word: from an online table's answer to ``status``
        (which a dealer's account may not ask: under 3.1.1 it is never told apart)."""
        for role in ("supervisor", "viewer", "dealer"):
            if self.protocol == mqtt.MQTTv5:
                transaction = self.send(PROBE_TABLE, "status", role=role)
                if self._book.passed(transaction, timeout):
                    return role
                continue
            if role == "dealer":
                break
            online = [t for t, f in self.feeds().items() if f.availability == "online"]
            if not online:
                return None
            try:
                self.response(self.send(online[0], "status", role=role), timeout)
            except (TimeoutError, BrokerRefused):
                continue
            return role
        return None

    def close(self) -> None:
        with self._lock:
            self._closing = True
            self._lock.notify_all()
        super().close()  # a catch-up waiting for a page stops waiting
        self._worker.join(timeout=5)


def _copy(feed: TableFeed) -> TableFeed:
    """A copy a reader may keep: its own list of events, the messages shared (never changed
    once received)."""
    return dataclasses.replace(feed, events=list(feed.events))
