"""Tell systemd how the daemon is doing: the sd_notify(3) protocol, in the standard library.

The unit (``systemd/livetable@.service``) is ``Type=notify`` with ``WatchdogSec=``: systemd
counts the table as started only when the daemon sends ``READY=1`` (after the journal has been
replayed, so a table that is still replaying is not reported up), and restarts it when no
``WATCHDOG=1`` arrives within the interval (the event loop sends one every half interval, so a
loop stuck on a device or a lock is noticed).

A start replays the journal from its last checkpoint, which takes seconds; a journal with no
checkpoint yet (written before checkpoints, or of a table that never ended a shoe) may take
minutes. While it replays, the daemon sends ``EXTEND_TIMEOUT_USEC=`` at least every
:data:`REPLAY_NOTICE_S` (:func:`replay_progress`), each asking for :data:`EXTEND_S` more, so
that systemd never kills a replay that makes progress, however long, while the unit's
``TimeoutStartSec=`` still catches a start that hangs.

The protocol is one datagram per message on the AF_UNIX socket named by ``$NOTIFY_SOCKET``;
a name starting with ``@`` is in the abstract namespace (the ``@`` stands for a NUL byte).
Without ``$NOTIFY_SOCKET`` (started by hand, in tests, in a container) every call does
nothing, so the daemon calls these functions unconditionally.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Mapping
from typing import Final

logger = logging.getLogger(__name__)

NOTIFY_SOCKET_ENV: Final = "NOTIFY_SOCKET"
WATCHDOG_USEC_ENV: Final = "WATCHDOG_USEC"
WATCHDOG_PID_ENV: Final = "WATCHDOG_PID"
# Each extension asks for this much more time to start: well above the pause between two of
# them (REPLAY_NOTICE_S), even on a machine many times slower than a table PC.
EXTEND_S: Final = 60.0
# How often a replay says it goes on, at most and (while rows keep coming) at least.
REPLAY_NOTICE_S: Final = 2.0


def _address(name: str) -> str | bytes:
    if name.startswith("@"):
        # Linux abstract namespace: a leading NUL byte instead of a path.
        return b"\0" + name[1:].encode()
    return name


def notify(state: str, environ: Mapping[str, str] | None = None) -> bool:
    """Send ``state`` (e.g. ``"READY=1"``, several assignments separated by newlines) to the
    service manager. True if it was sent; False when there is no ``$NOTIFY_SOCKET`` or the
    send failed (logged: a lost notification must not stop the table)."""
    environ = os.environ if environ is None else environ
    name = environ.get(NOTIFY_SOCKET_ENV)
    if not name:
        return False
    if not name.startswith(("/", "@")):
        # systemd also allows vsock: addresses; a table PC never needs them.
        logger.warning("ignoring NOTIFY_SOCKET %r: not a unix socket path", name)
        return False
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(state.encode(), _address(name))
    except OSError as error:
        logger.warning("cannot notify the service manager (%s): %s", name, error)
        return False
    return True


def ready(status: str | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """The daemon is up: the journal is replayed and the table takes events."""
    message = "READY=1"
    if status:
        message += f"\nSTATUS={status}"
    return notify(message, environ)


def stopping(status: str | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """The daemon is shutting down (SIGTERM received)."""
    message = "STOPPING=1"
    if status:
        message += f"\nSTATUS={status}"
    return notify(message, environ)


def status(text: str, environ: Mapping[str, str] | None = None) -> bool:
    """A one-line status shown by ``systemctl status``."""
    return notify(f"STATUS={text}", environ)


def watchdog_ping(environ: Mapping[str, str] | None = None) -> bool:
    """The event loop is alive; send at least every :func:`watchdog_interval_s` / 2."""
    return notify("WATCHDOG=1", environ)


def watchdog_interval_s(environ: Mapping[str, str] | None = None) -> float | None:
    """The watchdog interval systemd expects pings within, in seconds, or None when the
    watchdog is off for this process (as sd_watchdog_enabled(3): ``$WATCHDOG_USEC`` set and
    positive, and ``$WATCHDOG_PID``, when set, naming this process). Ping every half of it."""
    environ = os.environ if environ is None else environ
    usec = environ.get(WATCHDOG_USEC_ENV)
    if not usec:
        return None
    try:
        interval = int(usec)
    except ValueError:
        logger.warning("ignoring WATCHDOG_USEC %r: not a number", usec)
        return None
    if interval <= 0:
        return None
    pid = environ.get(WATCHDOG_PID_ENV)
    if pid:
        try:
            if int(pid) != os.getpid():
                return None
        except ValueError:
            logger.warning("ignoring WATCHDOG_PID %r: not a number", pid)
            return None
    return interval / 1_000_000


def extend_timeout(
    seconds: float, status: str | None = None, environ: Mapping[str, str] | None = None
) -> bool:
    """The start (or stop) goes on: systemd waits ``seconds`` more from now before its
    ``TimeoutStartSec=`` kills it. Sent with ``WATCHDOG=1`` too, so that a watchdog armed
    before ``READY=1`` does not fire during a long replay either."""
    message = f"EXTEND_TIMEOUT_USEC={int(seconds * 1_000_000)}\nWATCHDOG=1"
    if status:
        message += f"\nSTATUS={status}"
    return notify(message, environ)


def replay_progress(
    environ: Mapping[str, str] | None = None, clock: Callable[[], float] = time.monotonic
) -> Callable[[int], None]:
    """A replay's progress callback (``JournaledTable.open(progress=...)``): given the rows
    replayed so far, it extends the start's timeout by :data:`EXTEND_S`, at most every
    :data:`REPLAY_NOTICE_S`. Without ``$NOTIFY_SOCKET`` it does nothing."""
    last = [clock()]

    def progress(rows: int) -> None:
        now = clock()
        if now - last[0] < REPLAY_NOTICE_S:
            return
        last[0] = now
        extend_timeout(EXTEND_S, f"replaying the journal: {rows} rows", environ)

    return progress
