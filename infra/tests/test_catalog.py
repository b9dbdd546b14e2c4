"""The function catalog is the bundle's entry points, and each stack sizes every function.

main.py is read with ``ast``: this environment cannot import the runtime (protobuf < 7 here).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from agent_infra.config import CATALOG
from harness import REPO, STACKS, deploy, stack_config


def main_all() -> list[str]:
    """``__all__`` of the bundle's main.py, the names functions-framework can target."""
    tree = ast.parse((REPO / "main.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list | tuple)
            return [str(v) for v in value]
    raise AssertionError("main.py has no __all__")


def main_implementations() -> dict[str, str]:
    """Exported name -> the module of its implementation: main.py either imports it at the top
    (``from functions.run import run``) or defines a wrapper importing it on first call."""
    tree = ast.parse((REPO / "main.py").read_text())
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            out.update({a.asname or a.name: node.module or "" for a in node.names})
        elif isinstance(node, ast.FunctionDef):
            modules = {n.module for n in ast.walk(node) if isinstance(n, ast.ImportFrom)
                       and (n.module or "").startswith("functions.")}
            if len(modules) == 1:
                out[node.name] = modules.pop() or ""
    return out


def test_catalog_is_exactly_main_all() -> None:
    exported = main_all()
    assert sorted(exported) == sorted(s.entry_point for s in CATALOG)
    assert sorted(exported) == sorted(s.name for s in CATALOG)
    assert len({s.name for s in CATALOG}) == len(CATALOG)
    assert {"integrations", "goals", "resume"} <= set(exported)


def test_every_entry_point_is_a_function_module() -> None:
    # infra/tests/test_iam.py reads functions/<entry point>.py to check the Firestore roles.
    implementations = main_implementations()
    for spec in CATALOG:
        module = implementations.get(spec.entry_point)
        assert module == f"functions.{spec.entry_point}", (spec.entry_point, module)
        assert (REPO / Path(*module.split("."))).with_suffix(".py").is_file(), module


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_sizes_every_function(stack: str) -> None:
    assert set(stack_config(stack)["agent-runtime:scaling"]) == {s.name for s in CATALOG}


def test_a_stack_without_settings_for_a_function_is_refused(bundle_dir: Path) -> None:
    scaling = dict(stack_config("dev")["agent-runtime:scaling"])
    del scaling["integrations"]
    with pytest.raises(Exception, match=r"no settings for functions \['integrations'\]"):
        deploy("dev", bundle_dir, {"agent-runtime:scaling": scaling})
