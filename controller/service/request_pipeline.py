"""The daemon's request pipeline: how a request on the MQTT API is validated, answered, and
how a table command reaches the table.

Requests arrive from the link (:mod:`controller.service.mqtt_link`) on the MQTT thread and
are validated there (:mod:`controller.service.mqtt_api`). ``status`` is answered on that
thread; ``events`` pages on a thread of their own, the platform's first
(:mod:`controller.service.read_lanes`), and ``audit`` (every supervisor command journaled,
with its answer) on another, from the journal read-only (:mod:`controller.service.audit`).
Those that act on the table run on the table's thread (a
:class:`~controller.service.runtime.RuntimeTask`), so that they see and change the state
without a race; every answer is kept, so a repeated request is answered again and executed
once, across restarts too. Table commands, and ``events`` and ``audit`` pages, are counted
per account (:mod:`controller.service.request_limits`): a flood is answered ``rate_limited``
and costs the journal nothing, and the answers of pages wait for the broker beyond 1 MiB
unacknowledged. A table that stopped (its journal cannot be written) answers ``unavailable``.

:class:`RequestPipeline` is the request half of
:class:`~controller.service.daemon.TableDaemon`, which owns the table, its outbox and its
link, and starts and stops the readers.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from controller.kernel.errors import JournalError
from controller.kernel.logs import DAEMON_LOGGER
from controller.service.assembly import AssembledTable
from controller.service.audit import AuditReader
from controller.service.config import LivetableConfig
from controller.service.mqtt_api import (
    EVENTS_PAGE_MAX,
    TABLE_COMMANDS,
    Request,
    RequestError,
    parse_request,
    table_event,
)
from controller.service.mqtt_link import MqttLink, Route, Topics
from controller.service.outbox import Outbox
from controller.service.pictures import PictureReader, picture_store
from controller.service.publishing import Publications, command_key, decision_key
from controller.service.read_lanes import ReadLanes
from controller.service.request_limits import CommandLimits, ReadLimits
from controller.service.runtime import RuntimeTask
from controller.service.wire import encode, response_message
from controller.table.commands import held_text
from controller.table.effects import CommandAnswered, EffectBatch, PublishEvent

logger = logging.getLogger(DAEMON_LOGGER)

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


class RequestPipeline:
    """The requests of a daemon: their routes, budgets and readers, and their handling."""

    # The daemon's own, which it sets before the first request (see TableDaemon._open).
    config: LivetableConfig
    clock: Callable[[], float]
    topics: Topics
    outbox: Outbox
    publications: Publications
    assembled: AssembledTable
    link: MqttLink

    if TYPE_CHECKING:

        @property
        def runtime(self) -> Any: ...

    def _open_requests(self, epoch: int, camera: bool = False) -> None:
        """The routes of the commands on their way, the accounts' budgets and the readers
        (not started: :meth:`TableDaemon.run` starts them). ``camera``: a camera source is
        handed in (the demo's), which the configuration does not name."""
        self._routes: dict[str, Route] = {}
        self.limits = CommandLimits()
        self.read_limits = ReadLimits()
        # Answers on the link, which is made last (it needs the replayed table).
        self.audits: AuditReader[Route] = AuditReader(
            self.config.table.journal_path,
            self.outbox,
            epoch,
            lambda route: self.link.answer_room(route),
            self._respond_read,
        )
        self.pages: ReadLanes[Route] = ReadLanes(self._serve_page, "events-reader")
        self.pictures = PictureReader(
            self.config.table.journal_path,
            picture_store(self.config, camera),
            lambda route: self.link.answer_room(route),
            self._respond_read,
        )
        self._reads_stopping = threading.Event()

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
