"""The rules planner picks tools and parameters from the host's JSON Schemas and descriptions."""

from __future__ import annotations

import asyncio
from typing import Any

from hostagent.memory import AgentMemory, WorkingMemory
from hostagent.perception import PerceivedContext, signals
from hostagent.plans import PlannedAction
from hostagent.protocol import ToolSpec
from hostagent.rules_planner import RulesPlanner, short_answer, title_guess
from hostagent.screen import read_screen
from hostagent.tool_choice import contact_params, find_search_tool, single_param


def _tool(name: str, params: dict[str, Any], description: str | None = None) -> ToolSpec:
    return ToolSpec(name=name, description=description, params=params)


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or [], "additionalProperties": False}


SELECT = _tool("select_movie", _obj({"movieId": {"type": "string"}}, ["movieId"]), "Open a movie.")


def test_the_query_like_string_parameter_wins_whatever_the_tool_is_called() -> None:
    tools = [SELECT, _tool("lookup_titles", _obj({"q": {"type": "string"}, "day": {"type": "string"}}))]
    found = find_search_tool(tools)
    assert found is not None and found.tool.name == "lookup_titles"
    assert found.params("Dune", "2026-07-01") == {"q": "Dune", "day": "2026-07-01"}
    assert found.params("Dune", None) == {"q": "Dune"}


def test_a_description_that_says_search_makes_its_only_string_the_query() -> None:
    tools = [_tool("catalogue", _obj({"words": {"type": "string"}}), "Find films by their name."), SELECT]
    found = find_search_tool(tools)
    assert found is not None and (found.tool.name, found.query_param, found.date_param) == ("catalogue", "words", None)


def test_no_tool_fits_when_none_takes_free_text() -> None:
    tools = [SELECT, _tool("pick_day", _obj({"date": {"type": "string", "pattern": "^[0-9-]+$"}}, ["date"])),
             _tool("filter_genre", _obj({"genre": {"type": "string", "enum": ["drama", "comedy"]}}, ["genre"]),
                   "Filter the list by genre."),
             _tool("search_cinema", _obj({"query": {"type": "string"}, "cinemaId": {"type": "string"}},
                                         ["query", "cinemaId"]), "Search needs a cinema too.")]
    assert find_search_tool(tools) is None  # ids, enums, patterns and extra required params do not fit


def test_parameter_names_come_from_the_schema() -> None:
    assert single_param(_tool("choose", _obj({"film": {"type": "string"}}, ["film"])), "movieId") == "film"
    assert single_param(_tool("choose", _obj({"x": {"type": "string"}})), "movieId") == "x"
    assert single_param(None, "movieId") == "movieId"
    booker = _tool("set_buyer", _obj({"fullName": {"type": "string"}, "mailAddress": {"type": "string"}}))
    assert contact_params(booker, "Ada", "ada@example.com") == {"fullName": "Ada", "mailAddress": "ada@example.com"}


def test_the_title_the_goal_names() -> None:
    assert title_guess(["Book 2 seats for Dune on 2026-07-01 in the evening, name Grace Hopper"]) == "Dune"
    assert title_guess(["Two tickets for Inside Out 2 tomorrow"]) == "Inside Out 2"
    assert title_guess(["I want to see The Wild Robot, email a@b.co"]) == "The Wild Robot"
    assert title_guess(["Book seats for two people"]) is None
    assert title_guess(["Book for Dune", "Actually make it for Oppenheimer instead"]) == "Oppenheimer"


def test_the_answer_to_which_movie_is_searched_for() -> None:
    search = _tool("search_movies", _obj({"query": {"type": "string"}}), "Search the programme.")
    memory = AgentMemory(working=WorkingMemory(goal="Book 2 seats tonight"))
    planner = RulesPlanner()

    def plan(user_texts: list[str]) -> PlannedAction:
        context = PerceivedContext(sessionId="s", stage="browse", screen=read_screen({"components": []}), uiSpec={},
                                   toolSchema=[search, SELECT], lastUserMessage=None, messageHistoryTail=[],
                                   goal="Book 2 seats tonight", userTexts=user_texts,
                                   signals=signals(["Book 2 seats tonight", *user_texts]))
        return asyncio.run(planner.plan(context, memory)).nextAction

    assert plan([]).payload["kind"] == "info"  # the interpretation first
    question = plan([])
    assert question.payload == {"text": "Which movie would you like to see?", "kind": "question"}
    answer = plan(["Oppenheimer, please!"])
    assert answer.tool == "search_movies" and answer.params == {"query": "Oppenheimer"}
    assert short_answer("My name is Ada, ada@example.com") is None
    assert short_answer("I'd like the movie Inside Out 2, thanks") == "Inside Out 2"
