"""A console run in the test's process against the studio's broker: ``Console`` on aiohttp
on a real socket, served by an event loop on a thread of its own, whose ``StudioClient``
keeps only :data:`KEEP` events and notes the ``events`` requests the console sends; the
test reads the console's own bookkeeping (``InProcessConsole.console``)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, ClassVar

from aiohttp import web

from controller.client.api_client import StudioClient
from controller.console.config import BrokerSettings, ConsoleConfig
from controller.console.server import Console
from simulators.broker import free_port
from tests.support.console import ConsoleStudio

TIMEOUT_S = 30.0
# Fewer events than two baccarat rounds: the first round of three falls out of the feed.
KEEP = 12


class CountingStudioClient(StudioClient):
    """The real client, keeping :data:`KEEP` events and noting each ``events`` request."""

    asked: ClassVar[list[dict[str, Any]]] = []
    # The (account, table) pairs whose catch-up waits for its answer now, with when each
    # asked (time.monotonic()); and each close's start and end.
    catching_up: ClassVar[dict[tuple[str, str], float]] = {}
    closing: ClassVar[list[tuple[str, str]]] = []
    # How each account's catch-up request ended when it did not get its answer.
    catch_up_ended: ClassVar[list[tuple[str, str]]] = []

    def __init__(self, *args: Any, **options: Any) -> None:
        # Whatever the console asks for: the tests need rounds to leave the feed quickly.
        options["keep"] = KEEP
        super().__init__(*args, **options)

    def request(self, table_id: str, command: str, *args: Any, **fields: Any) -> dict[str, Any]:
        if command == "events":
            thread = threading.current_thread().name
            if thread.startswith("console"):
                CountingStudioClient.asked.append({"table": table_id, **fields})
            elif thread.startswith("catch-up"):
                waiting = (self.account.name, table_id)
                CountingStudioClient.catching_up[waiting] = time.monotonic()
                try:
                    return super().request(table_id, command, *args, **fields)
                except TimeoutError as error:
                    CountingStudioClient.catch_up_ended.append((self.account.name, str(error)))
                    raise
                finally:
                    CountingStudioClient.catching_up.pop(waiting, None)
        return super().request(table_id, command, *args, **fields)

    def close(self) -> None:
        CountingStudioClient.closing.append(("start", self.account.name))
        try:
            super().close()
        finally:
            CountingStudioClient.closing.append(("end", self.account.name))


class InProcessConsole:
    """``Console`` served on a free port by a loop on a thread of its own."""

    def __init__(self, studio: ConsoleStudio, idle_timeout_s: float = 900.0) -> None:
        self.port = free_port()
        self.config = ConsoleConfig(
            host="127.0.0.1",
            port=self.port,
            idle_timeout_s=idle_timeout_s,
            broker=BrokerSettings(host=studio.broker.host, port=studio.broker.port),
        )
        self.console = Console(self.config, client_factory=CountingStudioClient)
        self.url = f"http://127.0.0.1:{self.port}"
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        runner = web.AppRunner(self.console.app(), shutdown_timeout=5.0)
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", self.port).start()
            self._ready.set()
            await self._stop.wait()
        finally:
            await runner.cleanup()

    def start(self) -> InProcessConsole:
        self._thread.start()
        assert self._ready.wait(TIMEOUT_S), "the console did not start"
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(TIMEOUT_S)
