"""Pulumi entry point: ``pulumi up --stack dev|staging|prod`` from this directory."""

from agent_infra.program import build

build()
