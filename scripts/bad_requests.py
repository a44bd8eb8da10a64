"""The bad-input catalogue of `constrain serve`: hostile or broken requests, each with the answer
it must get.

The same inputs as the CLI's catalogue (`scripts/bad-inputs`: broken schemas, patterns and
grammars, huge nesting, enums and repetition counts, invalid UTF-8, a prompt longer than the
context, sampling settings out of range), sent as request bodies, plus what only a server sees
(bodies that are not JSON, too large, of the wrong shape; wrong keys, routes and methods).

Every case says the status it must get and where its error must point: the `param` of the
OpenAI error object and words its message must contain (the JSON pointer, the line and column).
A case that must succeed (status 200) gives a regular expression its whole output must match:
within its `max_tokens`, a constrained output is always complete. `check(server, case)`
sends one case and returns what is wrong with the answer (an empty list: nothing).
`scripts/bad-inputs-server` runs them all with peak memory; `python-tests/server/
test_bad_requests.py` runs them as tests.
"""

import http.client
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

CHAT = "/v1/chat/completions"


@dataclass
class Case:
    name: str
    # A dict is sent as JSON; bytes as they are.
    body: dict | bytes | None
    status: int
    # The error object's `param` (None: not checked).
    param: str | None = None
    # Words the error message must contain (a JSON pointer, a line and column, the limit).
    says: list[str] = field(default_factory=list)
    # For status 200: a regular expression the whole output must match.
    output: str | None = None
    path: str = CHAT
    method: str = "POST"
    # `None`: the server's key; "" : no Authorization header; anything else: that key.
    key: str | None = None
    # Compiles or generates for seconds: run by the catalogue script, not by the test suite.
    slow: bool = False
    # Send the headers with `Expect: 100-continue` and the body only if the server asks for it,
    # as curl does for large bodies: a server that refuses the body by its length answers at
    # once (and a client that sends it anyway may see the connection closed under it).
    expect_continue: bool = False


def nested(depth: int, open_: str, close: str, inner: str) -> str:
    return open_ * depth + inner + close * depth


def chat(**fields) -> dict:
    body = {"messages": [{"role": "user", "content": "Answer:"}], "max_tokens": 8, "temperature": 0}
    body.update(fields)
    return body


def schema(s) -> dict:
    return chat(response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": s}})


def cases() -> list[Case]:
    big_enum = {"enum": [f"value-{i}" for i in range(100_000)]}
    props = {f"field_{i:05}": {"type": "string", "description": "x" * 20, "maxLength": 40}
             for i in range(14_000)}
    long_prompt = " ".join(["the quick brown fox jumps over the lazy dog"] * 2000)
    deep_items = json.loads(nested(120, '{"type": "array", "items": ', "}", '{"type": "integer"}'))
    return [
        # The body itself.
        Case("body: not JSON", b'{"messages": [', 400, says=["line 1"]),
        Case("body: empty", b"", 400),
        Case("body: invalid UTF-8", b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}', 400),
        Case("body: a JSON array", b"[1, 2]", 400),
        Case("body: no messages", {"max_tokens": 4}, 400, says=["messages"]),
        Case("body: messages not a list", {"messages": "hi"}, 400, param="messages"),
        Case("body: unknown role", {"messages": [{"role": "wizard", "content": "hi"}]}, 400,
             says=["wizard"]),
        Case("body: 10,000-deep JSON", nested(10_000, '{"a": ', "}", "1").encode(), 400,
             says=["recursion limit"]),
        Case("body: larger than --max-body-bytes (5 MB)",
             json.dumps(chat(stop=["x" * (5 << 20)])).encode(), 413, expect_continue=True),
        Case("body: stream not a boolean", chat(stream="yes"), 400, param="stream"),
        # Authentication, routes, methods.
        Case("wrong API key", chat(), 401, key="wrong-key"),
        Case("no API key", chat(), 401, key=""),
        Case("unknown route", None, 404, path="/v1/nothing-here", method="GET"),
        Case("GET on the chat route", None, 405, method="GET"),
        Case("unknown model", chat(model="gpt-9"), 400, param="model", says=["gpt-9"]),
        # Schemas (the CLI catalogue's, as `response_format`).
        Case("schema: wrong keyword type (type: 5)", schema({"type": 5}), 400,
             param="response_format", says=["/type"]),
        Case("schema: wrong keyword type (properties: [])",
             schema({"type": "object", "properties": []}), 400, param="response_format",
             says=["/properties"]),
        Case("schema: wrong keyword type (minLength: \"3\")",
             schema({"type": "string", "minLength": "3"}), 400, param="response_format",
             says=["/minLength"]),
        Case("schema: dangling $ref",
             schema({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}), 400,
             param="response_format", says=["/properties/a/$ref", "#/$defs/missing"]),
        Case("schema: remote $ref", schema({"$ref": "https://example.com/schema.json"}), 400,
             param="response_format", says=["https://example.com/schema.json"]),
        Case("schema: cyclic $ref (a -> b -> a)",
             schema({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                     "$ref": "#/$defs/a"}), 400, param="response_format", says=["cycle"]),
        Case("schema: 120-deep items (under the JSON limit)", schema(deep_items), 200,
             output=r"\[.*\]"),
        Case("schema: 100,000-value enum", schema(big_enum), 200, output=r'"value-\d+"', slow=True),
        Case("schema: 1 MB (14,000 properties)", schema({"type": "object", "properties": props}),
             400, param="response_format", says=["limit"], slow=True),
        Case("schema: minLength 1,000,000", schema({"type": "string", "minLength": 1_000_000}), 400,
             param="response_format", says=["/minLength", "1024"]),
        Case("schema: minItems 1,000,000", schema({"type": "array", "minItems": 1_000_000}), 400,
             param="response_format", says=["minItems", "100000"]),
        Case("schema: pattern a{1000000}", schema({"type": "string", "pattern": "^a{1000000}$"}),
             400, param="response_format", says=["/pattern", "100000"]),
        Case("schema: catastrophic pattern (a|aa)*c",
             schema({"type": "string", "pattern": "^(a|aa)*c$"}), 200, output=r'"(a|aa)*c"'),
        Case("schema: unsatisfiable (allOf string, integer)",
             schema({"allOf": [{"type": "string"}, {"type": "integer"}]}), 400,
             param="response_format", says=["accepts no value"]),
        Case("schema: not an object (a number)", schema(5), 400, param="response_format"),
        # Regular expressions (the `regex` extension).
        Case("regex: (a*)*b", chat(regex="(a*)*b", max_tokens=16), 200, output=r"a*b"),
        Case("regex: (a|aa)*c", chat(regex="(a|aa)*c", max_tokens=16), 200, output=r"(a|aa)*c"),
        Case("regex: a{1000000}", chat(regex="a{1000000}"), 400, param="max_tokens",
             says=["125000"]),
        Case("regex: 10,000-deep groups", chat(regex=nested(10_000, "(", ")", "a")), 400,
             param="regex", says=["nest"]),
        Case("regex: unclosed group", chat(regex="(abc"), 400, param="regex", says=["(abc"]),
        Case("regex: look-around", chat(regex="a(?=b)"), 400, param="regex"),
        Case("regex: empty language [^\\s\\S]", chat(regex="[^\\s\\S]"), 400, param="regex",
             says=["matches nothing"]),
        # GBNF grammars (the `grammar` extension).
        Case("gbnf: unterminated literal", chat(grammar='root ::= "abc\n'), 400, param="grammar",
             says=["1:10"]),
        Case("gbnf: unclosed group", chat(grammar='root ::= ("a" | "b"\n'), 400, param="grammar",
             says=["1:10"]),
        Case("gbnf: undefined rule", chat(grammar="root ::= item\n"), 400, param="grammar",
             says=["1:10", "item"]),
        Case("gbnf: no root", chat(grammar='item ::= "a"\n'), 400, param="grammar", says=["root"]),
        Case("gbnf: left recursion", chat(grammar='root ::= root "a" | "a"\n'), 400,
             param="grammar", says=["left recursion"]),
        Case("gbnf: \"a\"{1000000}", chat(grammar='root ::= "a"{1000000}\n'), 400, param="grammar",
             says=["1:13", "2000"]),
        Case("gbnf: \"a\"{0,1000000}", chat(grammar='root ::= "a"{0,1000000}\n'), 400,
             param="grammar", says=["limit"], slow=True),
        Case("gbnf: 10,000-deep groups",
             chat(grammar="root ::= " + nested(10_000, "(", ")", '"a"') + "\n"), 400,
             param="grammar", says=["64 levels"]),
        Case("gbnf: 1 MB of alternatives",
             chat(grammar="root ::= " + " | ".join(f'"w{i}"' for i in range(100_000)) + "\n"),
             200, output=r"w\d+", slow=True),
        Case("two constraints at once", chat(regex="a+", grammar='root ::= "a"'), 400,
             says=["at most one constraint"]),
        # The prompt and the sampling settings.
        Case("prompt longer than the context",
             {"messages": [{"role": "user", "content": long_prompt}], "max_tokens": 4}, 400,
             param="messages", says=["context"]),
        Case("sampling: temperature -1", chat(temperature=-1), 400, param="temperature"),
        Case("sampling: temperature 1e39 (not an f32)", chat(temperature=1e39), 400,
             says=["temperature"]),
        Case("sampling: top_p 2", chat(top_p=2), 400, param="top_p"),
        Case("sampling: top_p -0.5", chat(top_p=-0.5), 400, param="top_p"),
        Case("sampling: min_p 1.5", chat(min_p=1.5), 400, param="min_p"),
        Case("sampling: top_k -3", chat(top_k=-3), 400, param="top_k"),
        Case("lookup 17 (drafts of at most 16)", chat(lookup=17), 400, param="lookup",
             says=["16"]),
        Case("lookup -1", chat(lookup=-1), 400, param="lookup"),
        Case("sampling: frequency_penalty 5", chat(frequency_penalty=5), 400,
             param="frequency_penalty"),
        Case("sampling: presence_penalty -3", chat(presence_penalty=-3), 400,
             param="presence_penalty"),
        Case("sampling: max_tokens -1", chat(max_tokens=-1), 400, param="max_tokens"),
        Case("sampling: n 0", chat(n=0), 400, param="n"),
        Case("sampling: n 1000", chat(n=1000), 400, param="n"),
        Case("sampling: top_logprobs 100", chat(logprobs=True, top_logprobs=100), 400,
             param="top_logprobs"),
        Case("sampling: logit_bias key not a token id", chat(logit_bias={"abc": 1}), 400,
             param="logit_bias"),
        Case("sampling: logit_bias id past the vocabulary", chat(logit_bias={"99999999": 1}), 400,
             param="logit_bias"),
        Case("sampling: logit_bias value 500", chat(logit_bias={"1": 500}), 400,
             param="logit_bias"),
        # Tools.
        Case("tools: parameters not a schema",
             chat(tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": 5}}}],
                  tool_choice="required"), 400, param="tools", says=['function "f"', "at /type:"]),
        Case("tools: tool_choice names no tool",
             chat(tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}],
                  tool_choice={"type": "function", "function": {"name": "g"}}), 400,
             param="tool_choice.function.name", says=['"g"']),
        Case("tools: a type other than function or custom",
             chat(tools=[{"type": "web_search"}]), 400,
             param="tools[0].type", says=['"web_search"']),
        Case("tools: a custom tool whose Lark grammar names no rule",
             chat(tools=[{"type": "custom", "custom": {"name": "sql", "format": {"type": "grammar", "grammar": {
                 "syntax": "lark", "definition": "start: missing_rule"}}}}], tool_choice="required"), 400,
             param="tools", says=["missing_rule", "1:8"]),
        # Constraint fields that are not supported are refused by name, never ignored.
        Case("response_format: an unknown field",
             chat(response_format={"type": "json_object", "schema": {}, "strict": True}), 400,
             param="response_format.strict"),
        Case("response_format: a schema beside json_schema",
             chat(response_format={"type": "json_schema", "schema": {}, "json_schema": {"name": "s"}}),
             400, param="response_format.schema", says=["json_schema.schema"]),
        Case("response_format: strict with a format that is not enforced",
             chat(response_format={"type": "json_schema", "json_schema": {
                 "name": "s", "strict": True, "schema": {"type": "string", "format": "nope"}}}),
             400, param="response_format.json_schema.strict", says=["format", "nope"]),
        Case("vLLM's guided_json", chat(guided_json={"type": "string"}), 400, param="guided_json"),
        Case("json_object with a schema is enforced",
             chat(response_format={"type": "json_object", "schema": {"enum": ["yes", "no"]}}), 200,
             output=r'"(yes|no)"'),
    ]


def send(base: str, key: str, case: Case, timeout: float = 300) -> tuple[int, dict | str]:
    """The status and the body (parsed when it is JSON)."""
    if case.expect_continue:
        return send_expecting_continue(base, key, case, timeout)
    data = None
    if isinstance(case.body, dict):
        data = json.dumps(case.body).encode()
    elif isinstance(case.body, bytes):
        data = case.body
    request = urllib.request.Request(base + case.path, data=data, method=case.method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    used = key if case.key is None else case.key
    if used:
        request.add_header("Authorization", f"Bearer {used}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    text = raw.decode("utf-8", "replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def send_expecting_continue(base: str, key: str, case: Case, timeout: float) -> tuple[int, dict | str]:
    """Headers with `Expect: 100-continue`, then the answer; the body goes only after a 100."""
    url = urllib.parse.urlsplit(base)
    # A server that answered 100 instead would leave this waiting: not for long.
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=min(timeout, 60))
    try:
        conn.putrequest(case.method, case.path)
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(len(case.body)))
        conn.putheader("Expect", "100-continue")
        used = key if case.key is None else case.key
        if used:
            conn.putheader("Authorization", f"Bearer {used}")
        conn.endheaders()
        response = conn.getresponse()
        status, raw = response.status, response.read()
    finally:
        conn.close()
    text = raw.decode("utf-8", "replace")
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def problems(case: Case, status: int, body) -> list[str]:
    """What is wrong with an answer to `case` (empty: nothing)."""
    found = []
    if status != case.status:
        found.append(f"status {status}, expected {case.status}: {str(body)[:300]}")
        return found
    if status == 200:
        try:
            text = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return [f"no message in {str(body)[:300]}"]
        if case.output and not re.fullmatch(case.output, text, re.S):
            found.append(f"output {text!r} does not match {case.output!r}")
        return found
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict) or not isinstance(error.get("message"), str) \
            or not isinstance(error.get("type"), str):
        return [f"not an OpenAI error object: {str(body)[:300]}"]
    if case.param is not None and error.get("param") != case.param:
        found.append(f"param {error.get('param')!r}, expected {case.param!r}: {error['message']}")
    for words in case.says:
        if words not in error["message"]:
            found.append(f"the message does not say {words!r}: {error['message']}")
    return found


def summary(status: int, body) -> str:
    """One line for the catalogue's table: the error's param and message, or the output."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        e = body["error"]
        return (f"[{e.get('param')}] " if e.get("param") else "") + str(e.get("message"))
    if isinstance(body, dict) and body.get("choices"):
        return "(output) " + str(body["choices"][0].get("message", {}).get("content"))
    return str(body)[:200]
