"""The layers drawn in docs/architecture.md are the import-linter contract, and every module
of the tree sits in one of them (a module outside every layer would escape the contract)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS_CONTRACT = "The layers of the tree: imports only go down"


def importlinter() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]


def layers_contract() -> dict:
    (contract,) = [c for c in importlinter()["contracts"] if c["name"] == LAYERS_CONTRACT]
    return contract


def split_layer(layer: str) -> list[str]:
    return [name.strip() for name in layer.split("|")]


def drawn_layers() -> list[list[str]]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = re.search(r"<!-- layers: begin -->\n```\n(.*?)```\n<!-- layers: end -->", text, re.S)
    assert block, "docs/architecture.md has no layers drawing between its markers"
    layers = []
    for line in block.group(1).splitlines():
        if not line or line[0] == " ":
            continue  # a description's continuation
        names = re.match(r"^([\w.]+(?:\s*\|\s*[\w.]+)*)", line)
        assert names, f"a layers line that names no module: {line!r}"
        layers.append(split_layer(names.group(1)))
    return layers


def tree_modules() -> list[str]:
    modules = []
    for package in importlinter()["root_packages"]:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules.append(".".join(parts))
    return modules


def test_the_drawing_is_the_contract_top_to_bottom() -> None:
    contract = layers_contract()
    assert contract["type"] == "layers"
    assert drawn_layers() == [split_layer(layer) for layer in contract["layers"]]


def test_the_contract_has_no_exceptions() -> None:
    for contract in importlinter()["contracts"]:
        assert "ignore_imports" not in contract, contract["name"]
        assert not contract.get("unmatched_ignore_imports_alerting"), contract["name"]


def test_every_module_of_the_tree_sits_in_a_layer() -> None:
    layers = [name for layer in layers_contract()["layers"] for name in split_layer(layer)]
    outside = [
        module
        for module in tree_modules()
        # A root package's own __init__ holds nothing but its docstring.
        if module not in importlinter()["root_packages"]
        and not any(module == layer or module.startswith(layer + ".") for layer in layers)
    ]
    assert outside == []


def test_every_top_level_folder_is_covered() -> None:
    layers = {
        name.split(".")[0] for layer in layers_contract()["layers"] for name in split_layer(layer)
    }
    assert layers == set(importlinter()["root_packages"])


def test_the_root_packages_hold_no_code() -> None:
    for package in ("controller",):
        text = (ROOT / package / "__init__.py").read_text()
        assert not re.search(r"^(import|from|def|class) ", text, re.M), package
