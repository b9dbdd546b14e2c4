"""The SDKs' own first use, as a function: the second cold-start baseline of ``run``, ``stream`` and
``goals`` (bench/run.py, docs/benchmarks.md ``cold_start``).

The issue's baseline (the trivial function's start plus the SDK imports) leaves out what any
function that uses these SDKs pays on its first request before doing anything of its own: creating
the clients (google-genai loads the TLS trust store twice and imports its HTTP stack, ~65 ms),
opening the gRPC channel to Firestore on the first RPC, and the SDK completing its pydantic types
on the first model call (~40 ms). This function does exactly that and nothing else: it imports
both SDKs at module load, and its first request creates a Firestore client, reads one document and
writes one, creates a Gemini client and streams one model call (one tool declared) from the same
fake server, through the same functions-framework CLI. A function of ours measured against it
pays only for its own code and for the work of its request beyond one read, one write and one
model call.
"""

from __future__ import annotations

import os
from typing import Any

from google import genai
from google.cloud import firestore
from google.genai import types


def first_use(request: Any) -> str:
    db = firestore.Client(project=os.environ["GOOGLE_CLOUD_PROJECT"])
    doc = db.collection("benchFirstUse").document("doc")
    doc.get()
    doc.set({"n": 1})
    client = genai.Client(api_key=os.environ["GEMINI_API_KEY"], http_options=types.HttpOptions(
        base_url=os.environ["GEMINI_BASE_URL"], api_version="v1beta"))
    tool = types.FunctionDeclaration(name="search_memory", description="Search the user's memories.",
                                     parameters_json_schema={"type": "object",
                                                             "properties": {"query": {"type": "string"}}})
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[tool])],
                                         automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    for _ in client.models.generate_content_stream(model=os.environ["GEMINI_MODEL"], contents="hello",
                                                   config=config):
        pass
    return "ok"
