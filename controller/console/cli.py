"""``livetable console --config console.toml [--listen HOST:PORT]``: the supervisors' web
console. Only the argument parsing is here: aiohttp and the server are imported when the
command runs, so ``livetable --help`` does not load them."""

from __future__ import annotations

import argparse
from pathlib import Path

from controller.kernel.cli_support import examples

CONSOLE_HELP = (
    "Serve the supervisors' web console: every table of the broker on one wall, most urgent "
    "first, and the pause queue. It speaks only the tables' MQTT API; each person signs in "
    "with their own broker account, whose rights the broker's ACL decides (supervisors act, "
    "viewers watch). HTTPS when console.toml names a certificate and key."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "console",
        help="serve the supervisors' web console (every table, the pause queue)",
        description=CONSOLE_HELP,
        epilog=examples(
            "livetable console --config /etc/livetable/console.toml",
            "livetable console --config console.toml --listen 0.0.0.0:8443",
        ),
    )
    parser.add_argument("--config", type=Path, required=True, help="the console's TOML file")
    parser.add_argument("--listen", help="HOST:PORT to serve on, instead of [console] listen")
    parser.set_defaults(func=run_console)


def run_console(args: argparse.Namespace) -> int:
    from controller.console.config import load_console_config
    from controller.console.server import serve

    config = load_console_config(args.config, listen=args.listen)
    return serve(config)
