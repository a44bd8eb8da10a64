"""OpenAI's Agents SDK (`openai-agents`) against `constrain serve`, over the Responses API (its
default): a structured output, whole and streamed, and a tool loop."""

import asyncio

import jsonschema
import pytest
from pydantic import BaseModel, Field

from conftest import API_KEY

agents = pytest.importorskip("agents")


class Weather(BaseModel):
    """Weather report for a city."""

    city: str = Field(max_length=20)
    degrees: int = Field(ge=-50, le=50)


@pytest.fixture
def model(server, model_id):
    """A model over a new async client per test: each test runs its own event loop."""
    from openai import AsyncOpenAI

    # Traces would go to OpenAI's servers.
    agents.set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=server.v1, api_key=API_KEY, max_retries=0, timeout=120)
    return agents.OpenAIResponsesModel(model=model_id, openai_client=client)


def settings(**more):
    return agents.ModelSettings(temperature=0, max_tokens=80, extra_body={"seed": 3}, **more)


def test_structured_output(model):
    agent = agents.Agent(name="reporter", instructions="Report the weather the user gives.", model=model,
                         output_type=Weather, model_settings=settings())
    result = agents.Runner.run_sync(agent, "The weather in Oslo is 12 degrees. Report it.")
    assert isinstance(result.final_output, Weather)
    assert len(result.raw_responses) == 1


def test_structured_output_streamed(model):
    agent = agents.Agent(name="reporter", instructions="Report the weather the user gives.", model=model,
                         output_type=Weather, model_settings=settings())

    async def run():
        result = agents.Runner.run_streamed(agent, "The weather in Oslo is 12 degrees. Report it.")
        kinds = [event.data.type async for event in result.stream_events() if event.type == "raw_response_event"]
        return result, kinds

    result, kinds = asyncio.run(run())
    assert isinstance(result.final_output, Weather)
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds


def test_tool_loop(model):
    calls = []

    # Callable until it has been called once: the forced call comes first, then the answer.
    def not_called_yet(ctx, agent):
        return not calls

    @agents.function_tool(is_enabled=not_called_yet)
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        calls.append(city)
        return f"It is 12 degrees in {city}."

    agent = agents.Agent(name="weather", instructions="Answer questions about the weather.", model=model,
                         tools=[get_weather], output_type=Weather,
                         model_settings=settings(tool_choice="get_weather", parallel_tool_calls=False))
    result = agents.Runner.run_sync(agent, "What is the weather in Paris?", max_turns=3)
    assert len(calls) == 1
    jsonschema.validate({"city": calls[0]}, {"type": "object", "properties": {"city": {"type": "string"}}})
    kinds = [item.type for item in result.new_items]
    assert kinds[:2] == ["tool_call_item", "tool_call_output_item"], kinds
    assert result.new_items[1].output == f"It is 12 degrees in {calls[0]}."
    # The second request carried the call and its output back as input items.
    sent = result.to_input_list()
    assert [i.get("type") for i in sent if i.get("type") in ("function_call", "function_call_output")] == [
        "function_call", "function_call_output"]
    assert isinstance(result.final_output, Weather)
    assert len(result.raw_responses) == 2
