"""The function catalog is the route table's functions (main.py's entry points), and each stack
sizes every function.

The runtime's modules are read with ``ast`` and its route table loaded by path: this environment
cannot import the runtime (protobuf < 7 here).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from agent_infra.catalog import catalog, load_route_table
from agent_infra.config import CATALOG
from harness import REPO, STACKS, deploy, stack_config


def defined_functions(module: str) -> set[str]:
    """Names of the functions defined at the top of ``module`` (a file under the repository): by
    ``def``, or bound there from a factory (``get_x, put_x = routes_for(...)``)."""
    tree = ast.parse((REPO / Path(*module.split("."))).with_suffix(".py").read_text())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                elts = target.elts if isinstance(target, ast.Tuple) else [target]
                names.update(e.id for e in elts if isinstance(e, ast.Name))
    return names


def test_catalog_is_exactly_the_route_tables_functions() -> None:
    """main.py exports one entry point per function of the table (tests/unit/test_entry_point_imports.py)."""
    table = load_route_table()
    assert [s.name for s in CATALOG] == [f.name for f in table.FUNCTIONS]
    assert [s.entry_point for s in CATALOG] == [f.name for f in table.FUNCTIONS]
    assert len({s.name for s in CATALOG}) == len(CATALOG)
    assert {"integrations", "goals", "resume"} <= {s.name for s in CATALOG}
    assert "FUNCTIONS" in (REPO / "main.py").read_text()


def test_every_entry_point_is_a_function_module() -> None:
    # infra/tests/test_iam.py reads functions/<entry point>.py to check the Firestore roles, so every
    # handler of a function lives in that module.
    table = load_route_table()
    for spec in CATALOG:
        handlers = [r.handler for r in table.ROUTES if r.function == spec.name]
        event = [f.handler for f in table.FUNCTIONS if f.name == spec.name and f.handler]
        assert handlers or event, spec.name
        for target in handlers + event:
            module, _, attribute = target.partition(":")
            assert module == f"functions.{spec.entry_point}", (spec.name, target)
            assert attribute in defined_functions(module), target


def test_an_http_functions_description_lists_its_routes() -> None:
    runs = next(s for s in CATALOG if s.name == "runs")
    assert runs.route == ("GET /api/agent/runs, GET /api/agent/runs/{runId}, GET /api/agent/runs/{runId}/trace, "
                          "GET /api/agent/runs/{runId}/events, GET /api/agent/approvals, "
                          "DELETE /api/agent/runs/{runId}")


def test_a_function_added_to_the_table_is_in_the_catalog() -> None:
    table = load_route_table()
    extra_fn = table.Function("hello", secrets=("gemini",), firestore="none", default_timeout_s=30)
    extra_route = table.Route("GET", "/api/hello", "hello", "hello", "functions.hello:hello",
                              replies=(table.Reply(200, "hi"),))
    (spec,) = [s for s in catalog((*table.FUNCTIONS, extra_fn), (*table.ROUTES, extra_route)) if s.name == "hello"]
    assert (spec.entry_point, spec.trigger, spec.route, spec.secrets, spec.firestore) == (
        "hello", "http", "GET /api/hello", ("gemini",), "none")
    with pytest.raises(ValueError, match="serves no route"):
        catalog((*table.FUNCTIONS, extra_fn), table.ROUTES)


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_sizes_every_function(stack: str) -> None:
    assert set(stack_config(stack)["agent-runtime:scaling"]) == {s.name for s in CATALOG}


def test_a_stack_without_settings_for_a_function_is_refused(bundle_dir: Path) -> None:
    scaling = dict(stack_config("dev")["agent-runtime:scaling"])
    del scaling["integrations"]
    with pytest.raises(Exception, match=r"no settings for functions \['integrations'\]"):
        deploy("dev", bundle_dir, {"agent-runtime:scaling": scaling})
