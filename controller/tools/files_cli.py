"""``livetable files``: where this livetable's unit files, broker files and examples are.

The repository's systemd/ folder ships inside the package (as ``controller/systemd``), so a
table PC that installed a release wheel has the unit files, the broker's configuration and
the example settings of exactly that release, and copies them out from the folder this
command prints (docs/install.md). In a checkout it is the repository's own systemd/.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from controller.kernel.cli_support import examples
from controller.kernel.errors import ConfigurationError

# Where setup.py puts the repository's systemd/ folder in a wheel (a folder without modules,
# which Python finds as a namespace package).
SHIPPED_PACKAGE = "controller.systemd"
_CHECKOUT = Path(__file__).resolve().parents[2]


def shipped_folder() -> Path:
    """The folder of the shipped files: the installed package's, or a checkout's systemd/
    (an editable install, or the tree run as it is)."""
    spec = importlib.util.find_spec(SHIPPED_PACKAGE)
    for location in (spec.submodule_search_locations or []) if spec else []:
        if Path(location).is_dir():
            return Path(location)
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "systemd").is_dir():
        return _CHECKOUT / "systemd"
    raise ConfigurationError(
        "this livetable has no shipped files (no controller/systemd in its package): "
        "install a release wheel built with python -m build"
    )


def shipped_files(folder: Path) -> list[Path]:
    """Every file under ``folder``, in name order (no caches the interpreter left there)."""
    return sorted(
        (
            path
            for path in folder.rglob("*")
            if path.is_file() and "__pycache__" not in path.relative_to(folder).parts
        ),
        key=str,
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "files",
        help="print the folder of this release's unit files, broker files and examples",
        description="Print the folder that holds this release's systemd units and drop-ins, "
        "the broker's configuration (mosquitto, NATS) and the example table and console "
        "settings, to copy them from (the install guide says where each goes).",
        epilog=examples(
            "livetable files",
            "livetable files --list",
            'install -m 644 "$(livetable files)/livetable@.service" /etc/systemd/system/',
        ),
    )
    parser.add_argument(
        "--list", action="store_true", help="print every file in it, one full path a line"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    folder = shipped_folder()
    for path in shipped_files(folder) if args.list else [folder]:
        print(path)
    return 0
