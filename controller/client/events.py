"""A table's events in ``seq`` order (:class:`EventSeries`) and the ``events`` catch-up, paged
(:func:`page_events`): what both clients read a table's history with."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# A page answered rate_limited (the account paged faster than the table reads for it) is
# asked again after this long, at most this many times in a row.
PAGE_RETRY_S = 0.25
PAGE_RETRIES = 40


@dataclass
class EventSeries:
    """A table's events applied in ``seq`` order within one ``epoch``.

    :meth:`add` says what an event is to the series: ``new`` (the next one, applied),
    ``repeat`` (QoS 1 delivered it again: dropped) or ``gap`` (events are missing before
    it: catch up with ``events`` from :attr:`last_seq`, then add it again). :meth:`epoch_is`
    starts the series again when a state or ``events`` answer names another journal.
    """

    epoch: str | None = None
    last_seq: int = 0
    events: list[dict[str, Any]] = field(default_factory=list)

    def epoch_is(self, epoch: str | None) -> bool:
        """Take ``epoch`` as the series'; True if that started a new series (the events
        held belonged to another journal, whose seq and round ids come again)."""
        if epoch is None or epoch == self.epoch:
            return False
        renewed = self.epoch is not None
        self.epoch, self.last_seq, self.events = epoch, 0, []
        return renewed

    def add(self, event: dict[str, Any]) -> str:
        seq = int(event["seq"])
        if seq <= self.last_seq:
            return "repeat"
        if seq > self.last_seq + 1:
            return "gap"
        self.events.append(event)
        self.last_seq = seq
        return "new"



def page_events(
    request: Callable[..., dict[str, Any]],
    what: str,
    series: EventSeries,
    limit: int | None,
    timeout: float | None,
) -> EventSeries:
    """Page ``events`` after ``series.last_seq`` until ``more`` is false (see
    :meth:`ApiClient.catch_up`); ``request(command, timeout, **args)`` asks one table."""
    more = True
    retries = 0
    while more:
        args: dict[str, Any] = {"since": series.last_seq}
        if limit is not None:
            args["limit"] = limit
        answer = request("events", timeout, **args)
        limited = (answer.get("error") or {}).get("code") == "rate_limited"
        if limited and retries < PAGE_RETRIES:
            # A long catch-up pages past the table's budget of pages: it goes on at the
            # table's pace rather than fail.
            retries += 1
            time.sleep(PAGE_RETRY_S)
            continue
        retries = 0
        if not answer.get("ok"):
            raise RuntimeError(f"{what}events since {series.last_seq}: {answer.get('message')}")
        data = answer["data"]
        if series.epoch_is(data.get("epoch")) and args["since"] != 0:
            continue  # another journal: its series from the start
        for event in data["events"]:
            if series.add(event) == "gap":
                raise RuntimeError(
                    f"{what}events answer skips from {series.last_seq} to {event['seq']}"
                )
        more = bool(data.get("more")) and bool(data["events"])
    return series

