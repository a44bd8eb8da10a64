//! Tool calls: how tools are shown to the model, the grammar of its calls, and reading the calls
//! back out of its text (whole, or as it streams).
//!
//! The format is the documented default (Hermes/Qwen style, on one line):
//!
//! ```text
//! <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>
//! ```
//!
//! several calls one per line, the tools listed in the system turn.

use serde_json::{json, Value};

use crate::api::Tool;
use crate::error::ApiError;

/// Opens a call.
pub const CALL_OPEN: &str = "<tool_call>";
/// Closes a call.
pub const CALL_CLOSE: &str = "</tool_call>";
/// Between two calls.
pub const CALL_SEPARATOR: &str = "\n";

/// The system text that lists the tools and the call format.
pub fn system_prompt(tools: &[&Tool], required: bool) -> String {
    let mut text = String::new();
    if required {
        text.push_str("You must call one of the functions below to answer the user.\n");
    } else {
        text.push_str(
            "You may call one or more of the functions below to assist with the user query, \
             or answer directly.\n",
        );
    }
    text.push_str("Function signatures, within <tools></tools> tags:\n<tools>\n");
    for tool in tools {
        let mut function = json!({"name": tool.function.name});
        if let Some(d) = &tool.function.description {
            function["description"] = json!(d);
        }
        function["parameters"] = tool
            .function
            .parameters
            .clone()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
        text.push_str(&json!({"type": "function", "function": function}).to_string());
        text.push('\n');
    }
    text.push_str(
        "</tools>\nTo call a function, write a JSON object with its name and arguments within \
         <tool_call></tool_call> tags, one call per line:\n\
         <tool_call>{\"name\": <function-name>, \"arguments\": <args-json-object>}</tool_call>",
    );
    text
}

/// A call as the history spells it (an assistant message's `tool_calls`).
pub fn render_call(name: &str, arguments: &str) -> String {
    // Arguments that are not JSON are kept as a JSON string rather than breaking the line.
    let args: Value = serde_json::from_str(arguments).unwrap_or_else(|_| json!(arguments));
    let call = json!({"name": name, "arguments": args});
    format!(
        "{CALL_OPEN}{}{CALL_CLOSE}",
        constrain::Separators::python().write(&call)
    )
}

/// Checks tool definitions: `function` kind, a usable name, object parameters, unique names.
pub fn check_tools(tools: &[Tool]) -> Result<(), ApiError> {
    let mut seen = std::collections::HashSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let param = |f: &str| format!("tools[{i}].{f}");
        if tool.kind != "function" {
            return Err(ApiError::invalid_param(
                &param("type"),
                format!(
                    "tools[{i}].type {:?} is not supported; use \"function\"",
                    tool.kind
                ),
            ));
        }
        let name = &tool.function.name;
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            return Err(ApiError::invalid_param(
                &param("function.name"),
                format!("function name {name:?} must be 1-64 characters of a-z, A-Z, 0-9, _ and -"),
            ));
        }
        if !seen.insert(name.clone()) {
            return Err(ApiError::invalid_param(
                &param("function.name"),
                format!("two tools are named {name:?}"),
            ));
        }
        if let Some(p) = &tool.function.parameters {
            if !(p.is_object() || p.is_boolean()) {
                return Err(ApiError::invalid_param(
                    &param("function.parameters"),
                    "parameters must be a JSON Schema (an object)",
                ));
            }
        }
    }
    Ok(())
}

/// The JSON Schema of one call to any of `tools`: `{"name": <const>, "arguments": <params>}`,
/// one branch per tool. Local `$ref`s of each tool's parameters are rewritten to their new place.
pub fn call_schema(tools: &[&Tool]) -> Value {
    let branch = |tool: &Tool, base: &str| {
        let mut params = tool
            .function
            .parameters
            .clone()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
        rebase_refs(&mut params, base);
        json!({
            "type": "object",
            "properties": {
                "name": {"const": tool.function.name},
                "arguments": params,
            },
            "required": ["name", "arguments"],
            "additionalProperties": false,
        })
    };
    if tools.len() == 1 {
        return branch(tools[0], "/properties/arguments");
    }
    let branches: Vec<Value> = tools
        .iter()
        .enumerate()
        .map(|(i, t)| branch(t, &format!("/anyOf/{i}/properties/arguments")))
        .collect();
    json!({ "anyOf": branches })
}

/// A schema error inside one tool's parameters, said of that tool: its JSON pointer is read
/// from the tool's own `parameters`, not from the call schema that wraps them
/// (`/properties/arguments` for one tool, `/anyOf/i/properties/arguments` for several).
/// `None` when the error is not inside a tool's parameters.
pub fn parameters_error(call_schema: &Value, err: &constrain::Error) -> Option<ApiError> {
    let constrain::Error::Schema(schema_error) = err else {
        return None;
    };
    let pointer = schema_error.pointer()?;
    let branch = match pointer.strip_prefix("/anyOf/") {
        Some(rest) => format!("/anyOf/{}", rest.split('/').next()?),
        None => String::new(),
    };
    let wrapper = format!("{branch}/properties/arguments");
    let inner = pointer.strip_prefix(&wrapper)?;
    if !(inner.is_empty() || inner.starts_with('/')) {
        return None;
    }
    let name = call_schema
        .pointer(&format!("{branch}/properties/name/const"))?
        .as_str()?;
    // The error's text spells the wrapped pointer (and rebased `$ref`s): unwrap both.
    let text = schema_error
        .to_string()
        .replace(&format!("{wrapper}/"), "/")
        .replace(&wrapper, "/");
    Some(
        ApiError::invalid_param(
            "tools",
            format!(
                "tools: the parameters of function {name:?}: {text} (JSON pointer '{}')",
                if inner.is_empty() { "/" } else { inner }
            ),
        )
        .with_code("invalid_schema"),
    )
}

/// Rewrites every local `$ref` (`#...`) in `schema` as if the schema were moved to `base` (a
/// JSON pointer) inside a larger document.
fn rebase_refs(schema: &mut Value, base: &str) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if key == "$ref" || key == "$dynamicRef" {
                    if let Value::String(r) = value {
                        if let Some(pointer) = r.strip_prefix('#') {
                            if pointer.is_empty() || pointer.starts_with('/') {
                                *r = format!("#{base}{pointer}");
                            }
                        }
                    }
                } else if key != "const" && key != "enum" && key != "default" && key != "examples" {
                    rebase_refs(value, base);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rebase_refs(v, base)),
        _ => {}
    }
}

/// A call read back from the model's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedCall {
    /// The function.
    pub name: String,
    /// The arguments, as JSON text (compact, as generated).
    pub arguments: String,
}

/// Splits generated text into the content before the first call and the complete calls.
/// A call cut off (by the token limit) is dropped.
pub fn parse_calls(text: &str) -> (String, Vec<ParsedCall>) {
    let Some(first) = text.find(CALL_OPEN) else {
        return (text.to_string(), Vec::new());
    };
    let content = text[..first].to_string();
    let mut calls = Vec::new();
    let mut rest = &text[first..];
    while let Some(open) = rest.find(CALL_OPEN) {
        let body_start = open + CALL_OPEN.len();
        let Some(close) = rest[body_start..].find(CALL_CLOSE) else {
            break;
        };
        let body = &rest[body_start..body_start + close];
        if let Some(call) = parse_call_body(body) {
            calls.push(call);
        }
        rest = &rest[body_start + close + CALL_CLOSE.len()..];
    }
    (content, calls)
}

/// `{"name": ..., "arguments": ...}` as a call.
fn parse_call_body(body: &str) -> Option<ParsedCall> {
    let value: Value = serde_json::from_str(body.trim()).ok()?;
    let name = value.get("name")?.as_str()?.to_string();
    let arguments = match value.get("arguments") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => constrain::Separators::python().write(v),
        None => "{}".into(),
    };
    Some(ParsedCall { name, arguments })
}

/// What the stream of a choice says, as OpenAI's deltas carry it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamPiece {
    /// Text of the message.
    Content(String),
    /// A call begins: its index among the calls, and the function's name.
    CallStart {
        /// 0, 1, ...
        index: usize,
        /// The function.
        name: String,
    },
    /// More of a call's arguments (JSON text; the fragments concatenate to the arguments).
    CallArguments {
        /// Which call.
        index: usize,
        /// The next fragment.
        fragment: String,
    },
}

/// Reads a choice's text as it is generated and tells what to stream: content until a call
/// opens (text that may be the start of `<tool_call>` is held back), then each call's name and
/// its arguments as they come.
#[derive(Debug, Default)]
pub struct CallStreamer {
    /// Text received and not yet accounted for.
    buffer: String,
    state: StreamState,
    calls: usize,
}

#[derive(Debug, Default, PartialEq, Eq)]
enum StreamState {
    /// Before any call: content.
    #[default]
    Content,
    /// Inside `<tool_call>`, before the arguments.
    Head,
    /// Streaming the arguments of call `calls - 1`.
    Arguments,
    /// Between calls (whitespace; nothing is streamed).
    Between,
}

/// `{"name": "NAME", "arguments": ` as the grammar writes it.
const HEAD_PREFIX: &str = "{\"name\": \"";
const HEAD_SUFFIX: &str = "\", \"arguments\": ";
/// How the arguments end: the call's closing brace, then the closing tag.
const ARGS_END: &str = "}</tool_call>";

impl CallStreamer {
    /// A streamer for text where calls may appear (with tools).
    pub fn new() -> CallStreamer {
        CallStreamer::default()
    }

    /// Takes the next text and returns what can be streamed now.
    pub fn push(&mut self, text: &str) -> Vec<StreamPiece> {
        self.buffer.push_str(text);
        let mut out = Vec::new();
        loop {
            let progressed = match self.state {
                StreamState::Content | StreamState::Between => {
                    if let Some(at) = self.buffer.find(CALL_OPEN) {
                        let before: String = self.buffer.drain(..at).collect();
                        if self.state == StreamState::Content && !before.is_empty() {
                            out.push(StreamPiece::Content(before));
                        }
                        self.buffer.drain(..CALL_OPEN.len());
                        self.state = StreamState::Head;
                        true
                    } else {
                        let keep = partial_suffix(&self.buffer, CALL_OPEN);
                        let emit = self.buffer.len() - keep;
                        let before: String = self.buffer.drain(..emit).collect();
                        if self.state == StreamState::Content && !before.is_empty() {
                            out.push(StreamPiece::Content(before));
                        }
                        false
                    }
                }
                StreamState::Head => {
                    let trimmed = self.buffer.trim_start();
                    if let Some(after) = trimmed.strip_prefix(HEAD_PREFIX) {
                        if let Some(end) = after.find(HEAD_SUFFIX) {
                            let name = after[..end].to_string();
                            let consumed =
                                self.buffer.len() - after.len() + end + HEAD_SUFFIX.len();
                            self.buffer.drain(..consumed);
                            out.push(StreamPiece::CallStart {
                                index: self.calls,
                                name,
                            });
                            self.calls += 1;
                            self.state = StreamState::Arguments;
                            true
                        } else {
                            false
                        }
                    } else {
                        false
                    }
                }
                StreamState::Arguments => {
                    let index = self.calls - 1;
                    if let Some(end) = self.buffer.find(ARGS_END) {
                        let fragment: String = self.buffer.drain(..end).collect();
                        self.buffer.drain(..ARGS_END.len());
                        if !fragment.is_empty() {
                            out.push(StreamPiece::CallArguments { index, fragment });
                        }
                        self.state = StreamState::Between;
                        true
                    } else {
                        let keep = partial_suffix(&self.buffer, ARGS_END);
                        let emit = self.buffer.len() - keep;
                        if emit > 0 {
                            let fragment: String = self.buffer.drain(..emit).collect();
                            out.push(StreamPiece::CallArguments { index, fragment });
                        }
                        false
                    }
                }
            };
            if !progressed {
                break;
            }
        }
        out
    }

    /// At the end of the output: content still held back (a partial `<tool_call>` that never
    /// completed).
    pub fn finish(&mut self) -> Vec<StreamPiece> {
        let rest = std::mem::take(&mut self.buffer);
        match self.state {
            StreamState::Content if !rest.is_empty() => vec![StreamPiece::Content(rest)],
            _ => Vec::new(),
        }
    }

    /// Calls started so far.
    pub fn calls(&self) -> usize {
        self.calls
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of `pattern` (on character
/// boundaries).
fn partial_suffix(text: &str, pattern: &str) -> usize {
    let max = (pattern.len() - 1).min(text.len());
    (1..=max)
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n) && pattern.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, params: Value) -> Tool {
        serde_json::from_value(json!({
            "type": "function",
            "function": {"name": name, "description": "d", "parameters": params}
        }))
        .unwrap()
    }

    #[test]
    fn calls_are_parsed_out_of_text() {
        let text = "Let me look.<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}</tool_call>\n<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>";
        let (content, calls) = parse_calls(text);
        assert_eq!(content, "Let me look.");
        assert_eq!(
            calls,
            vec![
                ParsedCall {
                    name: "get_weather".into(),
                    arguments: "{\"city\": \"Oslo\"}".into()
                },
                ParsedCall {
                    name: "now".into(),
                    arguments: "{}".into()
                },
            ]
        );
        // A call cut off is dropped; text without calls is content.
        let (_, calls) = parse_calls("<tool_call>{\"name\": \"f\", \"argu");
        assert!(calls.is_empty());
        assert_eq!(parse_calls("just text").0, "just text");
    }

    #[test]
    fn the_streamer_holds_back_partial_tags_and_streams_arguments() {
        let text = "Sure.<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": {\"b\": 1}}}</tool_call>\n<tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>";
        // Any split of the text into pieces gives the same reassembled result.
        for step in [1, 2, 3, 5, 7, 200] {
            let mut s = CallStreamer::new();
            let mut pieces = Vec::new();
            let chars: Vec<char> = text.chars().collect();
            for chunk in chars.chunks(step) {
                pieces.extend(s.push(&chunk.iter().collect::<String>()));
            }
            pieces.extend(s.finish());
            let mut content = String::new();
            let mut calls: Vec<(String, String)> = Vec::new();
            for p in pieces {
                match p {
                    StreamPiece::Content(c) => content.push_str(&c),
                    StreamPiece::CallStart { index, name } => {
                        assert_eq!(index, calls.len());
                        calls.push((name, String::new()));
                    }
                    StreamPiece::CallArguments { index, fragment } => {
                        calls[index].1.push_str(&fragment)
                    }
                }
            }
            assert_eq!(content, "Sure.", "step {step}");
            assert_eq!(
                calls,
                vec![
                    ("f".into(), "{\"a\": {\"b\": 1}}".into()),
                    ("g".into(), "{}".into())
                ],
                "step {step}"
            );
        }
    }

    #[test]
    fn a_lone_angle_bracket_is_content_in_the_end() {
        let mut s = CallStreamer::new();
        assert_eq!(s.push("a <tool"), vec![StreamPiece::Content("a ".into())]);
        assert_eq!(s.finish(), vec![StreamPiece::Content("<tool".into())]);
    }

    #[test]
    fn a_schema_error_in_parameters_names_the_tool_and_its_own_pointer() {
        let good = tool("good", json!({"type": "object"}));
        let bad = tool(
            "bad",
            json!({"type": "object", "properties": {"x": {"type": 5}}}),
        );
        for tools in [vec![&bad], vec![&good, &bad]] {
            let schema = call_schema(&tools);
            let err = constrain::Constraint::JsonSchema(schema.clone())
                .grammar()
                .unwrap_err();
            let api = parameters_error(&schema, &err).expect("inside the parameters");
            assert_eq!(api.param.as_deref(), Some("tools"));
            assert!(
                api.message.contains("function \"bad\"")
                    && api.message.contains("at /properties/x/type:")
                    && !api.message.contains("arguments"),
                "{}",
                api.message
            );
        }
        let dangling = tool("d", json!({"$ref": "#/$defs/missing"}));
        let schema = call_schema(&[&dangling]);
        let err = constrain::Constraint::JsonSchema(schema.clone())
            .grammar()
            .unwrap_err();
        let api = parameters_error(&schema, &err).expect("inside the parameters");
        assert!(
            api.message.contains("'#/$defs/missing'") && !api.message.contains("arguments"),
            "{}",
            api.message
        );
    }

    #[test]
    fn call_schema_rebases_local_refs() {
        let a = tool(
            "a",
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}, "$defs": {"X": {"type": "integer"}}}),
        );
        let b = tool(
            "b",
            json!({"type": "object", "properties": {"self": {"$ref": "#"}}}),
        );
        let schema = call_schema(&[&a, &b]);
        assert_eq!(
            schema.pointer("/anyOf/0/properties/arguments/properties/x/$ref"),
            Some(&json!("#/anyOf/0/properties/arguments/$defs/X"))
        );
        assert_eq!(
            schema.pointer("/anyOf/1/properties/arguments/properties/self/$ref"),
            Some(&json!("#/anyOf/1/properties/arguments"))
        );
        let one = call_schema(&[&a]);
        assert_eq!(one.pointer("/properties/name/const"), Some(&json!("a")));
        // The rebased schema compiles, and its refs resolve.
        constrain::Constraint::JsonSchema(schema).grammar().unwrap();
    }

    #[test]
    fn tool_checks() {
        assert!(check_tools(&[tool("ok_name-1", json!({"type": "object"}))]).is_ok());
        let e = check_tools(&[tool("bad name", json!({}))]).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("tools[0].function.name"));
        let e = check_tools(&[tool("a", json!({})), tool("a", json!({}))]).unwrap_err();
        assert!(e.message.contains("two tools"));
        let e = check_tools(&[tool("a", json!("string"))]).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("tools[0].function.parameters"));
    }

    #[test]
    fn the_history_spells_calls_as_the_grammar_does() {
        assert_eq!(
            render_call("f", "{\"a\":1}"),
            "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>"
        );
        let text = system_prompt(&[&tool("f", json!({"type": "object"}))], true);
        assert!(text.contains("\"name\":\"f\"") && text.contains("must call"));
    }
}
