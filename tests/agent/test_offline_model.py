"""The offline model used by `make dev` without a key: it picks tools by name or by what they do,
fills their arguments from the prompt and the schema, plans readably, labels itself once per run and
streams at a pace."""

from __future__ import annotations

import itertools
import json
import re
import time

import pytest

from shared.models.base import FunctionResponse, ModelRequest, Part, ToolDeclaration, Turn
from shared.models.offline import LABEL, OfflineModel
from shared.models.offline_plans import clauses
from shared.plans.plan_state import task_turn
from shared.plans.planner import ACT_INSTRUCTION, PlanDraft, Reflection
from shared.plans.structured import response_schema_of
from shared.state.plan_records import PlanTask
from shared.tools import default_registry

TIME = [ToolDeclaration(name="time_get_current_time", description="Get current time in a specific timezones",
                        parameters={"type": "object", "properties": {"timezone": {"type": "string"}},
                                    "required": ["timezone"]}),
        ToolDeclaration(name="time_convert_time", description="Convert time between timezones",
                        parameters={"type": "object", "properties": {"source_timezone": {"type": "string"},
                                                                      "time": {"type": "string"},
                                                                      "target_timezone": {"type": "string"}},
                                    "required": ["source_timezone", "time", "target_timezone"]})]
TOOLS = default_registry().declarations() + TIME


def ask(text: str, tools: list[ToolDeclaration] | None = None) -> Turn:
    request = ModelRequest(turns=[Turn(role="user", parts=[Part(text=text)])], tools=TOOLS if tools is None else tools)
    return OfflineModel().generate(request).turn


@pytest.mark.parametrize(("prompt", "tool", "args"), [
    ("Remember that I prefer window seats.", "save_memory", {"text": "I prefer window seats"}),
    ("What do you remember about seats?", "search_memory", {"query": "seats"}),
    ("Look up what you remember about trains", "search_memory", {"query": "trains"}),
    ("use `time_get_current_time` for Europe/Paris", "time_get_current_time", {"timezone": "Europe/Paris"}),
    ("What time is it in Tokyo?", "time_get_current_time", {"timezone": "Asia/Tokyo"}),
    ("Convert 14:30 from New York to Tokyo", "time_convert_time",
     {"source_timezone": "America/New_York", "time": "14:30", "target_timezone": "Asia/Tokyo"}),
    ('Open an issue on octo/hello titled "Fix the README" saying the link is broken', "github_issue_create",
     {"repo": "octo/hello", "title": "Fix the README", "body": "the link is broken"}),
    ("List the open issues of octo/hello", "github_issues_list", {"repo": "octo/hello", "state": "open"}),
    ("Read issue #1 on octo/hello", "github_issue_get", {"repo": "octo/hello", "number": 1}),
    ("Read README.md in octo/hello", "github_file_read", {"repo": "octo/hello", "path": "README.md"}),
    ("Comment on issue #3 in octo/hello saying thanks", "github_comment_create",
     {"repo": "octo/hello", "number": 3, "body": "thanks"}),
    ("Search my email for invoices", "gmail_search", {"query": "invoices"}),
    ("Read the latest messages in #general", "slack_read", {"channel": "general"}),
    ("Fetch https://example.com/page", "web_fetch", {"url": "https://example.com/page"}),
    ("Search the web for durable agents", "google_web_search", {"query": "durable agents"}),
    ("Send an email to bob@example.com with subject Hi saying hello", "gmail_send",
     {"to": ["bob@example.com"], "subject": "Hi", "body": "hello"}),
    ("List my projects", "projects_list", {}),
])
def test_a_tool_is_picked_by_its_name_or_by_what_it_does_and_its_arguments_come_from_the_prompt(
        prompt: str, tool: str, args: dict[str, object]) -> None:
    (fc,) = ask(prompt).function_calls
    assert (fc.name, fc.args) == (tool, args)
    by_name = {t.name: t for t in TOOLS}
    assert set(by_name[tool].parameters.get("required", [])) <= set(fc.args)  # every required argument


def test_a_prompt_asking_for_no_tool_gets_help_and_a_missing_argument_is_asked_for_not_guessed() -> None:
    hello = ask("hello there")
    assert not hello.function_calls and hello.text.startswith(LABEL) and "use save_memory" in hello.text
    need = ask("Open an issue titled Broken link")  # no repository named
    assert not need.function_calls and "github_issue_create" in need.text and "repo" in need.text


def test_the_help_suggests_only_prompts_this_deployment_can_answer() -> None:
    """Plain ``make dev`` has no time tool: its help suggested "What time is it in Tokyo?" and then
    answered that prompt with the same help (found trying the README as a new user)."""
    plain = default_registry().declarations()
    help_text = ask("hello there", plain).text
    assert "Tokyo" not in help_text
    suggested = re.findall(r'"([^"]+)"', help_text.split("For example:")[1])
    assert suggested and "What time is it in Tokyo?" in ask("hello there").text  # with the time tool
    for prompt in suggested:  # each suggestion calls a tool (or makes a plan), never the help again
        assert ask(prompt, plain).function_calls, prompt


def test_tool_results_are_summarised_and_labelled_once_per_run() -> None:
    prompt = Turn(role="user", parts=[Part(text="What time is it in Tokyo?")])
    first = OfflineModel().generate(ModelRequest(turns=[prompt], tools=TIME)).turn
    answer = Turn(role="user", parts=[Part(function_response=FunctionResponse(
        name="time_get_current_time",
        response={"result": {"timezone": "Asia/Tokyo", "datetime": "2026-11-26T23:00"}}))])
    deltas: list[str] = []
    second = OfflineModel().generate(ModelRequest(turns=[prompt, first, answer], tools=TIME),
                                     on_delta=lambda kind, d: deltas.append(d)).turn
    assert second.text.startswith(LABEL) and "timezone: Asia/Tokyo" in second.text
    assert "".join(deltas) == second.text and len(deltas) > 3  # a few words per chunk
    # Later in the same run (the label is already in a model turn): no second label.
    follow = Turn(role="user", parts=[Part(function_response=FunctionResponse(name="x", response={"a": 1}))])
    third = OfflineModel().generate(ModelRequest(turns=[prompt, first, answer, second, follow], tools=TIME)).turn
    assert LABEL not in third.text and third.text == "x answered: a: 1."
    # A new prompt is a new run: labelled again.
    again = Turn(role="user", parts=[Part(text="hello")])
    fourth = OfflineModel().generate(ModelRequest(turns=[prompt, first, answer, second, again])).turn
    assert fourth.text.startswith(LABEL)


def test_text_streams_at_its_pace() -> None:
    chunks: list[float] = []
    started = time.monotonic()
    OfflineModel(pace_s=0.02).generate(ModelRequest(turns=[Turn(role="user", parts=[Part(text="hi " * 40)])]),
                                       on_delta=lambda kind, d: chunks.append(time.monotonic() - started))
    assert len(chunks) > 5
    gaps = [b - a for a, b in itertools.pairwise(chunks)]
    assert min(gaps) >= 0.015  # each chunk waits for its pace (a lower bound only; never an upper one)


def structured(schema: type, body: dict[str, object]) -> dict[str, object]:
    request = ModelRequest(turns=[Turn(role="user", parts=[Part(text=json.dumps(body))])],
                           response_schema=response_schema_of(schema))
    out = json.loads(OfflineModel().generate(request).turn.text)
    assert isinstance(out, dict)
    schema.model_validate(out)  # type: ignore[attr-defined]
    return out


def test_plans_are_the_objectives_own_steps_with_readable_titles() -> None:
    objective = ('Check the time in Tokyo, then open an issue on octo/hello titled "Tokyo time and more", '
                 'and remember that the check was done')
    plan = structured(PlanDraft, {"objective": objective})
    tasks = plan["tasks"]
    assert isinstance(tasks, list)
    assert [t["title"] for t in tasks] == ["Check the time in Tokyo",
                                           'Open an issue on octo/hello titled "Tokyo time and more"',
                                           "Remember that the check was done"]
    assert clauses("Summarise my notes and save the summary") == ["Summarise my notes", "save the summary"]
    refined = structured(PlanDraft, {"objective": objective, "request": "also post it to #general",
                                     "currentPlan": [{**t, "id": f"t{i}"} for i, t in enumerate(tasks, 1)]})
    titles = [t["title"] for t in refined["tasks"]]  # type: ignore[union-attr]
    assert titles[-1] == "Post it to #general" and len(titles) == 4
    assert refined["summary"] == 'Added "Post it to #general" at the end, as asked.'
    removed = structured(PlanDraft, {"objective": objective, "request": "remove t2",
                                     "currentPlan": [{**t, "id": f"t{i}"} for i, t in enumerate(tasks, 1)]})
    assert [t["id"] for t in removed["tasks"]] == ["t1", "t3"]  # type: ignore[union-attr]


def test_a_task_act_takes_its_tool_and_arguments_from_the_task() -> None:
    task = PlanTask(id="t2", title='Open an issue on octo/hello titled "Tokyo time"',
                    description='Open an issue on octo/hello titled "Tokyo time".', order=1)
    turn = OfflineModel().generate(ModelRequest(system_instruction=ACT_INSTRUCTION, turns=[task_turn(task, 1, 3)],
                                                tools=TOOLS)).turn
    (fc,) = turn.function_calls
    assert (fc.name, fc.args) == ("github_issue_create", {"repo": "octo/hello", "title": "Tokyo time"})
    assert turn.text == f'{LABEL} To open an issue on octo/hello titled "Tokyo time", I will call github_issue_create.'
    done = Turn(role="user", parts=[Part(function_response=FunctionResponse(name=fc.name, response={"number": 1}))])
    after = OfflineModel().generate(ModelRequest(turns=[task_turn(task, 1, 3), turn, done], tools=TOOLS)).turn
    assert not after.function_calls and after.text.startswith("Done: Open an issue") and LABEL not in after.text


def test_reflections_complete_a_task_whose_act_succeeded_only() -> None:
    ok = {"action": {"tool": "save_memory", "args": {"text": "x"}, "preview": 'Remember: "x"'},
          "observation": {"saved": True}}
    assert structured(Reflection, {"lastAct": ok})["taskComplete"] is True
    error = {**ok, "observation": {"error": "boom"}}
    assert structured(Reflection, {"lastAct": error})["taskComplete"] is False
    rejected = {**ok, "observation": {"rejected": True}}
    assert structured(Reflection, {"lastAct": rejected, "rejectedActs": ["x"]})["taskComplete"] is False
    could_not = {"action": {"tool": "task_done"}, "observation": {"text": "Could not open it: no repo"}}
    assert structured(Reflection, {"lastAct": could_not})["taskFailed"] is True


def test_agent_create_plan_is_called_for_a_plan_and_its_outcome_summarised() -> None:
    plan_tool = ToolDeclaration(name="agent_create_plan", description="Generate an execution plan",
                                parameters={"type": "object", "properties": {"objective": {"type": "string"}}})
    (fc,) = ask("Make a plan to check the time in Tokyo, then remember it", [plan_tool, *TIME]).function_calls
    assert (fc.name, fc.args) == ("agent_create_plan", {"objective": "check the time in Tokyo, then remember it"})
    outcome = Turn(role="user", parts=[Part(function_response=FunctionResponse(name="agent_create_plan", response={
        "status": "completed", "planId": "ses_1", "insights": ["Check the time in Tokyo: done"]}))])
    text = OfflineModel().generate(ModelRequest(turns=[outcome])).turn.text
    assert text == f"{LABEL} The plan ses_1 is completed: Check the time in Tokyo: done."


@pytest.mark.parametrize("objective", ["x" * 16_000, "...", " . ", "\x00\x001\x00", "; ".join(["check the time"] * 100),
                                       '"unclosed and then list issues', "then and; ;"])
def test_any_objective_gets_a_valid_plan_and_refinement(objective: str) -> None:
    plan = structured(PlanDraft, {"objective": objective})
    tasks = plan["tasks"]
    assert isinstance(tasks, list) and 1 <= len(tasks) <= 30 and all(t["title"] for t in tasks)
    current = [{**t, "id": f"t{i}"} for i, t in enumerate(tasks, 1)]
    structured(PlanDraft, {"objective": objective, "request": objective, "currentPlan": current})
