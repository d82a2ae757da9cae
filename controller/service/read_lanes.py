"""The ``events`` pages (catch-ups), read and answered on a thread of their own, the platform's
first.

A page is a read of the outbox and an answer of up to a packet (64 KiB). Read on the MQTT
client's thread, a flood of them held up every request behind it (the platform's ``status``
and ``decide`` among them) and its answers filled the client's memory. Here each page waits
in the lane of its role, and the reader takes the platform's lane first, then the
supervisors', then the viewers': a viewer's page never delays a platform's by more than the
one being read. Each lane holds at most :data:`LANE_SIZE` pages; one more is answered
``unavailable`` at once (an account's own budget, :class:`~controller.service.request_limits.
ReadLimits`, keeps one flood from filling a lane). How many answers may be on their way to
the broker at once is the answerer's business (see ``RequestPipeline._respond_read``).
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from typing import Final, Generic, TypeVar

from controller.service.mqtt_api import ROLES, Request

logger = logging.getLogger(__name__)

# Pages waiting in one role's lane beyond this are answered "unavailable" at once.
LANE_SIZE: Final = 64
# How long a stop waits for the page being read.
STOP_WAIT_S: Final = 2.0

Route = TypeVar("Route")


class ReadLanes(Generic[Route]):
    """Serves queued ``(request, route)`` pages with ``serve`` on one thread, lane by lane in
    the order of :data:`~controller.service.mqtt_api.ROLES` (platform first); ``serve``
    answers the page and never raises (a bug is logged and the next page served)."""

    def __init__(self, serve: Callable[[Request, Route], None], name: str = "read-lanes") -> None:
        self._serve = serve
        self._name = name
        self._lanes: dict[str, collections.deque[tuple[Request, Route]]] = {
            role: collections.deque() for role in ROLES
        }
        self._changed = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Finish the page being read and stop; pages still waiting get no answer (as any
        request to a table that stops)."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(STOP_WAIT_S)
            self._thread = None

    def submit(self, request: Request, route: Route) -> bool:
        """Queue a page in its role's lane; False if that lane is full (answer it
        ``unavailable``)."""
        with self._changed:
            lane = self._lanes[request.role]
            if len(lane) >= LANE_SIZE:
                return False
            lane.append((request, route))
            self._changed.notify()
        return True

    def waiting(self) -> int:
        with self._changed:
            return sum(len(lane) for lane in self._lanes.values())

    def _next(self) -> tuple[Request, Route] | None:
        with self._changed:
            while not self._stopping:
                for lane in self._lanes.values():  # in ROLES' order: the platform's first
                    if lane:
                        return lane.popleft()
                self._changed.wait()
        return None

    def _run(self) -> None:
        while (page := self._next()) is not None:
            try:
                self._serve(*page)
            except Exception:  # a bug must not stop the reader: the next page is served
                logger.exception("an %s request could not be answered", page[0].command)
