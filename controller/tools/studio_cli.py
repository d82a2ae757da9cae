"""``livetable studio accounts``: the broker authorisation of a studio from one description.

Reads the studio's accounts (:mod:`controller.tools.studio_accounts`, a TOML file) and writes a
mosquitto ACL, a nats-server ``authorization`` block, or both. Nothing is written unless the
whole description is valid; each output is written beside its target and renamed over it, so
a broker reloading meanwhile reads the old file or the new one, never half of one.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from controller.kernel.cli_support import default_to_help, examples
from controller.kernel.errors import ConfigurationError
from controller.tools.studio_accounts import load_accounts, mosquitto_acl, nats_authorization

EXAMPLE = (
    "livetable studio accounts --accounts /etc/livetable/studio.toml "
    "--mosquitto-acl /etc/mosquitto/livetable.acl --nats /etc/nats/livetable-users.conf"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "studio",
        help="the studio's broker accounts: a mosquitto ACL and a NATS authorization block",
        description="Studio-wide settings made from one description of the studio.",
        epilog=examples(EXAMPLE),
    )
    commands = parser.add_subparsers(dest="studio_command", metavar="WHAT")
    accounts = commands.add_parser(
        "accounts",
        help="write the broker authorisation of the studio's accounts",
        description="Read the studio's accounts (a TOML file of [[account]] name, role, "
        "tables) and write what each may publish and read: a mosquitto acl_file, a "
        "nats-server authorization block (MQTT-only users, passwords as configuration "
        "variables defined elsewhere), or both.",
        epilog=examples(EXAMPLE),
    )
    accounts.add_argument(
        "--accounts", type=Path, required=True, metavar="TOML", help="the studio's accounts"
    )
    accounts.add_argument(
        "--mosquitto-acl", type=Path, metavar="OUT", help="write a mosquitto acl_file here"
    )
    accounts.add_argument(
        "--nats", type=Path, metavar="OUT", help="write a nats-server authorization block here"
    )
    accounts.set_defaults(func=run_accounts)
    default_to_help(parser)


def _replace(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def run_accounts(args: argparse.Namespace) -> int:
    if args.mosquitto_acl is None and args.nats is None:
        raise ConfigurationError("nothing to write: give --mosquitto-acl OUT, --nats OUT or both")
    studio = load_accounts(args.accounts)
    source = args.accounts.name
    outputs: list[tuple[Path, str]] = []
    if args.mosquitto_acl is not None:
        outputs.append((args.mosquitto_acl, mosquitto_acl(studio, source)))
    if args.nats is not None:
        outputs.append((args.nats, nats_authorization(studio, source)))
    for path, text in outputs:
        _replace(path, text)
        print(f"livetable studio accounts: {len(studio.accounts)} account(s) -> {path}")
    return 0
