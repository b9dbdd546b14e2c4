"""Token figures of a model call or a sum of calls: the one ``Usage`` type of the runtime.

A leaf (pydantic only): model adapters produce it, records and events store it (camelCase on the
wire, snake_case in Python; both spellings are accepted when reading).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Usage(BaseModel):
    """``inputTokens`` (prompt), ``outputTokens`` (candidates), ``thinkingTokens`` (thoughts),
    ``cachedTokens`` (prompt tokens served from the cache) and ``totalTokens`` as the model reports
    them; ``requests`` counts HTTP attempts."""

    # defer_build: the validator is built when first used (a cold start that reads no usage never does)
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True, extra="ignore",
                              defer_build=True)

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    cached_tokens: int = 0
    total_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(requests=self.requests + other.requests,
                     input_tokens=self.input_tokens + other.input_tokens,
                     output_tokens=self.output_tokens + other.output_tokens,
                     thinking_tokens=self.thinking_tokens + other.thinking_tokens,
                     cached_tokens=self.cached_tokens + other.cached_tokens,
                     total_tokens=self.total_tokens + other.total_tokens)

    def plus(self, other: Usage) -> Usage:
        return self + other
