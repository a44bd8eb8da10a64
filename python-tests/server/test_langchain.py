"""An agent framework's own OpenAI client against `constrain serve`: LangChain's ChatOpenAI."""

import jsonschema
from pydantic import BaseModel, Field

from conftest import API_KEY


class Weather(BaseModel):
    """Weather report for a city."""

    city: str = Field(max_length=20)
    degrees: int = Field(ge=-50, le=50)


def chat(server, model_id):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=server.v1, api_key=API_KEY, model=model_id, max_tokens=80, temperature=0.5, seed=3,
                      max_retries=0)


def test_with_structured_output(server, model_id):
    structured = chat(server, model_id).with_structured_output(Weather, method="json_schema")
    result = structured.invoke("The weather in Oslo is 12 degrees. Report it.")
    assert isinstance(result, Weather)


def test_bind_tools(server, model_id):
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return "sunny"

    llm = chat(server, model_id).bind_tools([get_weather], tool_choice="get_weather")
    message = llm.invoke("What is the weather in Paris?")
    assert message.tool_calls, message
    call = message.tool_calls[0]
    assert call["name"] == "get_weather"
    jsonschema.validate(call["args"], {"type": "object", "properties": {"city": {"type": "string"}},
                                       "required": ["city"]})
