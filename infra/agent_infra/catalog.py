"""The function catalogue: one spec per deployed function, derived from the route table.

The runtime's ``shared/routes.py`` is the one place functions and routes are written; this module
loads it by path (pure data and the standard library: this environment cannot import the runtime,
pulumi needs protobuf < 7) and keeps what a deployment needs. Nothing here imports pulumi.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

ROUTE_TABLE = Path(__file__).resolve().parents[2] / "shared" / "routes.py"

SecretName = Literal["gemini", "credentials", "google_oauth"]
# What a function does with Firestore: the source of its project role (iam.FIRESTORE_ROLES).
FirestoreAccess = Literal["none", "read", "write"]


@dataclass(frozen=True)
class FunctionSpec:
    """One entry point of the bundle and the access it needs.

    ``deadline_bound`` functions drive the agent loop, so their timeout follows the run deadline.
    ``trigger`` "http" functions are invoked by the backend; "pubsub" by the resume push subscription.
    ``firestore`` is what the function's code does with the store (none / read / write).
    ``route``: what it serves (its routes, or its trigger), for the function's description.
    ``admin``: it serves the admin API (a route under :data:`ADMIN_PREFIX`), so it is told the
    stack's admin service accounts and they may invoke it.
    """

    name: str
    entry_point: str
    trigger: Literal["http", "pubsub"]
    route: str
    secrets: tuple[SecretName, ...]
    publishes_resume: bool
    deadline_bound: bool
    default_timeout_s: int
    firestore: FirestoreAccess
    admin: bool = False


ADMIN_PREFIX = "/api/admin/"
"""The admin API's routes (``shared/admin.py``): the functions serving one check the admin role."""


def load_route_table(path: Path = ROUTE_TABLE) -> ModuleType:
    """``shared/routes.py`` of the runtime, imported from its file (not as the ``shared`` package)."""
    name = "agent_runtime_routes"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the route table {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would: its classes name their module
    spec.loader.exec_module(module)
    return module


def catalog(functions: Any, routes: Any) -> tuple[FunctionSpec, ...]:
    """One spec per function of the table; an HTTP function's ``route`` lists its routes."""
    specs = []
    for fn in functions:
        served = [f"{r.method} {r.path}" for r in routes if r.function == fn.name]
        if fn.trigger == "http" and not served:
            raise ValueError(f"function {fn.name} serves no route of the table")
        specs.append(FunctionSpec(
            name=fn.name, entry_point=fn.name, trigger=fn.trigger,
            route=", ".join(served) if fn.trigger == "http" else fn.summary, secrets=tuple(fn.secrets),
            publishes_resume=fn.publishes_resume, deadline_bound=fn.deadline_bound,
            default_timeout_s=fn.default_timeout_s, firestore=fn.firestore,
            admin=any(r.path.startswith(ADMIN_PREFIX) for r in routes if r.function == fn.name)))
    return tuple(specs)


_TABLE = load_route_table()
CATALOG: tuple[FunctionSpec, ...] = catalog(_TABLE.FUNCTIONS, _TABLE.ROUTES)
