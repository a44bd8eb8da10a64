//! The body of `POST /v1/responses`, read as a chat request: input items become chat
//! messages (a `function_call` item a call of an assistant turn, a `function_call_output` item
//! a tool turn), the flat function tools and `text.format` become the chat request's `tools`
//! and `response_format`. Planning, constraints and tool calls are then the chat route's own.
//!
//! Errors name the Responses API's fields (`input[2].role`, `text.format.strict`): those found
//! here directly, those planning finds through [`rename_error`].

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::api::{
    from_value_at, ChatRequest, Content, FunctionCall, FunctionDef, Message, NamedFunction,
    NamedToolChoice, ResponseFormat, SamplingFields, Tool, ToolCall, ToolChoice,
};
use crate::error::ApiError;

/// `POST /v1/responses`.
///
/// Fields that only tune OpenAI's service (`truncation`, `reasoning`, `service_tier`,
/// `prompt_cache_key`...) are ignored; fields that would change what the model reads or
/// writes and that this server cannot honour are refused by name.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ResponsesRequest {
    /// The model id; any alias of the one model served.
    #[serde(default)]
    pub model: Option<String>,
    /// A user message as a string, or a list of input items.
    #[serde(default)]
    pub input: Option<Input>,
    /// A system message put first (not carried over by `previous_response_id`).
    #[serde(default)]
    pub instructions: Option<String>,
    /// Sampling and the extensions shared with the chat route (`seed`, `top_k`, `grammar`...).
    #[serde(flatten)]
    pub sampling: SamplingFields,
    /// Most tokens to generate.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// Tools in the flat form: `{"type": "function", "name", "description", "parameters",
    /// "strict"}`; other types are refused.
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    /// `none`, `auto`, `required` or `{"type": "function", "name": ...}`.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// Whether several calls may come in one answer (default true).
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// `format` (`text`, `json_object`, `json_schema`) and `verbosity` (a hint, ignored).
    #[serde(default)]
    pub text: Option<TextConfig>,
    /// Continue the conversation of a stored response.
    #[serde(default)]
    pub previous_response_id: Option<String>,
    /// Keep this response for `previous_response_id` (default true).
    #[serde(default)]
    pub store: Option<bool>,
    /// Not supported (log-probabilities): refused when above 0.
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    /// Extra output to include; `message.output_text.logprobs` is refused.
    #[serde(default)]
    pub include: Option<Vec<String>>,
    /// Echoed in the response.
    #[serde(default)]
    pub metadata: Option<Value>,
    /// Not supported (server-side conversations): refused.
    #[serde(default)]
    pub conversation: Option<Value>,
    /// Not supported (background runs): refused when true.
    #[serde(default)]
    pub background: Option<bool>,
    /// Not supported (reusable prompts): refused.
    #[serde(default)]
    pub prompt: Option<Value>,
    /// Not supported (a cap on calls): refused.
    #[serde(default)]
    pub max_tool_calls: Option<u64>,
    /// `{"effort": ...}`: `none` or `minimal` turns a reasoning model's thinking off, other
    /// efforts keep it on; a model that does not think takes only those two. `summary` is
    /// refused (thinking is returned whole, never summarized).
    #[serde(default)]
    pub reasoning: Option<Value>,
    /// `disabled` (the default); `auto` (dropping the oldest turns) is refused.
    #[serde(default)]
    pub truncation: Option<String>,
}

/// `input`: a string (one user message) or items.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Input {
    /// One user message.
    Text(String),
    /// Messages, function calls and their outputs, read one by one so that errors name them.
    Items(Vec<Value>),
}

/// `text`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct TextConfig {
    /// The output's format; absent: text.
    #[serde(default)]
    pub format: Option<Value>,
    /// How long the answer should be: only `medium` (the default) is taken, for no other
    /// length is enforced here.
    #[serde(default)]
    pub verbosity: Option<Value>,
    /// Other fields, refused by name.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// A `message` item.
#[derive(Deserialize)]
struct MessageItem {
    role: String,
    content: ItemContent,
}

/// A message's content or a call's output: a string, or parts.
#[derive(Deserialize)]
#[serde(untagged)]
enum ItemContent {
    Text(String),
    Parts(Vec<Part>),
}

/// One part of a content: `input_text`, `output_text` (an earlier answer) or `refusal`.
#[derive(Deserialize)]
struct Part {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

/// A `function_call` item: a call an earlier answer made.
#[derive(Deserialize)]
struct CallItem {
    call_id: String,
    name: String,
    #[serde(default)]
    arguments: String,
}

/// A `function_call_output` item: what a call returned.
#[derive(Deserialize)]
struct OutputItem {
    call_id: String,
    output: ItemContent,
}

/// A function tool in the Responses API's flat form.
#[derive(Deserialize)]
struct FlatTool {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    strict: Option<bool>,
}

/// The chat request a Responses request reads as, and the messages this turn adds to the
/// conversation (kept when the response is stored).
pub struct Reading {
    /// What planning reads.
    pub chat: ChatRequest,
    /// The conversation so far: the stored one, then this request's input (without the
    /// instructions, which a continuation does not inherit).
    pub conversation: Vec<Message>,
}

/// Reads `request` after `history` (the conversation of `previous_response_id`).
pub fn read(request: &ResponsesRequest, history: &[Message]) -> Result<Reading, ApiError> {
    refuse_unsupported(request)?;
    let mut conversation = history.to_vec();
    if let Some(input) = &request.input {
        input_messages(input, &mut conversation)?;
    }
    let mut messages = Vec::with_capacity(conversation.len() + 1);
    if let Some(instructions) = request.instructions.as_ref().filter(|s| !s.is_empty()) {
        messages.push(message("system", Some(instructions.clone())));
    }
    messages.extend(conversation.iter().cloned());
    let mut sampling = request.sampling.clone();
    sampling.max_tokens = request.max_output_tokens.or(sampling.max_tokens);
    let tools = match &request.tools {
        Some(tools) => Some(function_tools(tools)?),
        None => None,
    };
    let chat = ChatRequest {
        model: request.model.clone(),
        messages,
        sampling,
        max_completion_tokens: None,
        logprobs: None,
        top_logprobs: None,
        response_format: match &request.text {
            Some(text) => format(text)?,
            None => None,
        },
        tools,
        tool_choice: request.tool_choice.as_ref().map(tool_choice).transpose()?,
        parallel_tool_calls: request.parallel_tool_calls,
        chat_template_kwargs: thinking_switch(request.reasoning.as_ref())?,
        thinking_budget: None,
    };
    Ok(Reading { chat, conversation })
}

/// `reasoning.effort` as the chat route's thinking switch: `none` and `minimal` turn thinking
/// off. A model that does not think has only those (the chat route refuses the switch on
/// for it).
fn thinking_switch(
    reasoning: Option<&Value>,
) -> Result<Option<serde_json::Map<String, Value>>, ApiError> {
    let Some(reasoning) = reasoning.filter(|r| !r.is_null()) else {
        return Ok(None);
    };
    let Some(fields) = reasoning.as_object() else {
        return Err(ApiError::invalid_param(
            "reasoning",
            "reasoning must be an object such as {\"effort\": \"low\"}",
        ));
    };
    let mut kwargs = serde_json::Map::new();
    for (key, value) in fields {
        match (key.as_str(), value.as_str()) {
            (_, None) if value.is_null() => {}
            ("effort", Some("none" | "minimal")) => {
                kwargs.insert("enable_thinking".into(), Value::Bool(false));
            }
            ("effort", Some("low" | "medium" | "high")) => {
                kwargs.insert("enable_thinking".into(), Value::Bool(true));
            }
            ("effort", _) => {
                return Err(ApiError::invalid_param(
                    "reasoning.effort",
                    "reasoning.effort must be none, minimal, low, medium or high",
                ))
            }
            (other, _) => {
                return Err(ApiError::invalid_param(
                    &format!("reasoning.{other}"),
                    format!(
                        "reasoning.{other} is not supported by this server, and it is not \
                         ignored either; thinking is returned whole, as a reasoning item"
                    ),
                ))
            }
        }
    }
    Ok((!kwargs.is_empty()).then_some(kwargs))
}

/// Fields that would change the answer and that this server does not implement.
fn refuse_unsupported(request: &ResponsesRequest) -> Result<(), ApiError> {
    let refuse = |field: &str, why: &str| {
        Err(ApiError::invalid_param(
            field,
            format!("{field} is not supported by this server, and it is not ignored either; {why}"),
        ))
    };
    if request.sampling.n.is_some_and(|n| n != 1) {
        return refuse("n", "a response has one answer");
    }
    if request.top_logprobs.is_some_and(|k| k > 0) {
        return refuse(
            "top_logprobs",
            "log-probabilities are on /v1/chat/completions",
        );
    }
    let includes = request.include.iter().flatten();
    if includes
        .into_iter()
        .any(|i| i == "message.output_text.logprobs")
    {
        return refuse("include", "log-probabilities are on /v1/chat/completions");
    }
    if request.conversation.as_ref().is_some_and(|c| !c.is_null()) {
        return refuse(
            "conversation",
            "send the conversation as input, or continue a stored response with \
             previous_response_id",
        );
    }
    if request.background == Some(true) {
        return refuse(
            "background",
            "responses are answered while the request waits",
        );
    }
    if request.prompt.as_ref().is_some_and(|p| !p.is_null()) {
        return refuse("prompt", "send the prompt's text as instructions and input");
    }
    if request
        .truncation
        .as_deref()
        .is_some_and(|t| t != "disabled")
    {
        return refuse(
            "truncation",
            "a conversation longer than the context is a 400 (truncation: disabled)",
        );
    }
    if let Some(verbosity) = request.text.as_ref().and_then(|t| t.verbosity.as_ref()) {
        if !(verbosity.is_null() || verbosity == "medium") {
            return refuse("text.verbosity", "only medium, the default, is taken");
        }
    }
    if request.max_tool_calls.is_some() {
        return refuse(
            "max_tool_calls",
            "parallel_tool_calls: false allows one call per answer",
        );
    }
    Ok(())
}

fn message(role: &str, text: Option<String>) -> Message {
    Message {
        role: role.into(),
        content: text.map(Content::Text),
        name: None,
        tool_calls: None,
        tool_call_id: None,
    }
}

/// Appends `input`'s items to `out` as chat messages; calls join the assistant turn before
/// them, as a chat history spells one turn's text and calls.
fn input_messages(input: &Input, out: &mut Vec<Message>) -> Result<(), ApiError> {
    let items = match input {
        Input::Text(text) => {
            out.push(message("user", Some(text.clone())));
            return Ok(());
        }
        Input::Items(items) => items,
    };
    for (i, item) in items.iter().enumerate() {
        let at = format!("input[{i}]");
        if !item.is_object() {
            return Err(ApiError::invalid_param(
                &at,
                format!("{at} must be an object (a message, function_call or function_call_output item)"),
            ));
        }
        // Messages may come without a type (the "easy" form: role and content only).
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" => {
                let m: MessageItem = from_value_at(item, &at)?;
                if !matches!(
                    m.role.as_str(),
                    "user" | "system" | "developer" | "assistant"
                ) {
                    return Err(ApiError::invalid_param(
                        &format!("{at}.role"),
                        format!(
                            "{at}.role {:?}: use user, system, developer or assistant",
                            m.role
                        ),
                    ));
                }
                let text = content_text(&m.content, &format!("{at}.content"))?;
                out.push(message(&m.role, Some(text)));
            }
            "function_call" => {
                let call: CallItem = from_value_at(item, &at)?;
                let call = ToolCall {
                    id: Some(call.call_id),
                    kind: Some("function".into()),
                    function: FunctionCall {
                        name: call.name,
                        arguments: call.arguments,
                    },
                    custom: None,
                };
                match out.last_mut() {
                    Some(last) if last.role == "assistant" => {
                        last.tool_calls.get_or_insert_with(Vec::new).push(call);
                    }
                    _ => out.push(Message {
                        tool_calls: Some(vec![call]),
                        ..message("assistant", None)
                    }),
                }
            }
            "function_call_output" => {
                let output: OutputItem = from_value_at(item, &at)?;
                let text = content_text(&output.output, &format!("{at}.output"))?;
                out.push(Message {
                    tool_call_id: Some(output.call_id),
                    ..message("tool", Some(text))
                });
            }
            // A reasoning model's thinking, handed back: this model neither writes nor reads it.
            "reasoning" => {}
            other => {
                return Err(ApiError::invalid_param(
                    &format!("{at}.type"),
                    format!(
                        "input items of type {other:?} are not supported; send message, \
                         function_call and function_call_output items"
                    ),
                ))
            }
        }
    }
    Ok(())
}

/// The text of a content: parts joined; parts that are not text are refused.
fn content_text(content: &ItemContent, at: &str) -> Result<String, ApiError> {
    let parts = match content {
        ItemContent::Text(text) => return Ok(text.clone()),
        ItemContent::Parts(parts) => parts,
    };
    let mut text = String::new();
    for (j, part) in parts.iter().enumerate() {
        match (part.kind.as_str(), &part.text, &part.refusal) {
            ("input_text" | "output_text" | "text", Some(t), _) | ("refusal", _, Some(t)) => {
                text.push_str(t)
            }
            (kind, _, _) => {
                return Err(ApiError::invalid_param(
                    &format!("{at}[{j}].type"),
                    format!(
                        "content parts of type {kind:?} are not supported: this model reads \
                         text only (input_text, output_text)"
                    ),
                ))
            }
        }
    }
    Ok(text)
}

/// The flat function tools as the chat route's tools.
fn function_tools(tools: &[Value]) -> Result<Vec<Tool>, ApiError> {
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let at = format!("tools[{i}]");
            match tool.get("type").and_then(Value::as_str) {
                Some("function") => {
                    let flat: FlatTool = from_value_at(tool, &at)?;
                    Ok(Tool {
                        kind: "function".into(),
                        function: FunctionDef {
                            name: flat.name,
                            description: flat.description,
                            parameters: flat.parameters,
                            strict: flat.strict,
                        },
                        custom: None,
                    })
                }
                Some(other) => Err(ApiError::invalid_param(
                    &format!("{at}.type"),
                    format!(
                        "{at}.type {other:?} is not supported by this server; use function tools"
                    ),
                )),
                None => Err(ApiError::invalid_param(
                    &format!("{at}.type"),
                    format!("{at} needs a type (\"function\")"),
                )),
            }
        })
        .collect()
}

/// `tool_choice` as the chat route's.
fn tool_choice(choice: &Value) -> Result<ToolChoice, ApiError> {
    match choice {
        Value::String(mode) => Ok(ToolChoice::Mode(mode.clone())),
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("function") => match o.get("name").and_then(Value::as_str) {
                Some(name) => Ok(ToolChoice::Named(NamedToolChoice {
                    kind: "function".into(),
                    function: NamedFunction { name: name.into() },
                    custom: None,
                })),
                None => Err(ApiError::invalid_param(
                    "tool_choice.name",
                    "tool_choice of type function needs the function's name",
                )),
            },
            other => Err(ApiError::invalid_param(
                "tool_choice.type",
                format!(
                    "tool_choice.type {:?} is not supported; use none, auto, required or \
                     {{\"type\": \"function\", \"name\": ...}}",
                    other.unwrap_or_default()
                ),
            )),
        },
        _ => Err(ApiError::invalid_param(
            "tool_choice",
            "tool_choice must be none, auto, required or {\"type\": \"function\", \"name\": ...}",
        )),
    }
}

/// `text.format` as the chat route's `response_format`: `json_schema`'s fields move under
/// `json_schema`, so that the chat route's checks (unknown fields refused by name) apply.
fn format(text: &TextConfig) -> Result<Option<ResponseFormat>, ApiError> {
    if let Some(field) = text.other.keys().next() {
        let field = format!("text.{field}");
        return Err(ApiError::invalid_param(
            &field,
            format!("{field} is not supported, and it is not ignored either"),
        ));
    }
    let Some(format) = text.format.as_ref().filter(|f| !f.is_null()) else {
        return Ok(None);
    };
    let Some(fields) = format.as_object() else {
        return Err(ApiError::invalid_param(
            "text.format",
            "text.format must be an object such as {\"type\": \"json_schema\", ...}",
        ));
    };
    let chat_form = match fields.get("type").and_then(Value::as_str) {
        Some("json_schema") => {
            let mut inner = fields.clone();
            inner.remove("type");
            json!({"type": "json_schema", "json_schema": inner})
        }
        Some("text" | "json_object") => format.clone(),
        other => {
            return Err(ApiError::invalid_param(
                "text.format.type",
                format!(
                    "text.format.type {:?}: use text, json_schema or json_object",
                    other.unwrap_or_default()
                ),
            ))
        }
    };
    from_value_at(&chat_form, "response_format")
        .map(Some)
        .map_err(rename_error)
}

/// An error of the chat route's planning, naming the Responses API's field instead
/// (`max_tokens` is `max_output_tokens`, `response_format.json_schema.strict` is
/// `text.format.strict`, the messages are `input`), in its `param` and its message.
pub fn rename_error(mut error: ApiError) -> ApiError {
    if let Some(param) = error.param.take() {
        let renamed = rename(&param);
        if renamed != param {
            error.message = error.message.replace(&param, &renamed);
        }
        error.param = Some(renamed);
    }
    error
}

fn rename(param: &str) -> String {
    if param == "messages" || param.starts_with("messages[") {
        return "input".into();
    }
    if param == "max_tokens" || param == "max_completion_tokens" {
        return "max_output_tokens".into();
    }
    for (chat, responses) in [
        ("response_format.json_schema", "text.format"),
        ("response_format", "text.format"),
        ("tool_choice.function", "tool_choice"),
    ] {
        if let Some(rest) = param.strip_prefix(chat) {
            if rest.is_empty() || rest.starts_with('.') {
                return format!("{responses}{rest}");
            }
        }
    }
    if param.starts_with("tools[") {
        if let Some((head, rest)) = param.split_once("].function") {
            return format!("{head}]{rest}");
        }
    }
    param.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::parse_body;

    fn reading(body: Value) -> Result<Reading, ApiError> {
        let request: ResponsesRequest = parse_body(body.to_string().as_bytes())?;
        read(&request, &[])
    }

    #[test]
    fn a_tool_round_trip_reads_as_a_chat_history() {
        let r = reading(json!({
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": "Weather in Oslo?"},
                {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                 "content": [{"type": "output_text", "text": "Checking.", "annotations": []}]},
                {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get",
                 "arguments": "{\"city\":\"Oslo\"}", "status": "completed"},
                {"type": "function_call", "call_id": "call_2", "name": "get", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "12C"},
                {"type": "function_call_output", "call_id": "call_2",
                 "output": [{"type": "input_text", "text": "9C"}]},
            ],
            "max_output_tokens": 9,
            "tools": [{"type": "function", "name": "get", "parameters": {"type": "object"}, "strict": true}],
            "tool_choice": {"type": "function", "name": "get"},
            "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "string"}, "strict": true}},
        }))
        .unwrap();
        let m = &r.chat.messages;
        let roles: Vec<&str> = m.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool", "tool"]);
        let calls = m[2].tool_calls.as_ref().unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].id.as_deref(), Some("call_1"));
        assert_eq!(calls[0].function.arguments, "{\"city\":\"Oslo\"}");
        assert!(matches!(&m[4].content, Some(Content::Text(t)) if t == "9C"));
        // The instructions are not part of the conversation a continuation inherits.
        assert_eq!(r.conversation.len(), 4);
        assert_eq!(r.chat.sampling.max_tokens, Some(9));
        let tools = r.chat.tools.unwrap();
        assert_eq!(tools[0].function.name, "get");
        assert_eq!(tools[0].function.strict, Some(true));
        assert!(
            matches!(r.chat.tool_choice, Some(ToolChoice::Named(n)) if n.function.name == "get")
        );
        assert!(matches!(
            r.chat.response_format,
            Some(ResponseFormat::JsonSchema { json_schema, .. })
                if json_schema.strict == Some(true) && json_schema.name.as_deref() == Some("x")
        ));
    }

    #[test]
    fn a_string_input_is_one_user_message() {
        let r = reading(json!({"input": "hi"})).unwrap();
        assert_eq!(r.chat.messages.len(), 1);
        assert_eq!(r.chat.messages[0].role, "user");
    }

    #[test]
    fn errors_name_the_responses_field() {
        for (body, param) in [
            (
                json!({"input": [{"role": "robot", "content": "x"}]}),
                "input[0].role",
            ),
            (
                json!({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "u"}]}]}),
                "input[0].content[0].type",
            ),
            (
                json!({"input": [{"type": "item_reference", "id": "x"}]}),
                "input[0].type",
            ),
            (
                json!({"input": [{"type": "function_call", "name": "f"}]}),
                "input[0]",
            ),
            (json!({"input": [3]}), "input[0]"),
            (
                json!({"input": "x", "tools": [{"type": "web_search"}]}),
                "tools[0].type",
            ),
            (
                json!({"input": "x", "tools": [{"type": "function"}]}),
                "tools[0]",
            ),
            (
                json!({"input": "x", "tool_choice": {"type": "file_search"}}),
                "tool_choice.type",
            ),
            (
                json!({"input": "x", "text": {"format": {"type": "grammar"}}}),
                "text.format.type",
            ),
            (
                json!({"input": "x", "text": {"format": {"type": "json_schema", "name": 3}}}),
                "text.format",
            ),
            (
                json!({"input": "x", "text": {"grammar": "x"}}),
                "text.grammar",
            ),
            (
                json!({"input": "x", "conversation": "conv_1"}),
                "conversation",
            ),
            (json!({"input": "x", "top_logprobs": 2}), "top_logprobs"),
            (json!({"input": "x", "n": 2}), "n"),
        ] {
            let e = reading(body.clone())
                .err()
                .unwrap_or_else(|| panic!("{body} was read"));
            assert_eq!(e.status.as_u16(), 400);
            assert_eq!(e.param.as_deref(), Some(param), "{body}: {}", e.message);
        }
    }

    #[test]
    fn chat_parameters_are_renamed() {
        for (chat, responses) in [
            ("messages", "input"),
            ("messages[3].content", "input"),
            ("max_tokens", "max_output_tokens"),
            ("response_format.json_schema.strict", "text.format.strict"),
            ("response_format", "text.format"),
            ("response_formats", "response_formats"),
            ("tool_choice.function.name", "tool_choice.name"),
            ("tools[2].function.name", "tools[2].name"),
            ("tools", "tools"),
            ("temperature", "temperature"),
        ] {
            assert_eq!(rename(chat), responses);
        }
        let e = rename_error(ApiError::invalid_param(
            "max_tokens",
            "max_tokens must be at least 1",
        ));
        assert_eq!(e.param.as_deref(), Some("max_output_tokens"));
        assert_eq!(e.message, "max_output_tokens must be at least 1");
    }
}
