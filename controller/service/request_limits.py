"""How many table commands and pages the daemon takes from one account: a flood costs a
bounded journal, and bounded reading.

Every table command the table takes is a journal row, a refused one too (the refusal is part
of the record), so an account that sends commands without end would grow the journal, which
every start replays, without bound. Two budgets per account bound it, each a token bucket
(a burst, then a steady rate):

- **refused commands**, from any role: :data:`REFUSED_BURST` at once, then one every
  ``1 / REFUSED_PER_S`` seconds. A client that acts on what the table publishes is seldom
  refused; one that keeps asking what the state does not allow is held back.
- **supervisor commands**, taken or refused: :data:`SUPERVISOR_BURST` at once, then
  :data:`SUPERVISOR_PER_S` a second: a person at a console gives far fewer, and a supervisor
  could otherwise pause and resume for ever, each one taken. The platform needs no such
  budget: what it may give and the table takes follows the game (one ``open_round`` per
  round, one ``decide`` per decision the table asked for), so it is paced by the cards.

A command over budget is answered ``rate_limited`` and journals nothing; it is not stored as
the transaction's answer, so the same request sent later is executed then.

Reads journal nothing, but a page of ``events`` or ``audit`` costs a read of the outbox or
the journal and an answer of up to a packet (64 KiB): a flood of them would hold the
table's readers and fill the MQTT client's queue with answers. :class:`ReadLimits` gives
every account two budgets for them:

- **pages at a time**: :data:`READS_AT_ONCE` requests waiting or being read. A client that
  pages (the next page once the last is answered) never has more than one; a flood has
  thousands at once, and all but these few are answered at once, cheaply.
- **pages**: :data:`READ_BURST` at once, then :data:`READ_PER_S` a second, far more than
  paging needs (a page holds up to 500 events), so that a client sending one page after the
  other without end costs the readers a bounded share.

``status`` is answered from memory at once, the state as it was published, and needs no
budget. All of it is per daemon and in memory: a restart starts every budget full.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

REFUSED_BURST: Final = 20
REFUSED_PER_S: Final = 0.5
SUPERVISOR_BURST: Final = 30
SUPERVISOR_PER_S: Final = 2.0
READS_AT_ONCE: Final = 4
READ_BURST: Final = 200
READ_PER_S: Final = 50.0
# Buckets kept before the full ones are forgotten (a full bucket is the same as none).
_KEEP: Final = 1024


@dataclass(slots=True)
class _Bucket:
    burst: float
    per_s: float
    tokens: float
    at: float

    def refill(self, now: float) -> float:
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.per_s)
        self.at = now
        return self.tokens

    def wait_s(self) -> float:
        """How long until one token is there again."""
        return max(0.0, (1.0 - self.tokens) / self.per_s)


class CommandLimits:
    """The budgets of every account; safe from any thread (the MQTT thread checks a request
    as it arrives, the table's thread again before it runs it and counts what it cost)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], _Bucket] = {}

    def _budgets(self, role: str) -> list[tuple[str, float, float]]:
        budgets = [("refused", float(REFUSED_BURST), REFUSED_PER_S)]
        if role == "supervisor":
            budgets.append(("supervisor", float(SUPERVISOR_BURST), SUPERVISOR_PER_S))
        return budgets

    def _bucket(self, account: str, kind: str, burst: float, per_s: float, now: float) -> _Bucket:
        bucket = self._buckets.get((account, kind))
        if bucket is None:
            bucket = self._buckets[(account, kind)] = _Bucket(burst, per_s, burst, now)
        bucket.refill(now)
        return bucket

    def refusal(self, account: str, role: str) -> str | None:
        """None if ``account`` may give a table command now; else why not, for the answer."""
        now = self._clock()
        with self._lock:
            for kind, burst, per_s in self._budgets(role):
                bucket = self._bucket(account, kind, burst, per_s, now)
                if bucket.tokens < 1.0:
                    what = "commands the table refused" if kind == "refused" else "commands"
                    return (
                        f"{account} sent more {what} than the table takes (at most "
                        f"{burst:g} at once, then {per_s:g} a second): send it again in "
                        f"{bucket.wait_s():.1f} s"
                    )
        return None

    def taken(self, account: str, role: str, refused: bool) -> None:
        """Count a table command the table journaled (``refused``: and refused)."""
        now = self._clock()
        with self._lock:
            for kind, burst, per_s in self._budgets(role):
                if kind == "refused" and not refused:
                    continue
                bucket = self._bucket(account, kind, burst, per_s, now)
                bucket.tokens = max(0.0, bucket.tokens - 1.0)
            if len(self._buckets) > _KEEP:
                for key, bucket in list(self._buckets.items()):
                    if bucket.refill(now) >= bucket.burst:
                        del self._buckets[key]


class ReadLimits:
    """The budgets of ``events`` and ``audit`` pages, per account and role; safe from any
    thread (the MQTT thread admits a page, the reader that answered it lets it go)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], _Bucket] = {}
        self._open: dict[tuple[str, str], int] = {}

    def admit(self, account: str, role: str) -> str | None:
        """None if ``account`` may have one more page read now (counted until
        :meth:`done`); else why not, for the ``rate_limited`` answer."""
        key = (role, account)
        now = self._clock()
        with self._lock:
            if self._open.get(key, 0) >= READS_AT_ONCE:
                return (
                    f"{account} has {READS_AT_ONCE} pages waiting already (at most "
                    f"{READS_AT_ONCE} at a time): send it again once one is answered"
                )
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(
                    float(READ_BURST), READ_PER_S, float(READ_BURST), now
                )
            if bucket.refill(now) < 1.0:
                return (
                    f"{account} asked for more pages than the table reads (at most "
                    f"{READ_BURST} at once, then {READ_PER_S:g} a second): send it again in "
                    f"{bucket.wait_s():.1f} s"
                )
            bucket.tokens -= 1.0
            self._open[key] = self._open.get(key, 0) + 1
            if len(self._buckets) > _KEEP:
                for each, kept in list(self._buckets.items()):
                    if kept.refill(now) >= kept.burst and each not in self._open:
                        del self._buckets[each]
        return None

    def done(self, account: str, role: str) -> None:
        """A page admitted for ``account`` was answered (or will never be read)."""
        key = (role, account)
        with self._lock:
            left = self._open.get(key, 0) - 1
            if left > 0:
                self._open[key] = left
            else:
                self._open.pop(key, None)
