"""The layering of issue 9 (docs/architecture.md, "Layers"), enforced on the source:

- ``shared/`` has no import cycle between modules, nor between its packages (every import counts:
  those inside functions, under ``if TYPE_CHECKING:`` and under ``if __name__ == "__main__":`` too —
  a cycle a type checker or a script walks is a cycle of the design); ``package_cycles`` takes any
  package root (``hostagent/``);
- the durability and state packages import nothing of the agent domain;
- the state package only performs writes: it imports no events, no failure decisions of units
  (``shared.failures``: the loop's stops decide why a unit fails) and nothing of HTTP;
- plans sit below the chat agent (it starts them): ``shared.plans`` imports nothing of ``shared.agent``;
- no module outside ``shared/state/`` builds a ``Write`` or a document path (``paths``);
- ``functions/`` holds no business rule: it reaches the store only through ``shared``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The model *contract* (shared.models.base: turns, requests, usage) is a leaf the store may use to
# keep turns verbatim; the adapters and the offline/scripted models are domain.
DOMAIN = ("shared.agent", "shared.loop", "shared.tools", "shared.models.gemini", "shared.models.factory",
          "shared.models.offline", "shared.models.scripted", "shared.goals", "shared.connectors",
          "shared.runtime", "shared.kernel", "shared.policy", "shared.instructions", "shared.openapi",
          "shared.auth", "shared.web", "shared.usage.meter", "shared.usage.views", "shared.usage.params")


def module_name(path: Path, base: Path = ROOT) -> str:
    rel = path.relative_to(base).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(tree: ast.AST, package: str, *, type_checking: bool = True) -> set[str]:
    """Modules imported anywhere in the module (``type_checking=False``: only by code that can
    run, ``if TYPE_CHECKING:`` blocks left out)."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if not type_checking and isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def runtime_imports(tree: ast.AST, package: str) -> set[str]:
    """Modules imported by code that can run (TYPE_CHECKING blocks excluded)."""
    return imports(tree, package, type_checking=False)


def graph(root: Path | str) -> dict[str, set[str]]:
    """The import graph of the package at ``root`` (a directory; a name is taken under the repo),
    every import counted (TYPE_CHECKING included)."""
    top = ROOT / root if isinstance(root, str) else root
    files = {module_name(p, top.parent): p for p in top.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        imported = imports(ast.parse(path.read_text()), package)
        edges[name] = {m for m in imported if m in files and m != name}
    return edges


def package_cycles(root: Path | str) -> list[list[str]]:
    """The import cycles inside the package at ``root`` (TYPE_CHECKING and ``__main__`` imports included)."""
    return cycles(graph(root))


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            strong(v)
    return found


def packages(edges: dict[str, set[str]], depth: int = 2) -> dict[str, set[str]]:
    """The graph of packages: each module counts as its package (``shared.plans.host`` is
    ``shared.plans``; a top-level module ``shared.kernel`` is its own), an import between two
    modules as an import between their packages."""
    out: dict[str, set[str]] = {}

    def unit(module: str) -> str:
        return ".".join(module.split(".")[:depth])

    for module, imported in edges.items():
        mine = out.setdefault(unit(module), set())
        mine.update(unit(i) for i in imported if unit(i) != unit(module))
    return out


def test_shared_has_no_package_cycle() -> None:
    """Issue 27: no cycle between the packages of ``shared/`` either (there was one through loop,
    plans, agent, runtime, kernel and events; models, state and usage; connectors and tools)."""
    grouped = packages(graph("shared"))
    assert {"shared.loop", "shared.plans", "shared.agent", "shared.events", "shared.state"} <= set(grouped)
    assert cycles(grouped) == []


def test_the_package_cycle_check_can_fail() -> None:
    edges = {"shared.a.x": {"shared.b.y"}, "shared.b.y": set(), "shared.b.z": {"shared.a.w"}, "shared.a.w": set()}
    assert cycles({m: i for m, i in edges.items()}) == []  # no cycle between modules
    assert cycles(packages(edges)) == [["shared.a", "shared.b"]]


def test_shared_has_no_import_cycle() -> None:
    assert len(graph("shared")) > 60  # the scan sees the package
    assert package_cycles("shared") == []


def test_hostagent_has_no_import_cycle() -> None:
    assert len(graph("hostagent")) > 15  # the scan sees the package
    assert package_cycles("hostagent") == []


def test_the_cycle_check_can_fail() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def test_the_cycle_check_sees_type_checking_and_main_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import b\n")
    (pkg / "b.py").write_text("import pkg.a\n")
    (pkg / "c.py").write_text("if __name__ == '__main__':\n    from pkg.d import x\n")
    (pkg / "d.py").write_text("from pkg import c\n")
    assert package_cycles(pkg) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.d"]]


def test_durability_and_state_import_nothing_of_the_agent_domain() -> None:
    edges = graph("shared")
    bad = {(m, i) for m, imports in edges.items() if m.startswith(("shared.durable", "shared.state"))
           for i in imports if i.startswith(DOMAIN)}
    assert bad == set()
    assert any(m.startswith("shared.durable.") for m in edges) and any(m.startswith("shared.state.") for m in edges)


STATE_MUST_NOT_IMPORT = ("shared.events", "shared.failures",
                         "shared.web", "shared.http_errors", "flask", "werkzeug")


def state_decisions(edges: dict[str, set[str]], imported: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(module, import) pairs where a module of ``shared.state`` imports events, failure decisions or HTTP."""
    return {(m, i) for m in edges if m.startswith("shared.state") for i in imported[m]
            if any(i == p or i.startswith(p + ".") for p in STATE_MUST_NOT_IMPORT)}


def all_imports(top: str) -> dict[str, set[str]]:
    """Every import of every module of ``top`` (outside modules too)."""
    out: dict[str, set[str]] = {}
    for path in (ROOT / top).rglob("*.py"):
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        out[name] = imports(ast.parse(path.read_text()), package)
    return out


def test_the_state_package_decides_no_stop() -> None:
    imported = all_imports("shared")
    assert state_decisions(graph("shared"), imported) == set()
    assert any(m.startswith("shared.state.") for m in imported)


def test_the_state_check_can_fail() -> None:
    edges = {"shared.state.x": set(), "shared.loop.y": set()}
    imported = {"shared.state.x": {"shared.events", "shared.failures.FailureCode", "shared.state.paths"},
                "shared.loop.y": {"shared.events"}}
    assert state_decisions(edges, imported) == {("shared.state.x", "shared.events"),
                                                ("shared.state.x", "shared.failures.FailureCode")}


def test_plans_import_nothing_of_the_agent() -> None:
    edges = graph("shared")
    bad = {(m, i) for m, imports in edges.items() if m.startswith("shared.plans")
           for i in imports if i.startswith("shared.agent")}
    assert bad == set()
    assert any(i.startswith("shared.plans") for m, imports in edges.items() if m.startswith("shared.agent")
               for i in imports)  # the other way round is the expected direction


def layout_violations(top: str) -> list[str]:
    """Modules outside shared/state that build a Write or reach the paths module."""
    found: list[str] = []
    for path in (ROOT / top).rglob("*.py"):
        name = module_name(path)
        if not name.startswith("shared.state"):
            found += violations_in(name, path.read_text())
    return found


def violations_in(name: str, source: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Write":
            found.append(f"{name}:{node.lineno} builds a Write")
        if isinstance(node, ast.ImportFrom) and (node.module == "shared.state.paths" or (
                node.module == "shared.state" and any(a.name == "paths" for a in node.names))):
            found.append(f"{name}:{node.lineno} imports the document paths")
    return sorted(found)


def test_only_the_state_package_builds_writes_and_document_paths() -> None:
    assert layout_violations("shared") == []
    assert layout_violations("functions") == []


def test_the_layout_check_can_fail() -> None:
    source = 'from shared.state import paths\nWrite("set", paths.run("r"), {})\n'
    assert violations_in("shared.agent.x", source) == ["shared.agent.x:1 imports the document paths",
                                                      "shared.agent.x:2 builds a Write"]


def test_functions_hold_no_business_rule() -> None:
    """Entry points parse, authenticate, call ``shared`` and render: they never touch the store
    or its records directly, nor the loop's internals."""
    allowed_shared = ("shared.runtime", "shared.web", "shared.errors", "shared.api", "shared.responses",
                      "shared.logs", "shared.config", "shared.agent.run_handlers", "shared.agent.approvals",
                      "shared.agent.streaming", "shared.goals.contracts", "shared.goals.service",
                      "shared.connectors", "shared.connectors.integrations_api", "shared.usage.params",
                      "shared.usage.views", "shared.session_handlers", "shared.http_errors", "shared.runs_list",
                      "shared.query", "shared.approvals_inbox", "shared.session_follow",
                      "shared.ndjson", "shared.workspaces", "shared.tools.mcp_tools", "shared.a2a.app",
                      "shared.a2a.asgi_bridge", "shared.a2a.card", "shared.agui.endpoint", "shared.agui.inputs",
                      "shared.agent.approval_edits", "shared.agent.webhooks", "shared.user_data",
                      "shared.agent.schedules", "shared.admin", "shared.trace_view")
    for path in (ROOT / "functions").glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = runtime_imports(tree, "functions")
        ours = {m for m in imported if m.startswith("shared.") and m.count(".") >= 1}
        modules = {m for m in ours if any(m == a or m.startswith(a + ".") for a in allowed_shared)}
        stray = {m for m in ours - modules if not any(m.rsplit(".", 1)[0] == a or a.startswith(m + ".")
                                                     for a in allowed_shared)}
        assert stray == set(), (path.name, stray)
        calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
        assert not calls & {"commit", "run_transaction", "query"}, path.name
