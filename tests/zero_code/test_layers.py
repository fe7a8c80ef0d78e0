"""The instrumentation's layers name every module of ``devicewatch.integrations``.

import-linter checks a contract's exhaustiveness only for a container whose children are the
layers, and the callbacks sit between the zero-code modules, so ``integrations-layers`` lists
every module by name; this is its exhaustiveness: a new module without a layer fails here.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "devicewatch" / "integrations"


def layered() -> list[set[str]]:
    """The contract's layers, each a set of module names."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["id"] == "integrations-layers"]
    return [{name.strip() for name in layer.split("|")} for layer in contract["layers"]]


def module_names() -> set[str]:
    """Every module under integrations but the packages' ``__init__`` (and ``startup/``, no package)."""
    names = set()
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] != "__init__" and "startup" not in parts:
            names.add(".".join(parts))
    return names


def test_every_module_of_the_integrations_has_a_layer_and_no_layer_names_a_module_that_is_gone():
    named = set().union(*layered())
    assert module_names() - named == set()
    assert named - module_names() == set()


def test_the_loop_sits_over_its_parts_and_they_over_the_interface_and_the_table_of_frameworks():
    zero_code = "devicewatch.integrations.zero_code."
    depth = {name.removeprefix(zero_code): n for n, layer in enumerate(layered()) for name in layer}
    assert depth["process_state"] < depth["loop"]
    for part in ("training_pass", "waits", "step_counts", "evaluations", "declared"):
        assert depth["loop"] < depth[part] < depth["loop_interface"]
    assert depth["frameworks"] == depth["loop_interface"] == len(layered()) - 1
