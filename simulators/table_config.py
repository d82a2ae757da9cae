"""A table's TOML configuration for ``livetable run``, written as a studio writes one: for the
demo's tables, the latency bench's and the tests'.

One writer, :func:`write_table_config`: ``[table]`` (the journal beside the file, named after
the table), ``[shoe]`` and ``[mqtt]``, with an optional account whose password goes to a file
only its owner may read (``password_file``), an optional ``[mqtt.tls]`` and extra lines at the
end. A ``[table]`` setting left out (``None``) takes the table's default
(:class:`controller.table.config.TableConfig`). Installed code (``livetable demo``,
``livetable bench latency``) cannot import the test suite's helpers, so the writer lives
here and the tests use this one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path


def _text(value: object) -> str:
    """``value`` as a TOML basic string: JSON's string escapes are TOML's too, so a path with
    a quote or a backslash in it stays that path."""
    return json.dumps(str(value))


def write_table_config(
    path: Path,
    *,
    table_id: str,
    game: str,
    shoe_port: Path | str,
    broker_port: int,
    broker_host: str = "127.0.0.1",
    broker_hosts: Sequence[tuple[str, int]] | None = None,
    protocol: str = "angel-eye",
    shoe_variant: str | None = None,
    mqtt_protocol: str = "5",
    betting_s: float | None = None,
    decision_s: float | None = None,
    dealer_idle_s: float | None = None,
    stop_timeout_s: float | None = None,
    variant: str | None = None,
    client_id: str | None = None,
    topic_prefix: str | None = None,
    username: str | None = None,
    password: str | None = None,
    tls_ca_file: Path | str | None = None,
    signing_key: Path | str | None = None,
    extra: str = "",
) -> Path:
    """Write the configuration of table ``table_id`` to ``path`` and return ``path``.

    ``protocol`` is the shoe's (``shoe_variant``: its Angel Eye numbering), ``variant`` the
    game's rule variant, ``mqtt_protocol`` the broker connection's; ``broker_hosts``, a
    cluster's nodes, is written as ``[mqtt] hosts`` instead of ``host`` and ``port``.
    ``password`` is
    written to ``<table_id>.mqtt-password`` beside ``path`` (mode 0600) and named by
    ``password_file``. ``signing_key``: the ``[table]`` key the daemon signs its journal's
    head with. ``extra``: TOML text appended as it is (e.g. another section).
    """
    settings = {
        "betting_s": betting_s,
        "decision_s": decision_s,
        "dealer_idle_s": dealer_idle_s,
        "stop_timeout_s": stop_timeout_s,
    }
    lines = [
        "[table]",
        f"id = {_text(table_id)}",
        f"game = {_text(game)}",
        *(f"{name} = {value}" for name, value in settings.items() if value is not None),
        f"journal_path = {_text(table_id + '.journal')}",
    ]
    if signing_key is not None:
        lines.append(f"signing_key = {_text(signing_key)}")
    if variant is not None:
        lines.append(f"variant = {_text(variant)}")
    lines += [
        "[shoe]",
        f"port = {_text(shoe_port)}",
        f"protocol = {_text(protocol)}",
        *([f"variant = {_text(shoe_variant)}"] if shoe_variant is not None else []),
        "[mqtt]",
        *(
            [f"host = {_text(broker_host)}", f"port = {broker_port}"]
            if not broker_hosts
            else [f"hosts = [{', '.join(_text(f'{h}:{p}') for h, p in broker_hosts)}]"]
        ),
        f"protocol = {_text(mqtt_protocol)}",
    ]
    if client_id is not None:
        lines.append(f"client_id = {_text(client_id)}")
    if topic_prefix is not None:
        lines.append(f"topic_prefix = {_text(topic_prefix)}")
    if username is not None:
        lines.append(f"username = {_text(username)}")
    if password is not None:
        secret = path.parent / f"{table_id}.mqtt-password"
        secret.touch(mode=0o600)
        secret.chmod(0o600)  # private before the password is in it
        secret.write_text(password + "\n", encoding="utf-8")
        lines.append(f"password_file = {_text(secret.name)}")
    if tls_ca_file is not None:
        lines += ["[mqtt.tls]", f"ca_file = {_text(tls_ca_file)}"]
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path
