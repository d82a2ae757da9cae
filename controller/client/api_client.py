"""The one Python client of the MQTT API (``docs/mqtt-api.md``, ``docs/asyncapi.yaml``).

It knows the API and nothing of the daemon's internals: it imports no part of the table,
the drivers, the vision or the simulators (an import-linter contract in ``pyproject.toml``
keeps it so), so whoever speaks to a table (the demo's people, ``livetable ctl``, a console,
the tests) speaks to it the way a platform or a script would.

Its parts, each a module of this package, and their names all importable from here:

- :func:`start_client`: a paho connection, watched (one error line per connection problem,
  ``TCP_NODELAY``: :func:`controller.mqtt.connection.watch_connection`).
- :class:`ApiClient`: one account's connection to one table: its retained availability and
  state, every event it saw, requests sent with a transaction and their answers awaited.
  With MQTT 5 a request the broker's ACL refuses is known at once (its PUBACK says so).
- :class:`EventSeries` and :meth:`ApiClient.catch_up`: events applied by ``seq`` with gap
  detection, and the ``events`` catch-up paged while ``more`` is true; another ``epoch`` is
  another journal, whose series starts again at 1.
- :class:`StudioClient`: one account's connection to every table it may read, each table's
  feed whole and in order (:class:`TableFeed`, :class:`TableUpdate`).

:mod:`controller.client.connection` holds what both clients share (:func:`start_client`,
:class:`Account`, the requests and their answers, the connection's callbacks);
:mod:`controller.client.events` the events' series and catch-up;
:mod:`controller.client.table_client` the one-table client and
:mod:`controller.client.studio_client` the studio's.
"""

from controller.client.connection import (
    MAX_UNCLAIMED_ANSWERS,
    RESPONSE_TIMEOUT_S,
    Account,
    AccountConnection,
    BrokerRefused,
    brokers,
    start_client,
)
from controller.client.events import PAGE_RETRIES, PAGE_RETRY_S, EventSeries
from controller.client.events import page_events as _page_events
from controller.client.studio_client import (
    CATCH_UP_RETRY_S,
    CATCH_UP_TIMEOUT_S,
    PROBE_TABLE,
    StudioClient,
    TableFeed,
    TableUpdate,
)
from controller.client.table_client import ApiClient

__all__ = [
    "CATCH_UP_RETRY_S",
    "CATCH_UP_TIMEOUT_S",
    "MAX_UNCLAIMED_ANSWERS",
    "PAGE_RETRIES",
    "PAGE_RETRY_S",
    "PROBE_TABLE",
    "RESPONSE_TIMEOUT_S",
    "Account",
    "AccountConnection",
    "ApiClient",
    "BrokerRefused",
    "EventSeries",
    "StudioClient",
    "TableFeed",
    "TableUpdate",
    "_page_events",
    "brokers",
    "start_client",
]
