"""The composite indexes are exactly the ones the runtime's queries need.

Every ``Query(...)`` in ../shared is read with ``ast`` (collection, equality filters, order). A
query with an equality filter and an order on another field needs a composite index (filtered
fields, then the order field in its direction); the others are served by Firestore's automatic
single-field indexes. Dropping an index, renaming a queried field or adding such a query without
its index fails here, and so does an index no query uses.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from agent_infra.database import INDEXES, IndexSpec
from harness import REPO

SHARED = REPO / "shared"
PATHS = SHARED / "state" / "paths.py"


@dataclass(frozen=True)
class FoundQuery:
    at: str
    collection: str
    filters: tuple[str, ...]
    order_by: str | None
    descending: bool

    def needed_index(self) -> IndexSpec | None:
        if not self.filters or self.order_by is None or self.order_by in self.filters:
            return None
        return IndexSpec(self.collection, (*((f, "ASCENDING") for f in self.filters),
                                           (self.order_by, "DESCENDING" if self.descending else "ASCENDING")))


def _last_segment(path: str, at: str) -> str:
    segments = path.strip("/").split("/")
    assert len(segments) % 2 == 1, f"{at}: {path!r} is not a collection path"
    return segments[-1]


def _path_collections() -> dict[str, str]:
    """paths.py function name -> the collection id of the path it returns (collections only)."""
    out: dict[str, str] = {}
    for fn in ast.parse(PATHS.read_text()).body:
        if not isinstance(fn, ast.FunctionDef) or not isinstance(fn.body[-1], ast.Return):
            continue
        value = fn.body[-1].value
        if isinstance(value, ast.JoinedStr):
            template = "".join(str(v.value) if isinstance(v, ast.Constant) else "{}" for v in value.values)
        elif isinstance(value, ast.Constant) and isinstance(value.value, str):
            template = value.value
        else:
            continue
        segments = template.strip("/").split("/")
        if len(segments) % 2 == 1 and "{" not in segments[-1]:
            out[fn.name] = segments[-1]
    return out


def _constants(tree: ast.Module) -> dict[str, str]:
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for t in node.targets if isinstance(t, ast.Name)}


def _literal(node: ast.expr | None, at: str, what: str) -> object:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise AssertionError(f"{at}: {what} is not a literal; teach infra/tests/test_indexes.py to read it") from None


def _filter_fields(node: ast.expr | None, at: str) -> tuple[str, ...]:
    """The field names of ``where=(("field", value), ...)`` (the values may be variables)."""
    if node is None:
        return ()
    pairs = node.elts if isinstance(node, ast.Tuple | ast.List) else None
    fields = [p.elts[0].value for p in pairs or () if isinstance(p, ast.Tuple) and len(p.elts) == 2
              and isinstance(p.elts[0], ast.Constant) and isinstance(p.elts[0].value, str)]
    if pairs is None or len(fields) != len(pairs):
        raise AssertionError(f"{at}: where's field names are not literals; teach infra/tests/test_indexes.py")
    return tuple(str(f) for f in fields)


def runtime_queries() -> list[FoundQuery]:
    files = sorted(SHARED.rglob("*.py"))
    trees = {f: ast.parse(f.read_text()) for f in files}
    every_constant: dict[str, str] = {}
    for tree in trees.values():
        every_constant.update(_constants(tree))
    path_collections = _path_collections()
    found: list[FoundQuery] = []
    for file, tree in trees.items():
        local = {**every_constant, **_constants(tree)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if not ((isinstance(func, ast.Name) and func.id == "Query")
                    or (isinstance(func, ast.Attribute) and func.attr == "Query")):
                continue
            at = f"{file.relative_to(REPO)}:{node.lineno}"
            kw = {k.arg: k.value for k in node.keywords}
            coll = node.args[0] if node.args else kw.get("collection")
            if isinstance(coll, ast.Constant) and isinstance(coll.value, str):
                collection = _last_segment(coll.value, at)
            elif isinstance(coll, ast.Name) and coll.id in local:
                collection = _last_segment(local[coll.id], at)
            elif isinstance(coll, ast.Call) and isinstance(coll.func, ast.Attribute) \
                    and isinstance(coll.func.value, ast.Name) and coll.func.value.id == "paths" \
                    and coll.func.attr in path_collections:
                collection = path_collections[coll.func.attr]
            elif kw.get("order_by") is None:
                # Read by id, with equality filters only (a walk over collections named at run time,
                # shared/state/user_data_repo.py): Firestore's automatic indexes serve it anywhere.
                collection = "*"
            else:
                raise AssertionError(f"{at}: cannot tell the collection; teach infra/tests/test_indexes.py")
            filters = _filter_fields(kw.get("where"), at)
            order_node = kw.get("order_by")
            order_by = local[order_node.id] if isinstance(order_node, ast.Name) and order_node.id in local \
                else _literal(order_node, at, "order_by")
            assert order_by is None or isinstance(order_by, str), at
            descending = bool(_literal(kw.get("descending"), at, "descending"))
            found.append(FoundQuery(at, collection, filters, order_by, descending))
    return found


def _key(spec: IndexSpec) -> tuple[str, str, frozenset[str], tuple[str, str]]:
    """Equality fields may come in any order; the order field is last."""
    return spec.collection, spec.scope, frozenset(spec.fields[:-1]), spec.fields[-1]


def test_the_scan_sees_the_runtime_queries() -> None:
    queries = runtime_queries()
    # A scan that finds nothing would make the tests below pass vacuously.
    assert len(queries) >= 7, queries
    collections = {q.collection for q in queries}
    assert {"outbox", "runs", "memories", "messages", "events"} <= collections, collections
    text_calls = sum(f.read_text().count("Query(") for f in SHARED.rglob("*.py"))
    assert text_calls == len(queries), "a Query( the ast scan did not read"


def test_every_query_needing_a_composite_index_has_one() -> None:
    declared = {_key(s) for s in INDEXES}
    for q in runtime_queries():
        need = q.needed_index()
        if need is not None:
            assert _key(need) in declared, f"{q.at}: {q} needs the composite index {need}"


def test_every_declared_index_serves_a_query() -> None:
    needed = {_key(n) for q in runtime_queries() if (n := q.needed_index()) is not None}
    for spec in INDEXES:
        assert _key(spec) in needed, f"no query in shared/ uses {spec}: remove it"
    assert len({_key(s) for s in INDEXES}) == len(INDEXES)


def test_the_sweeps_are_indexed() -> None:
    # The two recovery queries of shared/agent/{approvals,resume}.py, named so a silent change shows.
    keys = {_key(s) for s in INDEXES}
    assert _key(IndexSpec("outbox", (("status", "ASCENDING"), ("createdAt", "ASCENDING")))) in keys
    assert _key(IndexSpec("runs", (("status", "ASCENDING"), ("leaseExpiresAt", "ASCENDING")))) in keys


def test_scanner_reads_paths_and_needs() -> None:
    assert _path_collections()["memories"] == "memories"
    assert "memory" not in _path_collections()  # a document path
    q = FoundQuery("x", "c", ("a",), "b", True)
    assert q.needed_index() == IndexSpec("c", (("a", "ASCENDING"), ("b", "DESCENDING")))
    assert FoundQuery("x", "c", (), "b", True).needed_index() is None
    assert FoundQuery("x", "c", ("a",), None, False).needed_index() is None
