"""docs/architecture.md lists every module of the five packages, under its package, and the layers import one way."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("classwatch", "deployments", "flows", "tasks", "metrics_core")
#: What each layer may import from the project (the layers below it).
BELOW = {"classwatch": {"deployments", "flows", "tasks", "metrics_core"}, "deployments": {"flows", "tasks", "metrics_core"},
         "flows": {"tasks", "metrics_core"}, "tasks": {"metrics_core"}, "metrics_core": set()}
MODULES = sorted(p.relative_to(ROOT) for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _listed() -> dict[str, set[str]]:
    """Package folder -> module files named in its '### `folder/`' table of docs/architecture.md."""
    out: dict[str, set[str]] = {}
    for block in re.split(r"^### ", (ROOT / "docs" / "architecture.md").read_text(), flags=re.M)[1:]:
        folder = block.split("`")[1].rstrip("/")
        out[folder] = set(re.findall(r"^\| `([\w.]+\.py)` \|", block, flags=re.M))
    return out


def test_every_module_is_listed_under_its_package():
    listed = _listed()
    missing = [str(m) for m in MODULES if m.name not in listed.get(str(m.parent), set())]
    assert not missing, f"docs/architecture.md, 'Every module': add {missing}"
    gone = [f"{folder}/{name}" for folder, names in listed.items() for name in names
            if not (ROOT / folder / name).exists()]
    assert not gone, f"docs/architecture.md lists modules that do not exist: {gone}"


@pytest.mark.parametrize("module", MODULES, ids=str)
def test_imports_go_one_way_down(module):
    layer = module.parts[0]
    tree = ast.parse((ROOT / module).read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level]
    up = {name.split(".")[0] for name in names} & (set(PACKAGES) - BELOW[layer] - {layer})
    assert not up, f"{module} imports {sorted(up)}, a layer above or beside it"
    if layer == "metrics_core":
        impure = {name.split(".")[0] for name in names} & {"prefect", "mlflow", "pydantic", "prefect_dask"}
        assert not impure, f"{module} imports {sorted(impure)}: metrics_core stays pure"
