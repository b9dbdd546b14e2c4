"""``Constrained``: the base of tool-argument types that carry their own validation and JSON schema.

A subclass sets ``schema`` (a pydantic-core schema, e.g. with an after-validator that raises
``PydanticCustomError``) and ``json`` (what the model's function declaration says). Unlike
``Annotated`` metadata, it survives ``get_type_hints``, which the registry uses to build a tool's
arguments model.
"""

from __future__ import annotations

from typing import Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema


class Constrained:
    schema: core_schema.CoreSchema
    json: JsonSchemaValue

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return cls.schema

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: core_schema.CoreSchema,
                                     handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return dict(cls.json)
