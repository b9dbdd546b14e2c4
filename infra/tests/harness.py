"""Runs the Pulumi program offline for one stack and records every resource it declares.

``pulumi.runtime.set_mocks`` replaces the engine and the Google provider only: the program under
test (config loading, catalog, grants, wiring) runs for real. The mock provider echoes inputs as
outputs and fills in the few computed outputs the program reads (emails, URIs, ids).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import yaml
from agent_infra import program

INFRA = Path(__file__).resolve().parents[1]
REPO = INFRA.parent  # the runtime's source (read as text: this venv cannot import it)
STACKS = ("dev", "staging", "prod")
PROJECT_NUMBER = "123456789012"
IMAGE = "europe-west1-docker.pkg.dev/p/agent-runtime/host-agent@sha256:" + "ab" * 32
SANDBOX_IMAGE = "europe-west1-docker.pkg.dev/p/agent-runtime/sandbox@sha256:" + "cd" * 32


@dataclass(frozen=True)
class Declared:
    typ: str
    name: str
    inputs: dict[str, Any]


class RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.resources: list[Declared] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.resources.append(Declared(args.typ, args.name, dict(args.inputs)))
        out = dict(args.inputs)
        project = out.get("project", "mock-project")
        if args.typ == "gcp:serviceaccount/account:Account":
            out["email"] = f"{out['accountId']}@{project}.iam.gserviceaccount.com"
            out["name"] = f"projects/{project}/serviceAccounts/{out['email']}"
            return out["email"], out
        if args.typ == "gcp:cloudfunctionsv2/function:Function":
            out["serviceConfig"] = {**out.get("serviceConfig", {}), "service": out["name"],
                                    "uri": f"https://{out['name']}-mock.a.run.app"}
            return f"projects/{project}/locations/{out['location']}/functions/{out['name']}", out
        if args.typ == "gcp:pubsub/topic:Topic":
            return f"projects/{project}/topics/{out['name']}", out
        if args.typ == "gcp:cloudrunv2/service:Service":
            out["uri"] = f"https://{out['name']}-mock.a.run.app"
            return f"projects/{project}/locations/{out['location']}/services/{out['name']}", out
        if args.typ == "gcp:cloudrunv2/job:Job":
            return f"projects/{project}/locations/{out['location']}/jobs/{out['name']}", out
        if args.typ == "gcp:projects/serviceIdentity:ServiceIdentity":
            out["email"] = f"service-{PROJECT_NUMBER}@gcp-sa-{out['service'].split('.')[0]}.iam.gserviceaccount.com"
            return f"projects/{project}/services/{out['service']}", out
        if args.typ == "gcp:cloudscheduler/job:Job":
            return f"projects/{project}/locations/{out['region']}/jobs/{out['name']}", out
        return f"{args.name}-id", out

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        if args.token == "gcp:organizations/getProject:getProject":
            return {"number": PROJECT_NUMBER, "projectId": args.args.get("projectId")}
        raise AssertionError(f"unexpected provider call {args.token}")


def stack_config(stack: str) -> dict[str, Any]:
    data = yaml.safe_load((INFRA / f"Pulumi.{stack}.yaml").read_text())
    config: dict[str, Any] = data["config"]
    return config


def deploy(stack: str, bundle_dir: Path, overrides: dict[str, Any] | None = None) -> list[Declared]:
    """Run the program for ``stack`` (its real Pulumi.<stack>.yaml) and return what it declared."""
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project="agent-runtime", stack=stack, preview=False)
    image_file = bundle_dir.parent / "host-agent-image.txt"  # what scripts/host_agent_image.sh writes
    if not image_file.exists():
        image_file.write_text(f"{IMAGE}\n")
    host_agent = {**stack_config(stack)["agent-runtime:hostAgent"], "imageFile": str(image_file)}
    sandbox_file = bundle_dir.parent / "sandbox-image.txt"  # what cloudbuild.yaml's image step writes
    if not sandbox_file.exists():
        sandbox_file.write_text(f"{SANDBOX_IMAGE}\n")
    box = {**stack_config(stack)["agent-runtime:sandbox"], "imageFile": str(sandbox_file)}
    config = {**stack_config(stack), "agent-runtime:bundleDir": str(bundle_dir), "agent-runtime:hostAgent": host_agent,
              "agent-runtime:sandbox": box, **(overrides or {})}
    pulumi.runtime.set_all_config({k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()})
    pulumi.runtime.test(lambda: program.build() and None)()
    return mocks.resources


FUNCTION = "gcp:cloudfunctionsv2/function:Function"
ACCOUNT = "gcp:serviceaccount/account:Account"


def of_type(declared: list[Declared], typ: str) -> list[Declared]:
    return [d for d in declared if d.typ == typ]


def named(declared: list[Declared], name: str) -> Declared:
    matches = [d for d in declared if d.name == name]
    assert len(matches) == 1, f"expected one resource named {name}, found {len(matches)}"
    return matches[0]


def functions(declared: list[Declared]) -> dict[str, dict[str, Any]]:
    """Deployed function name (agent-run, ...) -> its inputs."""
    return {d.inputs["name"]: d.inputs for d in of_type(declared, FUNCTION)}


def sa_member(declared: list[Declared], logical: str) -> str:
    return f"serviceAccount:{named(declared, logical).inputs['accountId']}@" \
           f"{named(declared, logical).inputs['project']}.iam.gserviceaccount.com"
