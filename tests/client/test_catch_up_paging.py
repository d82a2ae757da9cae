"""The API client's catch-up (controller.client.api_client) against a table's answers as the
daemon gives them: a page answered ``rate_limited`` (the account paged past its budget of
pages) is asked again, and the catch-up goes on; any other refusal ends it with the table's
words."""

from __future__ import annotations

from typing import Any

import pytest

from controller.client.api_client import PAGE_RETRIES, EventSeries, _page_events
from controller.service.wire import response_message

EPOCH = "6f1d2c0b9a8e4f7d8c3b2a1908f7e6d5"


class Table:
    """Answers ``events`` a page of two at a time from ``last`` events, refusing the pages
    numbered in ``limited`` (counting every request) ``rate_limited``."""

    def __init__(self, last: int, limited: set[int]) -> None:
        self.last, self.limited, self.asked = last, limited, 0

    def __call__(self, command: str, _timeout: float | None, **args: Any) -> dict[str, Any]:
        assert command == "events"
        self.asked += 1
        if self.asked in self.limited:
            return response_message(
                "t", "events", False, "send it again in 0.1 s", code="rate_limited"
            )
        since = int(args["since"])
        events = [
            {"seq": seq, "type": "card_dealt", "data": {}}
            for seq in range(since + 1, min(since + 2, self.last) + 1)
        ]
        data = {"epoch": EPOCH, "events": events, "last_seq": self.last}
        data["more"] = bool(events) and events[-1]["seq"] < self.last
        return response_message("t", "events", True, "page", data=data)


def test_a_page_answered_rate_limited_is_asked_again_and_the_catch_up_goes_on() -> None:
    table = Table(last=7, limited={2, 3, 5})
    series = _page_events(table, "", EventSeries(), None, 1.0)
    assert [event["seq"] for event in series.events] == list(range(1, 8))
    assert table.asked == 4 + 3


def test_a_table_that_keeps_refusing_ends_the_catch_up_with_its_words() -> None:
    table = Table(last=7, limited=set(range(2, PAGE_RETRIES + 3)))
    with pytest.raises(RuntimeError, match="send it again"):
        _page_events(table, "", EventSeries(), None, 1.0)
