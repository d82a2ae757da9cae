"""The supervisors' web console, ``livetable console``: every table of a broker on one wall,
the pause queue, round history and audit, served by aiohttp over the tables' MQTT API only.

- :mod:`controller.console.config`: ``console.toml``.
- :mod:`controller.console.sessions`: sessions, CSRF tokens, the sign-in throttle, one
  broker connection per account.
- :mod:`controller.console.fleet`: a table's feed as the page's tile.
- :mod:`controller.console.server`: the web server.
- ``static/``: the page (plain HTML, CSS and JavaScript, served as they are).

It knows only the MQTT API, through :mod:`controller.client.api_client`: an import-linter contract
keeps it off the table, the drivers, the vision and the simulators.
"""
