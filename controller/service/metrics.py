"""The table's metrics for Prometheus: ``/metrics`` of one ``livetable run``.

Off unless the table's file has ``[metrics] listen = "127.0.0.1:9464"``
(:class:`~controller.service.config.MetricsConfig`). Every figure is read off what the daemon
already does, never kept beside it: the counts come from the effects of each journal row as
the daemon publishes them (:meth:`TableMetrics.published`: ``round_settled``,
``round_voided``, ``table_paused``, ``card_dealt`` and the state the row left), the pause and
the shoe from the published state, the broker's link and the journal's disk are looked at when
Prometheus scrapes. Counters start at zero with the process: the rows replayed at start were
counted by the process that took them.

Each daemon has a registry of its own (not ``prometheus_client``'s global one), so that one
process (the tests, the demo) can hold several tables.

=========================================  ======================================================
``livetable_rounds_total``                 rounds ended, by ``game`` and ``outcome``
                                           (``settled``, ``voided``)
``livetable_pauses_total``                 pauses, by ``reason`` (each ``table_paused``)
``livetable_paused``                       1 while the table is paused
``livetable_pause_seconds_total``          time paused, by the reason the table shows
``livetable_cards_total``                  cards dealt, by ``source`` (:data:`CARD_SOURCES`)
``livetable_shoe_online``                  1 while the shoe's port is open and it talks
``livetable_mqtt_connected``               1 while the daemon is connected to its broker
``livetable_journal_free_bytes``           bytes free for the daemon on the journal's disk
``livetable_journal_size_bytes``           size of the journal's disk
``livetable_card_delivery_seconds``        a card's way from its journal row to the broker's
                                           acknowledgement of its ``card_dealt`` (histogram)
=========================================  ======================================================

Every series carries ``table`` (the table's id).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from socketserver import ThreadingMixIn
from typing import Any, Final
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from controller.kernel.errors import ConfigurationError
from controller.service.config import MetricsConfig
from controller.table.effects import EffectBatch, EventRejected, PublishEvent, PublishState
from controller.table.state import PauseReason

logger = logging.getLogger(__name__)

# Where a dealt card's face came from: ``card_dealt``'s ``source`` (docs/mqtt-api.md; the
# schema's enum in docs/asyncapi.yaml, which a test holds this to). Each starts at zero, so
# that a rate over a source never seen yet is 0, not missing.
CARD_SOURCES: Final = ("shoe", "camera", "supervisor", "unread")
ROUND_OUTCOMES: Final = {"round_settled": "settled", "round_voided": "voided"}
# A card's way out is milliseconds on a healthy studio network; a broker that was away makes
# it seconds to minutes (the card waits in the outbox), which the top buckets keep apart.
DELIVERY_BUCKETS_S: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
# How often the server looks whether it is to stop: bounds what serving adds to the daemon's
# stop (SIGTERM to exit within 2 s).
SERVER_POLL_S: Final = 0.05
# Cards waiting for the broker's acknowledgement whose journal time is kept: a broker away
# for hours must not grow it without bound (the oldest are forgotten, not measured).
PENDING_CARDS_MAX: Final = 10_000
# Every metric's name as exposed (counters with their _total): the docs and the shipped
# alert rules are held to it by the tests.
METRIC_NAMES: Final = (
    "livetable_rounds_total",
    "livetable_pauses_total",
    "livetable_paused",
    "livetable_pause_seconds_total",
    "livetable_cards_total",
    "livetable_shoe_online",
    "livetable_mqtt_connected",
    "livetable_journal_free_bytes",
    "livetable_journal_size_bytes",
    "livetable_card_delivery_seconds",
)


class TableMetrics:
    """One table's metrics, in a registry of its own.

    :meth:`started` reads the replayed state; :meth:`published` takes each live journal row's
    effects, on the table's thread, given the ``seq`` of the last event published before it;
    :meth:`acknowledged` is told, on the MQTT thread, each event the broker acknowledged.
    ``connected`` says whether the broker link is up (asked at each scrape)."""

    def __init__(
        self,
        table_id: str,
        game: str,
        journal_path: Path,
        connected: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.table_id = table_id
        self.game = game
        self.journal_dir = Path(journal_path).resolve().parent
        self.connected = connected
        self.clock = clock
        self.registry = CollectorRegistry()
        table = ("table",)
        self.rounds = Counter(
            "livetable_rounds",
            "Rounds ended since the daemon started, by game and outcome (settled or voided).",
            (*table, "game", "outcome"),
            registry=self.registry,
        )
        self.pauses = Counter(
            "livetable_pauses",
            "Pauses since the daemon started, by reason (each table_paused event).",
            (*table, "reason"),
            registry=self.registry,
        )
        self.cards = Counter(
            "livetable_cards",
            "Cards dealt since the daemon started, by where their face came from "
            "(card_dealt's source).",
            (*table, "source"),
            registry=self.registry,
        )
        self.shoe_online = Gauge(
            "livetable_shoe_online",
            "1 while the table's shoe is online (its port open and talking), else 0.",
            table,
            registry=self.registry,
        )
        self.delivery = Histogram(
            "livetable_card_delivery_seconds",
            "Seconds from a card's journal row to the broker's acknowledgement of its "
            "card_dealt event.",
            table,
            buckets=DELIVERY_BUCKETS_S,
            registry=self.registry,
        )
        for outcome in ROUND_OUTCOMES.values():
            self.rounds.labels(table_id, game, outcome)
        for reason in PauseReason:
            self.pauses.labels(table_id, reason.value)
        for source in CARD_SOURCES:
            self.cards.labels(table_id, source)
        self.delivery.labels(table_id)
        self._lock = threading.Lock()
        self._paused_reason: str | None = None
        self._paused_at = 0.0
        self._paused_s: dict[str, float] = dict.fromkeys((r.value for r in PauseReason), 0.0)
        self._pending: OrderedDict[int, float] = OrderedDict()  # event seq -> journal time
        # The last row's events as expect() numbered them: (last seq, its cards' seqs).
        self._expected: tuple[int, tuple[int, ...]] | None = None
        self._misnumbered = False
        self.registry.register(_Scraped(self))
        self._server: Any = None
        self._thread: threading.Thread | None = None

    # -- what the daemon tells it -------------------------------------------------------------

    def started(self, state: dict[str, Any] | None) -> None:
        """The replayed table's state message (None: a journal with no state yet)."""
        if state is not None:
            self._state(state)

    def published(self, batch: EffectBatch, state: dict[str, Any] | None, last_seq: int) -> None:
        """One live journal row's effects as published; ``state``, the state message after
        it, and ``last_seq``, the seq of the last event published then."""
        expected, self._expected = self._expected, None
        if batch.journal_seq is None:
            return  # refused before the journal: it published nothing
        if expected is not None and expected[0] != last_seq:
            # The row's events were numbered otherwise than :meth:`expect` did: its cards'
            # seqs would time other events. Not measured, said once.
            with self._lock:
                for seq in expected[1]:
                    self._pending.pop(seq, None)
            if not self._misnumbered:
                self._misnumbered = True
                logger.warning(
                    "card delivery times not measured: a row's events end at %d, not %d",
                    last_seq,
                    expected[0],
                )
        for effect in batch.effects:
            if isinstance(effect, PublishEvent):
                self._event(effect)
            elif isinstance(effect, PublishState) and state is not None:
                self._state(state)

    def expect(self, batch: EffectBatch, last_seq: int, took: float) -> None:
        """Before the row's messages are sent: the ``seq`` of each of its cards, with the
        time its row was journaled (an acknowledgement may come back before
        :meth:`published` is called)."""
        if batch.journal_seq is None:
            return
        seq = last_seq
        cards = []
        with self._lock:
            # As Publications.record numbers a journaled row's events: each published event
            # and each refusal, in order, the next seq (checked in :meth:`published`).
            for effect in batch.effects:
                if isinstance(effect, PublishEvent | EventRejected):
                    seq += 1
                    if isinstance(effect, PublishEvent) and effect.name == "card_dealt":
                        self._pending[seq] = took
                        cards.append(seq)
            while len(self._pending) > PENDING_CARDS_MAX:
                self._pending.popitem(last=False)
        self._expected = (seq, tuple(cards))

    def acknowledged(self, seq: int) -> None:
        """The broker acknowledged event ``seq`` (the MQTT thread)."""
        with self._lock:
            took = self._pending.pop(seq, None)
        if took is not None:
            self.delivery.labels(self.table_id).observe(max(0.0, self.clock() - took))

    def _event(self, effect: PublishEvent) -> None:
        name, data = effect.name, effect.payload
        if name in ROUND_OUTCOMES:
            self.rounds.labels(self.table_id, self.game, ROUND_OUTCOMES[name]).inc()
        elif name == "table_paused":
            self.pauses.labels(self.table_id, str(data.get("reason"))).inc()
        elif name == "card_dealt":
            self.cards.labels(self.table_id, str(data.get("source"))).inc()

    def _state(self, state: dict[str, Any]) -> None:
        devices = state.get("devices") or {}
        self.shoe_online.labels(self.table_id).set(1 if devices.get("shoe_online") else 0)
        pause = state.get("pause")
        reason = None if pause is None else str(pause.get("reason"))
        with self._lock:
            if reason == self._paused_reason:
                return
            now = self.clock()
            self._close_pause(now)
            self._paused_reason, self._paused_at = reason, now

    def _close_pause(self, now: float) -> None:
        if self._paused_reason is not None:
            spent = max(0.0, now - self._paused_at)
            self._paused_s[self._paused_reason] = self._paused_s.get(self._paused_reason, 0) + spent
            self._paused_at = now

    def pause_seconds(self) -> tuple[bool, dict[str, float]]:
        """Whether the table is paused, and the seconds paused so far by reason (the pause
        in effect counted up to now)."""
        with self._lock:
            self._close_pause(self.clock())
            return self._paused_reason is not None, dict(self._paused_s)

    # -- serving ------------------------------------------------------------------------------

    def serve(self, config: MetricsConfig) -> None:
        """Serve ``/metrics`` on ``config.listen``; ConfigurationError in one line when the
        address cannot be listened on (taken, or not this machine's)."""
        host, port = config.host, config.port
        try:
            family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
            server_class = type("MetricsServer", (_MetricsServer,), {"address_family": family})
            self._server = make_server(
                host, port, make_wsgi_app(self.registry), server_class, _QuietHandler
            )
        except OSError as error:
            raise ConfigurationError(
                f"[metrics] listen {config.listen}: cannot listen there: "
                f"{error.strerror or error}"
            ) from None
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": SERVER_POLL_S},
            name="metrics-http",
            daemon=True,
        )
        self._thread.start()
        logger.info("metrics for Prometheus on http://%s/metrics", config.listen)

    def close(self) -> None:
        """Stop serving (no-op when not serving)."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(2.0)


class _MetricsServer(ThreadingMixIn, WSGIServer):
    """A thread per scrape, so that a slow client holds up no other; none holds the
    daemon's stop."""

    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Not a line on stderr per scrape (one every few seconds, for ever)."""


class _Scraped:
    """What is looked at when Prometheus scrapes: the pause, the broker link, the disk."""

    def __init__(self, metrics: TableMetrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Metric]:
        return list(self._families(live=False))

    def collect(self) -> Iterator[Metric]:
        return self._families(live=True)

    def _families(self, live: bool) -> Iterator[Metric]:
        metrics = self.metrics
        table = metrics.table_id
        paused_now, spent = metrics.pause_seconds() if live else (False, {})
        paused = GaugeMetricFamily(
            "livetable_paused", "1 while the table is paused, else 0.", labels=("table",)
        )
        seconds = CounterMetricFamily(
            "livetable_pause_seconds",
            "Seconds the table was paused since the daemon started, by the reason it showed "
            "(the latest pause in effect).",
            labels=("table", "reason"),
        )
        connected = GaugeMetricFamily(
            "livetable_mqtt_connected",
            "1 while the daemon is connected to its MQTT broker, else 0.",
            labels=("table",),
        )
        free = GaugeMetricFamily(
            "livetable_journal_free_bytes",
            "Bytes the daemon may still write on the filesystem holding its journal.",
            labels=("table",),
        )
        size = GaugeMetricFamily(
            "livetable_journal_size_bytes",
            "Size in bytes of the filesystem holding the table's journal.",
            labels=("table",),
        )
        if live:
            paused.add_metric([table], 1 if paused_now else 0)
            for reason, value in sorted(spent.items()):
                seconds.add_metric([table, reason], value)
            connected.add_metric([table], 1 if metrics.connected() else 0)
            try:
                disk = os.statvfs(metrics.journal_dir)
            except OSError as error:
                logger.warning("the journal's disk cannot be measured: %s", error)
            else:
                free.add_metric([table], disk.f_bavail * disk.f_frsize)
                size.add_metric([table], disk.f_blocks * disk.f_frsize)
        yield from (paused, seconds, connected, free, size)
