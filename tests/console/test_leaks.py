"""What the console holds, read from its own bookkeeping (a console in this process,
:mod:`tests.console.inprocess`, against the studio's broker and daemons): streams whose
browser vanished without a goodbye are let go, and a session that expires takes its
account's broker connection, its threads and its task with it."""

from __future__ import annotations

import signal
import socket
import struct
import threading
import time

import pytest

from controller.client import studio_client
from tests.console.inprocess import TIMEOUT_S, CountingStudioClient, InProcessConsole
from tests.support.console import ConsoleHttp, ConsoleStudio
from tests.support.wait import wait_until


def _threads_of(account: str) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.endswith(account)]


def test_vanished_streams_and_expired_sessions_leave_nothing_behind(
    console_studio: ConsoleStudio,
) -> None:
    studio = console_studio
    served = InProcessConsole(studio, idle_timeout_s=10).start()
    try:
        console = served.console
        alice = ConsoleHttp(served.url)
        assert alice.sign_in("alice", studio.passwords["alice"]).status == 303
        feed = console.links.client("alice")
        assert feed is not None and feed.client is not None
        client, task = feed.client, feed._task
        assert task is not None and _threads_of("alice"), "a worker of the account's client"
        streams = [alice.stream() for _ in range(3)]
        wait_until(lambda: len(feed.subscribers) == 3, TIMEOUT_S, "three streams open")
        # Each browser vanishes: its connection reset, no request to end the stream.
        for stream in streams:
            sock = stream.connection.sock
            assert sock is not None
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        # Tiles keep coming: a write finds each connection gone.
        studio.play("t1", 1)
        wait_until(lambda: not feed.subscribers, TIMEOUT_S, "the vanished streams let go")
        # Nobody asks anything: the session expires and takes the account's link with it.
        wait_until(lambda: len(console.sessions) == 0, TIMEOUT_S, "the idle session ended")
        wait_until(lambda: "alice" not in console.links, TIMEOUT_S, "alice's link closed")
        wait_until(lambda: task.done(), TIMEOUT_S, "the account's tile task ended")
        wait_until(lambda: not _threads_of("alice"), TIMEOUT_S, "the client's threads ended")
        assert not client.client.is_connected()
    finally:
        served.stop()


def test_stopping_closes_every_accounts_connection_at_once(
    console_studio: ConsoleStudio, monkeypatch: pytest.MonkeyPatch
) -> None:
    studio = console_studio
    # A catch-up waits far longer than the test takes to reach the stop, however loaded the
    # machine: each one the stop ends must end because the client closed, not because its
    # own wait (5 s as shipped) ran out first.
    monkeypatch.setattr(studio_client, "CATCH_UP_TIMEOUT_S", 120.0)
    served = InProcessConsole(studio).start()
    daemon = studio.tables["t1"].daemon.process
    assert daemon is not None
    stopped = False
    try:
        names = ("alice", "bob", "viewer")
        for name in names:
            browser = ConsoleHttp(served.url)
            assert browser.sign_in(name, studio.passwords[name]).status == 303
        for name in names:
            wait_until(
                lambda name=name: (
                    (f := served.console.links.client(name)) is not None
                    and any(t["table"] == "t1" for t in f.tiles())
                ),
                TIMEOUT_S,
                f"{name}'s tiles",
            )
        # t1's daemon stops answering (SIGSTOP): each account's catch-up of t1 now waits for
        # its answer, as one does whenever a table is slow or gone, when the console stops.
        daemon.send_signal(signal.SIGSTOP)
        stopped, stopped_at = True, time.monotonic()
        for name in names:
            feed = served.console.links.client(name)
            assert feed is not None and feed.client is not None
            with feed.client._lock:
                feed.client._want("t1")

        def everyone_waits() -> bool:
            # A catch-up asked after the stop gets no answer: it waits until the close. One
            # asked just before may have had its answer sent already, which arrives within
            # moments: one still waiting 2 s after the stop got none either.
            asked = CountingStudioClient.catching_up.copy()
            settled = time.monotonic() - stopped_at > 2.0
            return all(
                (name, "t1") in asked and (settled or asked[(name, "t1")] > stopped_at)
                for name in names
            )

        wait_until(everyone_waits, TIMEOUT_S, "every account waiting for t1")
        CountingStudioClient.closing = []
        CountingStudioClient.catch_up_ended = []
    finally:
        served.stop()
        if stopped:
            daemon.send_signal(signal.SIGCONT)
    starts = [i for i, (what, _name) in enumerate(CountingStudioClient.closing) if what == "start"]
    ends = [i for i, (what, _name) in enumerate(CountingStudioClient.closing) if what == "end"]
    assert len(starts) == len(ends) == 3, CountingStudioClient.closing
    # A close that waited for its catch-up's answer (5 s when a table is slow or gone), one
    # after the other, would add up past systemd's stop timeout: each close wakes its
    # catch-up instead, which ends saying the client closed, not that its wait ran out.
    ended = dict(CountingStudioClient.catch_up_ended)
    assert set(ended) == set(names), CountingStudioClient.catch_up_ended
    assert all("the client closed" in why for why in ended.values()), ended
