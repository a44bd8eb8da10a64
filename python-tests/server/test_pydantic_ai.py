"""Pydantic AI against `constrain serve`, through both of its OpenAI models: chat completions
(`OpenAIChatModel`) and the Responses API (`OpenAIResponsesModel`). A structured output (by an
output tool, and by the native JSON Schema format) and a tool loop each."""

import jsonschema
import pytest
from pydantic import BaseModel, Field

from conftest import API_KEY

pydantic_ai = pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, NativeOutput, RunContext  # noqa: E402
from pydantic_ai.capabilities import AbstractCapability  # noqa: E402


class Weather(BaseModel):
    """Weather report for a city."""

    city: str = Field(max_length=20)
    degrees: int = Field(ge=-50, le=50)


SETTINGS = {"temperature": 0, "max_tokens": 80, "seed": 3}


@pytest.fixture(scope="module", params=["chat", "responses"])
def model(request, server, model_id):
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(base_url=server.v1, api_key=API_KEY)
    kind = OpenAIChatModel if request.param == "chat" else OpenAIResponsesModel
    return kind(model_id, provider=provider)


def test_structured_output_by_an_output_tool(model):
    agent = Agent(model, output_type=Weather, instructions="Report the weather the user gives.",
                  model_settings=SETTINGS)
    result = agent.run_sync("The weather in Oslo is 12 degrees. Report it.")
    assert isinstance(result.output, Weather)


def test_structured_output_by_the_native_format(model):
    agent = Agent(model, output_type=NativeOutput(Weather), instructions="Report the weather the user gives.",
                  model_settings=SETTINGS)
    result = agent.run_sync("The weather in Oslo is 12 degrees. Report it.")
    assert isinstance(result.output, Weather)


class CallFirst(AbstractCapability):
    """Forces a call to `name` until `calls` holds one, then lets the model answer."""

    def __init__(self, name, calls):
        self.name = name
        self.calls = calls

    def get_model_settings(self):
        return lambda ctx: {"tool_choice": "none" if self.calls else [self.name]}


def test_tool_loop(model):
    calls = []
    agent = Agent(model, output_type=Weather, instructions="Answer questions about the weather.",
                  model_settings={**SETTINGS, "parallel_tool_calls": False},
                  capabilities=[CallFirst("get_weather", calls)])

    @agent.tool
    def get_weather(ctx: RunContext[None], city: str) -> str:
        """Current weather in a city."""
        calls.append(city)
        return f"It is 12 degrees in {city}."

    result = agent.run_sync("What is the weather in Paris?")
    assert len(calls) == 1
    jsonschema.validate({"city": calls[0]}, {"type": "object", "properties": {"city": {"type": "string"}}})
    parts = [(m.kind, p.part_kind) for m in result.all_messages() for p in m.parts]
    assert ("response", "tool-call") in parts and ("request", "tool-return") in parts, parts
    # The call, its output fed back in the next request, then the answer.
    assert parts.index(("response", "tool-call")) < parts.index(("request", "tool-return"))
    assert isinstance(result.output, Weather)
