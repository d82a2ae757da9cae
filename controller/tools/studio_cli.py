"""``livetable studio``: the broker authorisation of a studio from one description.

``studio accounts`` reads the studio's accounts (:mod:`controller.tools.studio_accounts`, a TOML
file) and writes a mosquitto ACL, a nats-server ``authorization`` block, or both. Nothing is
written unless the whole description is valid; each output is written beside its target and
renamed over it, so a broker reloading meanwhile reads the old file or the new one, never
half of one.

``studio callout-key`` makes the key the NATS auth callout signs with, and ``studio
auth-callout`` is that service (:mod:`controller.tools.studio_auth_callout`): on NATS it decides
every connection, with the same description.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from controller.kernel.cli_support import default_to_help, examples, verbosity
from controller.kernel.errors import ConfigurationError
from controller.tools.studio_accounts import load_accounts, mosquitto_acl, nats_authorization

KEY_FILE = "/etc/livetable/auth-callout.nk"
EXAMPLE = (
    "livetable studio accounts --accounts /etc/livetable/studio.toml "
    "--mosquitto-acl /etc/mosquitto/livetable.acl --nats /etc/nats/livetable-users.conf "
    f"--callout-key {KEY_FILE}"
)
KEY_EXAMPLE = f"livetable studio callout-key {KEY_FILE}"
CALLOUT_EXAMPLE = (
    "livetable studio auth-callout --accounts /etc/livetable/studio.toml "
    f"--key {KEY_FILE} --server nats://127.0.0.1:4222"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "studio",
        help="the studio's broker accounts: a mosquitto ACL, NATS authorisation and its callout",
        description="Studio-wide settings made from one description of the studio.",
        epilog=examples(EXAMPLE, KEY_EXAMPLE, CALLOUT_EXAMPLE),
    )
    commands = parser.add_subparsers(dest="studio_command", metavar="WHAT")
    accounts = commands.add_parser(
        "accounts",
        help="write the broker authorisation of the studio's accounts",
        description="Read the studio's accounts (a TOML file of [[account]] name, role, "
        "tables) and write what each may publish and read: a mosquitto acl_file, a "
        "nats-server authorization block that hands every connection to `livetable studio "
        "auth-callout` (which gives each account its permissions and keeps each table's "
        "client id to the table), or both.",
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
    accounts.add_argument(
        "--callout-key",
        type=Path,
        metavar="SEED",
        help="with --nats: the auth callout's key (`livetable studio callout-key`), whose "
        "public half the nodes trust",
    )
    accounts.set_defaults(func=run_accounts)

    key = commands.add_parser(
        "callout-key",
        help="make the key the NATS auth callout signs its answers with",
        description="Write a new account nkey seed (SA...) to OUT, readable by its owner "
        "only, and print its public key. The callout service signs with it; `studio "
        "accounts --callout-key` writes its public key into the nodes' configuration.",
        epilog=examples(KEY_EXAMPLE),
    )
    key.add_argument("out", type=Path, metavar="OUT", help="the seed file (not overwritten)")
    key.set_defaults(func=run_callout_key)

    callout = commands.add_parser(
        "auth-callout",
        help="the NATS cluster's auth callout: who may connect, as what, with which client id",
        description="Answer the NATS nodes' authorization requests (auth_callout): check an "
        "account's password (the environment's LIVETABLE_PASSWORD_<NAME>, a bcrypt hash or "
        "the password), refuse a client id that is another account's (a table's daemon's "
        "livetable-<table>, or another account's name) and anything but MQTT, and give the "
        "account its permissions. Logs in as livetable-auth-callout with the password in "
        "LIVETABLE_AUTH_CALLOUT_PASSWORD. Runs until SIGTERM.",
        epilog=examples(CALLOUT_EXAMPLE),
    )
    callout.add_argument(
        "--accounts", type=Path, required=True, metavar="TOML", help="the studio's accounts"
    )
    callout.add_argument(
        "--key", type=Path, required=True, metavar="SEED", help="the callout's key (seed file)"
    )
    callout.add_argument(
        "--server",
        action="append",
        required=True,
        metavar="URL",
        help="a NATS node (nats://host:port); repeat for more: the first is tried first",
    )
    callout.set_defaults(func=run_auth_callout)
    default_to_help(parser)


def _replace(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def run_accounts(args: argparse.Namespace) -> int:
    if args.mosquitto_acl is None and args.nats is None:
        raise ConfigurationError("nothing to write: give --mosquitto-acl OUT, --nats OUT or both")
    if args.nats is not None and args.callout_key is None:
        raise ConfigurationError(
            "--nats needs --callout-key SEED: the nodes hand every connection to the auth "
            "callout and trust its key (make one with `livetable studio callout-key OUT`)"
        )
    studio = load_accounts(args.accounts)
    source = args.accounts.name
    outputs: list[tuple[Path, str]] = []
    if args.mosquitto_acl is not None:
        outputs.append((args.mosquitto_acl, mosquitto_acl(studio, source)))
    if args.nats is not None:
        from controller.tools.studio_auth_callout import load_issuer_key

        issuer = load_issuer_key(args.callout_key).public_key
        outputs.append((args.nats, nats_authorization(studio, issuer, source)))
    for path, text in outputs:
        _replace(path, text)
        print(f"livetable studio accounts: {len(studio.accounts)} account(s) -> {path}")
    return 0


def run_callout_key(args: argparse.Namespace) -> int:
    from controller.tools.studio_auth_callout import IssuerKey, new_issuer_seed

    seed = new_issuer_seed()
    try:
        descriptor = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError as error:
        raise ConfigurationError(f"{args.out} exists: a key is not overwritten") from error
    with os.fdopen(descriptor, "wb") as out:
        out.write(seed + b"\n")
    print(IssuerKey(seed).public_key)
    return 0


def run_auth_callout(args: argparse.Namespace) -> int:
    from controller.kernel.logs import configure_logging
    from controller.service.sd_notify import ready
    from controller.tools.studio_auth_callout import load_issuer_key, run_service

    configure_logging(verbosity(args))
    studio = load_accounts(args.accounts)
    key = load_issuer_key(args.key)
    return run_service(studio, key, args.server, os.environ, lambda: ready("answering"))
