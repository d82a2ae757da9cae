"""An MQTT broker inside the demo's process (amqtt), on a free loopback port.

``livetable demo`` without ``--broker`` needs a broker that is there on a fresh machine
without a Debian package: amqtt is a maintained pure-Python broker (asyncio), started here
on its own thread and event loop. What it offers and what that means for the demo:

- MQTT 3.1.1 only: the daemon is configured with ``protocol = "3.1.1"`` against it.
- QoS 1, retained messages and the Last Will, which the API needs (``availability``,
  ``state``).
- An anonymous session gets no offline queue, even with ``clean_session=false``: every
  client logs in with the one account printed by the demo, so the daemon's persistent
  session keeps the requests sent while it was away, as it does on mosquitto.
- Only the password check is configured (no ``$SYS`` topics, no packet logging); it binds
  127.0.0.1 and nothing else.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import secrets
import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from controller.kernel.errors import ConfigurationError

logger = logging.getLogger(__name__)

# A cold start takes about 0.1 s; a loaded 2-core machine gets far more.
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0
DEMO_USERNAME = "demo"

try:  # amqtt is a dependency of livetable; the base class is only needed to load the plugin
    from amqtt.plugins.base import BaseAuthPlugin
except ImportError:  # pragma: no cover - a broken install; EmbeddedBroker.start says so
    BaseAuthPlugin = object  # type: ignore[assignment,misc]


class OneAccountAuth(BaseAuthPlugin):  # type: ignore[misc,valid-type]
    """amqtt authentication plugin: one user name and password, compared in constant time."""

    @dataclass
    class Config:
        username: str = DEMO_USERNAME
        password: str = ""
        any_account: bool = False

    async def authenticate(self, *, session: Any) -> bool:
        config = self.context.config
        username = session.username or ""
        password = session.password or ""
        if config.any_account:
            # The demo's console: a person signs in under a name of their own (it names
            # them in the tables' journals), with any password; loopback only.
            return bool(username)
        if isinstance(password, bytes):
            password = password.decode("utf-8", "replace")
        return bool(config.password) and (
            hmac.compare_digest(username, config.username)
            & hmac.compare_digest(password, config.password)
        )


class EmbeddedBroker:
    """amqtt on 127.0.0.1 and a port the system picks, on a thread of its own.

    ``with EmbeddedBroker() as broker:`` then ``broker.port``, ``broker.username``,
    ``broker.password``; :meth:`watch_command` is a ``mosquitto_sub`` line for a person.
    ``any_account``: every user name is let in, with any password (the demo's console,
    where each person signs in under their own name).
    """

    def __init__(
        self, host: str = "127.0.0.1", password: str | None = None, any_account: bool = False
    ) -> None:
        self.host = host
        self.any_account = any_account
        self.port = 0
        self.username = DEMO_USERNAME
        self.password = password or secrets.token_urlsafe(9)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._broker: Any = None

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    def watch_command(self, topics: str = "livetable/#") -> str:
        return (
            f"mosquitto_sub -h {self.host} -p {self.port} -u {self.username} "
            f"-P {self.password} -t '{topics}' -v"
        )

    def start(self) -> None:
        try:
            from amqtt.broker import Broker
        except ImportError as error:
            raise ConfigurationError(
                "the embedded broker needs amqtt (pip install amqtt), or give --broker URL"
            ) from error
        # amqtt logs every connection at INFO and unsent messages at shutdown as WARNING:
        # the demo's own lines say what matters.
        logging.getLogger("amqtt").setLevel(logging.ERROR)
        logging.getLogger("transitions").setLevel(logging.ERROR)
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="embedded-broker")
        self._thread.start()
        config = {
            # Port 0: the system picks a free one when the listener binds (no race).
            "listeners": {"default": {"type": "tcp", "bind": f"{self.host}:0"}},
            "plugins": {
                f"{__name__}.OneAccountAuth": {
                    "username": self.username,
                    "password": self.password,
                    "any_account": self.any_account,
                }
            },
        }

        async def start() -> Any:
            broker = Broker(config, loop=loop)
            await broker.start()
            return broker

        future: Future[Any] = asyncio.run_coroutine_threadsafe(start(), loop)
        try:
            self._broker = future.result(START_TIMEOUT_S)
        except Exception as error:
            self._stop_loop()
            raise ConfigurationError(f"the embedded MQTT broker did not start: {error}") from error
        server = self._broker._servers["default"].instance
        self.port = int(server.sockets[0].getsockname()[1])
        logger.info("embedded MQTT broker on %s", self.url)

    def stop(self) -> None:
        loop, broker = self._loop, self._broker
        if loop is None:
            return
        if broker is not None:
            future = asyncio.run_coroutine_threadsafe(broker.shutdown(), loop)
            try:
                future.result(STOP_TIMEOUT_S)
            except Exception as error:  # a broker that will not stop is stopped with its loop
                logger.warning("the embedded broker did not shut down cleanly: %s", error)
            self._broker = None
        self._stop_loop()

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None:
            return

        async def cancel_the_rest() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        if thread is not None and thread.is_alive():
            try:
                asyncio.run_coroutine_threadsafe(cancel_the_rest(), loop).result(STOP_TIMEOUT_S)
            except Exception as error:
                logger.debug("cancelling the broker's tasks: %s", error)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(STOP_TIMEOUT_S)
        loop.close()
        self._loop = None
        self._thread = None

    def __enter__(self) -> EmbeddedBroker:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()
