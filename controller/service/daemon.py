"""``livetable run``: one process per table, speaking MQTT to the platform and supervisors.

The daemon is the assembly (:mod:`controller.service.assembly`: journaled table, runtime, shoe
driver, camera), its outbox, an MQTT link (:mod:`controller.service.mqtt_link`: the publisher
sends every journaled event's messages in order from the outbox, whenever the broker is
there) and the request pipeline (:mod:`controller.service.request_pipeline`: requests
validated on the MQTT thread, answered or acted on on the table's thread, pages read on
threads of their own, every account within its budget).

The main thread runs the table's loop, feeds systemd's watchdog and stops cleanly on SIGTERM
(availability ``offline``, journal closed) well within 2 s.

One daemon per journal: it holds the journal's lock (:class:`~controller.service.journal.
JournalLock`) from before it opens anything, and a second one on the same journal fails at
once naming the first. A journal or outbox that cannot be written (a full disk) stops the
table: no further input is taken, the requests that wait are answered ``unavailable``,
availability goes ``offline``, and ``run`` raises the one-line error (file, SQLite's words,
free space), so the process exits non-zero; a start on a disk still full fails with the
same line.
"""

from __future__ import annotations

import argparse
import logging
import queue
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.kernel.cli_support import examples
from controller.kernel.errors import ConfigurationError, JournalError, TableError
from controller.kernel.logs import DAEMON_LOGGER, LIFECYCLE_LOGGER
from controller.mqtt.connection import broker_text
from controller.service import sd_notify
from controller.service.assembly import AssembledTable, DeviceEffects, Effects, assemble
from controller.service.config import LivetableConfig, MetricsConfig, load_config
from controller.service.journal import Journal, JournalEntry
from controller.service.journal_files import JournalLock
from controller.service.journaled_table import log_reused_journal
from controller.service.mqtt_link import MqttLink, Topics
from controller.service.outbox import open_outbox, outbox_path
from controller.service.pictures import round_pictured
from controller.service.publishing import Publications, replayed_batch
from controller.service.request_pipeline import RequestPipeline
from controller.service.runtime import RuntimeTask
from controller.service.signing import HeadSigner, load_signing_key
from controller.service.wire import dealer_message, encode
from controller.table.commands import DEALERS_REVISION
from controller.table.effects import Effect, EffectBatch, PublishEvent, TellDealer
from controller.table.events import ControllerStopping
from controller.table.state import ACTIVE_PHASES, phase_at_stake

if TYPE_CHECKING:
    from controller.service.metrics import TableMetrics

logger = logging.getLogger(DAEMON_LOGGER)


class TableDaemon(RequestPipeline):
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
            self._open_requests(epoch, camera_source is not None)
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

        assembled = assemble(
            self.config,
            handler,
            clock=self.clock,
            observe=self._replayed,
            shoe=shoe,
            camera_source=camera_source,
        )
        self.pictures.photographer = assembled.photographer  # for live pictures
        return assembled

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
