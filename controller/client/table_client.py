"""The API client of one table: :class:`ApiClient`, one account's connection to one table's
API (its retained availability and state, every event it saw, requests and their answers)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import paho.mqtt.client as mqtt

from controller.client.connection import Account, AccountConnection, logger
from controller.client.events import EventSeries, page_events


class ApiClient(AccountConnection):
    """One account's MQTT connection to one table's API."""

    def __init__(
        self,
        host: str,
        port: int,
        table_id: str,
        account: Account,
        *,
        prefix: str = "livetable",
        protocol: int = mqtt.MQTTv311,
        client_id: str | None = None,
        clean: bool = True,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        on_state: Callable[[dict[str, Any]], None] | None = None,
        tls_ca: str | None = None,
        login: tuple[str, str | None] | None = None,
        hosts: Sequence[tuple[str, int]] | None = None,
        tls: bool = False,
    ) -> None:
        """``hosts``: a cluster's nodes to move on to when the connection fails or drops
        (``host:port`` is the first tried)."""
        super().__init__(account)
        self.table_id = table_id
        self.base = f"{prefix}/{table_id}"
        self.response_topic = f"{self.base}/response/{account.name}"
        self.on_event = on_event
        self.on_state = on_state
        self.state: dict[str, Any] | None = None
        self.events: list[dict[str, Any]] = []
        self.availability: str | None = None
        self._connect(
            host,
            port,
            [
                f"{self.base}/state",
                f"{self.base}/events",
                f"{self.base}/availability",
                self.response_topic,
            ],
            client_id,
            login,
            protocol=protocol,
            clean=clean,
            tls_ca=tls_ca,
            tls=tls,
            hosts=hosts,
        )

    def _on_message(self, _client: Any, _u: Any, message: Any) -> None:
        topic = message.topic
        if topic.endswith("/availability"):
            with self._lock:
                self.availability = message.payload.decode()
                self._lock.notify_all()
            return
        try:
            body = json.loads(message.payload)
        except ValueError:
            logger.warning("not JSON on %s", topic)
            return
        if topic == f"{self.base}/state":
            with self._lock:
                # By seq within one journal; another epoch is a new journal, whose seq
                # started again at 1.
                if (
                    self.state is None
                    or body.get("epoch") != self.state.get("epoch")
                    or body["seq"] >= self.state["seq"]
                ):
                    self.state = body
                self._lock.notify_all()
            if self.on_state is not None:
                self.on_state(body)
        elif topic == f"{self.base}/events":
            with self._lock:
                self.events.append(body)
                self._lock.notify_all()
            if self.on_event is not None:
                self.on_event(body)
        elif topic.startswith(self.response_topic):
            with self._lock:
                self._book.answered(body)

    def wait_connected(self, timeout: float = 10.0) -> bool:
        return self.connected.wait(timeout)

    def send(self, command: str, transaction: str | None = None, **args: Any) -> str:
        """Publish ``command`` with ``args`` under a transaction (a new UUID unless given)
        and return the transaction, whose answer :meth:`response` waits for."""
        transaction = transaction or uuid.uuid4().hex
        topic = f"{self.base}/request/{self.account.role}/{self.account.name}/{command}"
        payload = json.dumps({"transaction": transaction, **args})
        self._book.publish(self.client, topic, payload, transaction)
        return transaction

    def send_raw(self, command: str, payload: bytes, role: str | None = None) -> None:
        role = role or self.account.role
        topic = f"{self.base}/request/{role}/{self.account.name}/{command}"
        # Noted like a request's (with no transaction to answer), so that no PUBACK of it
        # is left over for a later request that paho gives the same packet id.
        self._book.publish(self.client, topic, payload, "")

    def request(
        self,
        command: str,
        timeout: float | None = None,
        transaction: str | None = None,
        **args: Any,
    ) -> dict[str, Any]:
        """Send ``command`` and wait for its answer (see :meth:`send`, :meth:`response`).
        Sending it again with the same ``transaction`` gets the stored answer: the table
        executes a request at most once per account and transaction."""
        return self.response(self.send(command, transaction, **args), timeout)

    def catch_up(
        self,
        series: EventSeries | None = None,
        *,
        limit: int | None = None,
        timeout: float | None = None,
    ) -> EventSeries:
        """Page ``events`` after ``series.last_seq`` (a new series: from 0) until ``more``
        is false, adding each to ``series`` in order; an answer under another ``epoch``
        starts the series again from 0. Returns the series. TimeoutError as for
        :meth:`response`; RuntimeError naming the table's error if it refuses a page."""
        series = series if series is not None else EventSeries()
        return page_events(self.request, "", series, limit, timeout)

    def wait_for(
        self, predicate: Callable[[ApiClient], bool], timeout: float, what: str = "it"
    ) -> None:
        deadline = time.monotonic() + timeout
        with self._lock:
            while not predicate(self):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out waiting for {what}")
                self._lock.wait(min(left, 0.5))
