"""``livetable files``: where this livetable's unit files, broker files and examples are.

The repository's systemd/ folder ships inside the package (as ``controller/systemd``), so a
table PC that installed a release wheel has the unit files, the broker's configuration and
the example settings of exactly that release, and copies them out from the folder this
command prints (docs/install.md). Its docs/ ship likewise (``controller/docs``, printed by
``--docs``): the pages the units' ``Documentation=`` names. In a checkout they are the
repository's own folders.
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from controller.kernel.cli_support import examples
from controller.kernel.errors import ConfigurationError

# The repository's folders that setup.py puts in a wheel, as ``controller.<name>`` (folders
# without modules, which Python finds as namespace packages).
FILES, DOCS = "systemd", "docs"
_CHECKOUT = Path(__file__).resolve().parents[2]


def shipped_folder(name: str = FILES) -> Path:
    """A shipped folder (``systemd`` or ``docs``): the installed package's, or a checkout's
    own (an editable install, or the tree run as it is)."""
    spec = importlib.util.find_spec(f"controller.{name}")
    for location in (spec.submodule_search_locations or []) if spec else []:
        if Path(location).is_dir():
            return Path(location)
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / name).is_dir():
        return _CHECKOUT / name
    raise ConfigurationError(
        f"this livetable has no shipped {name} (no controller/{name} in its package): "
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
            "livetable files --docs",
            'install -m 644 "$(livetable files)/livetable@.service" /etc/systemd/system/',
        ),
    )
    parser.add_argument(
        "--list", action="store_true", help="print every file in it, one full path a line"
    )
    parser.add_argument(
        "--docs",
        action="store_true",
        help="the folder of this release's reference pages (install, operations, API...) instead",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    folder = shipped_folder(DOCS if args.docs else FILES)
    for path in shipped_files(folder) if args.list else [folder]:
        print(path)
    return 0
