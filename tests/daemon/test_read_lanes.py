"""The events pages' reader (controller.service.read_lanes): the platform's pages first, then
the supervisors', then the viewers'; a full lane refuses more; a page that fails to be
served does not stop the reader."""

from __future__ import annotations

import threading

from controller.service.mqtt_api import Request
from controller.service.read_lanes import LANE_SIZE, ReadLanes
from tests.support.wait import wait_until


def page(role: str, transaction: str) -> Request:
    return Request(role, f"{role}-account", "events", transaction, {"since": 0})


def test_the_platforms_page_is_read_before_the_viewers_that_wait() -> None:
    served: list[str] = []
    reading = threading.Event()
    go_on = threading.Event()

    def serve(request: Request, _route: str) -> None:
        reading.set()
        go_on.wait(10)
        served.append(request.transaction)

    lanes: ReadLanes[str] = ReadLanes(serve)
    lanes.start()
    try:
        assert lanes.submit(page("viewer", "v-0"), "route")
        assert reading.wait(10)  # v-0 is being read: the others wait
        for number in range(1, 4):
            assert lanes.submit(page("viewer", f"v-{number}"), "route")
        assert lanes.submit(page("supervisor", "s-1"), "route")
        assert lanes.submit(page("platform", "p-1"), "route")
        go_on.set()
        wait_until(lambda: len(served) == 6, 10, "every page served")
        assert served == ["v-0", "p-1", "s-1", "v-1", "v-2", "v-3"]
    finally:
        go_on.set()
        lanes.stop()


def test_a_full_lane_refuses_more_and_the_others_still_take() -> None:
    go_on = threading.Event()
    lanes: ReadLanes[str] = ReadLanes(lambda _request, _route: go_on.wait(10))
    lanes.start()
    try:
        assert lanes.submit(page("viewer", "first"), "route")
        wait_until(lambda: lanes.waiting() == 0, 10, "the first page being read")
        for number in range(LANE_SIZE):
            assert lanes.submit(page("viewer", f"v-{number}"), "route")
        assert not lanes.submit(page("viewer", "one-too-many"), "route")
        assert lanes.submit(page("platform", "p-1"), "route")
    finally:
        go_on.set()
        lanes.stop()


def test_a_page_that_fails_is_logged_and_the_next_is_served() -> None:
    served: list[str] = []

    def serve(request: Request, _route: str) -> None:
        if request.transaction == "bad":
            raise RuntimeError("a bug")
        served.append(request.transaction)

    lanes: ReadLanes[str] = ReadLanes(serve)
    lanes.start()
    try:
        assert lanes.submit(page("viewer", "bad"), "route")
        assert lanes.submit(page("viewer", "good"), "route")
        wait_until(lambda: served == ["good"], 10, "the page after the failed one")
    finally:
        lanes.stop()
