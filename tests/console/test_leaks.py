"""What the console holds, read from its own bookkeeping (a console in this process,
:mod:`tests.console.inprocess`, against the studio's broker and daemons): streams whose
browser vanished without a goodbye are let go, and a session that expires takes its
account's broker connection, its threads and its task with it."""

from __future__ import annotations

import socket
import struct
import threading

from tests.console.inprocess import TIMEOUT_S, InProcessConsole
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
