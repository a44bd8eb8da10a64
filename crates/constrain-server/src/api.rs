//! The request bodies of the API, as OpenAI defines them, plus the extensions this server
//! reads (named as llama-server and vLLM name them).
//!
//! Unknown fields are ignored (clients send `user`, `metadata`, `store`...), as OpenAI does,
//! except the constraint fields of other servers ([`FOREIGN_CONSTRAINTS`]): ignoring one would
//! answer unconstrained output to a request that asked for a constraint.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::error::ApiError;

/// `POST /v1/chat/completions`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ChatRequest {
    /// The model id (see `GET /v1/models`); any alias of the one model served.
    #[serde(default)]
    pub model: Option<String>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Sampling and limits shared with the completions route.
    #[serde(flatten)]
    pub sampling: SamplingFields,
    /// Most tokens to generate (the newer name).
    #[serde(default)]
    pub max_completion_tokens: Option<u64>,
    /// Whether to return log-probabilities of the output tokens.
    #[serde(default)]
    pub logprobs: Option<bool>,
    /// How many most likely alternatives to list per token (0-20; needs `logprobs`).
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    /// `text`, `json_object` or `json_schema`.
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    /// Functions the model may call.
    #[serde(default)]
    pub tools: Option<Vec<Tool>>,
    /// `none`, `auto`, `required` or `{"type": "function", "function": {"name": ...}}`.
    #[serde(default)]
    pub tool_choice: Option<ToolChoice>,
    /// Whether several calls may come in one answer (default true).
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// Variables of the chat template: `enable_thinking` (or `thinking`) turns a reasoning
    /// model's thinking off or on.
    #[serde(default)]
    pub chat_template_kwargs: Option<serde_json::Map<String, Value>>,
    /// Most tokens a reasoning model thinks before its answer is forced (within `max_tokens`).
    #[serde(default)]
    pub thinking_budget: Option<u64>,
}

/// `POST /v1/completions`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CompletionRequest {
    /// The model id.
    #[serde(default)]
    pub model: Option<String>,
    /// The prompt: a string, or an array of one string.
    pub prompt: Prompt,
    /// Sampling and limits shared with the chat route.
    #[serde(flatten)]
    pub sampling: SamplingFields,
    /// How many most likely alternatives to list per token (0-5 in OpenAI's API; up to 20 here).
    #[serde(default)]
    pub logprobs: Option<u32>,
    /// `text`, `json_object` or `json_schema` (an extension on this route).
    #[serde(default)]
    pub response_format: Option<ResponseFormat>,
    /// Echo the prompt before the completion (not supported: must be false).
    #[serde(default)]
    pub echo: Option<bool>,
    /// Text after the completion (not supported: must be absent).
    #[serde(default)]
    pub suffix: Option<String>,
}

/// The prompt of a completion.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Prompt {
    /// One prompt.
    Text(String),
    /// Prompts (only one is supported).
    Texts(Vec<String>),
    /// Token ids.
    Tokens(Vec<u32>),
}

impl Default for Prompt {
    fn default() -> Prompt {
        Prompt::Text(String::new())
    }
}

/// Fields both generation routes take.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct SamplingFields {
    /// Most tokens to generate.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Softmax temperature (0-2; 0 is greedy).
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Nucleus sampling mass.
    #[serde(default)]
    pub top_p: Option<f32>,
    /// Seed of the draw: the same seed and request give the same output.
    #[serde(default)]
    pub seed: Option<i64>,
    /// Up to 4 strings that end the output (not included).
    #[serde(default)]
    pub stop: Option<Stop>,
    /// Number of choices.
    #[serde(default)]
    pub n: Option<u32>,
    /// -2..2: subtracted from the logit of every token already generated.
    #[serde(default)]
    pub presence_penalty: Option<f32>,
    /// -2..2: subtracted per occurrence of a generated token.
    #[serde(default)]
    pub frequency_penalty: Option<f32>,
    /// Token id (as a string) to a bias in -100..100 added to its logit.
    #[serde(default)]
    pub logit_bias: Option<BTreeMap<String, f32>>,
    /// Stream server-sent events.
    #[serde(default)]
    pub stream: Option<bool>,
    /// `include_usage`: a last chunk with the token counts.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Extension: keep the K most likely tokens (0 = off).
    #[serde(default)]
    pub top_k: Option<usize>,
    /// Extension: drop tokens less likely than P times the most likely one.
    #[serde(default)]
    pub min_p: Option<f32>,
    /// Extension: locally typical sampling mass.
    #[serde(default)]
    pub typical_p: Option<f32>,
    /// Extension: CTRL's repetition penalty (1 = off).
    #[serde(default)]
    pub repeat_penalty: Option<f32>,
    /// Extension: speculative decoding by prompt lookup with drafts of up to this many tokens
    /// (0 = off); the output is distributed as without it.
    #[serde(default)]
    pub lookup: Option<u64>,
    /// Extension: trace every token (its origin, the tokens the mask allowed, the probability
    /// mass it removed, the candidates before and after the mask and the funnel), returned
    /// beside each choice as `trace` (in stream chunks, with the tokens they carry).
    #[serde(default)]
    pub trace: Option<bool>,
    /// Extension: a grammar the output follows, GBNF (start rule `root`) unless
    /// `grammar_syntax` says otherwise.
    #[serde(default)]
    pub grammar: Option<String>,
    /// Extension: the notation of `grammar`: `"gbnf"` (the default) or `"lark"` (start rule
    /// `start`).
    #[serde(default)]
    pub grammar_syntax: Option<String>,
    /// Extension: a regular expression the output matches in full.
    #[serde(default)]
    pub regex: Option<String>,
    /// Extension: a JSON Schema the output is valid against (as `response_format` json_schema).
    #[serde(default)]
    pub json_schema: Option<Value>,
}

/// `stop`: one string or several.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    /// One stop string.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Stop {
    /// The stop strings, empty ones dropped.
    pub fn strings(&self) -> Vec<String> {
        let all = match self {
            Stop::One(s) => vec![s.clone()],
            Stop::Many(v) => v.clone(),
        };
        all.into_iter().filter(|s| !s.is_empty()).collect()
    }
}

/// `stream_options`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct StreamOptions {
    /// Send a last chunk with `usage` (and empty `choices`).
    #[serde(default)]
    pub include_usage: bool,
}

/// One message of the conversation.
#[derive(Clone, Debug, Deserialize)]
pub struct Message {
    /// `system`, `developer`, `user`, `assistant` or `tool`.
    pub role: String,
    /// The text (a string, or text parts).
    #[serde(default)]
    pub content: Option<Content>,
    /// The name of the participant (kept in the text of user turns).
    #[serde(default)]
    pub name: Option<String>,
    /// Calls the assistant made (assistant messages).
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Which call this message answers (tool messages).
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// The content of a message.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Parts; only `text` parts are supported.
    Parts(Vec<ContentPart>),
}

/// One part of a message's content.
#[derive(Clone, Debug, Deserialize)]
pub struct ContentPart {
    /// `text` (others, such as `image_url`, are refused).
    #[serde(rename = "type")]
    pub kind: String,
    /// The text of a `text` part.
    #[serde(default)]
    pub text: Option<String>,
}

impl Content {
    /// The text, parts joined; an error for a part that is not text.
    pub fn text(&self, param: &str) -> Result<String, ApiError> {
        match self {
            Content::Text(s) => Ok(s.clone()),
            Content::Parts(parts) => {
                let mut out = String::new();
                for (i, part) in parts.iter().enumerate() {
                    match (&*part.kind, &part.text) {
                        ("text", Some(text)) => out.push_str(text),
                        (kind, _) => {
                            return Err(ApiError::invalid_param(
                                &format!("{param}[{i}]"),
                                format!(
                                    "content parts of type {kind:?} are not supported: \
                                     this model reads text only"
                                ),
                            ))
                        }
                    }
                }
                Ok(out)
            }
        }
    }
}

/// A call in an assistant message of the history.
#[derive(Clone, Debug, Deserialize)]
pub struct ToolCall {
    /// The call's id.
    #[serde(default)]
    pub id: Option<String>,
    /// `function`.
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
    /// Which function, with which arguments (absent in a custom tool's call).
    #[serde(default)]
    pub function: FunctionCall,
    /// A custom tool's call: its name and text input.
    #[serde(default)]
    pub custom: Option<CustomCall>,
}

/// A custom tool's call.
#[derive(Clone, Debug, Deserialize)]
pub struct CustomCall {
    /// The tool.
    pub name: String,
    /// The input text.
    #[serde(default)]
    pub input: String,
}

/// A function call: name and arguments (JSON text).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct FunctionCall {
    /// The function.
    pub name: String,
    /// The arguments as JSON text.
    #[serde(default)]
    pub arguments: String,
}

/// A tool the model may call.
#[derive(Clone, Debug, Deserialize)]
pub struct Tool {
    /// `function`, or `custom` (OpenAI's custom tools: text input, free or in a grammar).
    #[serde(rename = "type")]
    pub kind: String,
    /// The function (absent in tools of other types).
    #[serde(default)]
    pub function: FunctionDef,
    /// The custom tool (with `type: "custom"`).
    #[serde(default)]
    pub custom: Option<CustomDef>,
}

impl Tool {
    /// The name calls give: the function's, or the custom tool's.
    pub fn name(&self) -> &str {
        match &self.custom {
            Some(c) if self.kind == "custom" => &c.name,
            _ => &self.function.name,
        }
    }
}

/// A custom tool: its input is text, free (`format` absent or `{"type": "text"}`) or in a
/// grammar's language (`{"type": "grammar", "grammar": {"syntax": "lark" | "regex",
/// "definition": ...}}`).
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CustomDef {
    /// Its name (`a-zA-Z0-9_-`, at most 64 characters).
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: Option<String>,
    /// The input's format.
    #[serde(default)]
    pub format: Option<Value>,
}

/// A function's definition.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct FunctionDef {
    /// Its name (`a-zA-Z0-9_-`, at most 64 characters).
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: Option<String>,
    /// The JSON Schema of its arguments (an object; absent: no arguments).
    #[serde(default)]
    pub parameters: Option<Value>,
    /// OpenAI's strict mode. The arguments follow the schema either way.
    #[serde(default)]
    pub strict: Option<bool>,
}

/// `tool_choice`.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub enum ToolChoice {
    /// `none`, `auto` or `required`.
    Mode(String),
    /// One named function.
    Named(NamedToolChoice),
}

/// `{"type": "function", "function": {"name": ...}}` or `{"type": "custom", "custom": {"name":
/// ...}}`.
#[derive(Clone, Debug, Deserialize)]
pub struct NamedToolChoice {
    /// `function` or `custom`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function.
    #[serde(default)]
    pub function: NamedFunction,
    /// The custom tool.
    #[serde(default)]
    pub custom: Option<NamedFunction>,
}

/// The function a named tool choice names.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct NamedFunction {
    /// Its name.
    pub name: String,
}

/// `response_format`.
///
/// Fields this server does not know are kept (`other`) so that planning refuses them by name:
/// a constraint-bearing field that is ignored would leave the output silently unconstrained.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text.
    Text {
        /// Fields not of this format.
        #[serde(flatten)]
        other: BTreeMap<String, Value>,
    },
    /// Any JSON object; with `schema` (as llama-server documents it), JSON valid against it.
    JsonObject {
        /// The JSON Schema the output is valid against (absent: any JSON object).
        #[serde(default)]
        schema: Option<Value>,
        /// Fields not of this format.
        #[serde(flatten)]
        other: BTreeMap<String, Value>,
    },
    /// JSON valid against a schema.
    JsonSchema {
        /// The schema and its name.
        json_schema: JsonSchemaFormat,
        /// Fields not of this format.
        #[serde(flatten)]
        other: BTreeMap<String, Value>,
    },
    /// An XGrammar structural tag: `format`, or the older `structures` and `triggers`, as
    /// vLLM takes them.
    StructuralTag {
        /// The structural tag's fields.
        #[serde(flatten)]
        fields: serde_json::Map<String, Value>,
    },
}

impl ResponseFormat {
    /// The first field of this format the server does not know, as a request path
    /// (`response_format.json_schema.x`).
    pub fn unknown_field(&self) -> Option<String> {
        let first =
            |m: &BTreeMap<String, Value>, at: &str| m.keys().next().map(|k| format!("{at}.{k}"));
        match self {
            ResponseFormat::Text { other } | ResponseFormat::JsonObject { other, .. } => {
                first(other, "response_format")
            }
            ResponseFormat::JsonSchema { json_schema, other } => first(other, "response_format")
                .or_else(|| first(&json_schema.other, "response_format.json_schema")),
            ResponseFormat::StructuralTag { fields } => fields
                .keys()
                .find(|k| !["format", "structures", "triggers"].contains(&k.as_str()))
                .map(|k| format!("response_format.{k}")),
        }
    }

    /// A structural tag's JSON as XGrammar reads it (`{"type": "structural_tag", ...}`).
    pub fn structural_tag(fields: &serde_json::Map<String, Value>) -> Value {
        let mut tag = fields.clone();
        tag.insert("type".into(), Value::String("structural_tag".into()));
        Value::Object(tag)
    }
}

/// The `json_schema` of a `response_format`.
#[derive(Clone, Debug, Deserialize)]
pub struct JsonSchemaFormat {
    /// The schema's name.
    #[serde(default)]
    pub name: Option<String>,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// The JSON Schema (absent: any JSON value).
    #[serde(default)]
    pub schema: Option<Value>,
    /// OpenAI's strict mode. The schema is enforced either way; the response's `constraint`
    /// field says so.
    #[serde(default)]
    pub strict: Option<bool>,
    /// Fields not of this format.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// Constraint fields other servers read (vLLM's) and this one does not, with what to send
/// instead: a request carrying one is refused by name.
pub const FOREIGN_CONSTRAINTS: &[(&str, &str)] = &[
    ("guided_json", "json_schema or response_format"),
    ("guided_regex", "regex"),
    ("guided_grammar", "grammar"),
    ("guided_choice", "a json_schema with an enum, or a regex"),
    ("structured_outputs", "json_schema, regex or grammar"),
];

/// Parses a JSON body into `T`, as a 400 that names the field (`param`, a path such as
/// `messages[0].role`) and what is wrong with it when the body does not fit.
///
/// The sampling fields are read on their own first: `T` holds them flattened, and a flattened
/// struct's errors lose their path.
pub fn parse_body<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.is_empty() {
        return Err(ApiError::bad_request(
            "the request has no body: send a JSON object",
        ));
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(format!("the body is not valid JSON: {e}")).with_code("invalid_json")
    })?;
    if !value.is_object() {
        return Err(
            ApiError::bad_request("the body must be a JSON object").with_code("invalid_json")
        );
    }
    for (field, instead) in FOREIGN_CONSTRAINTS {
        if value.get(field).is_some_and(|v| !v.is_null()) {
            return Err(ApiError::invalid_param(
                field,
                format!("{field} is not supported, and it is not ignored either; send {instead}"),
            ));
        }
    }
    from_value::<SamplingFields>(&value)?;
    from_value(&value)
}

/// `value` as a `T`, or a 400 naming the path of the field that does not fit.
fn from_value<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, ApiError> {
    from_value_at(value, "")
}

/// `value`, found at `at` in the body (a path such as `input[2]`; empty: the body itself), as
/// a `T`, or a 400 naming the path of the field that does not fit. For parts of a body read
/// on their own, whose errors must still name their place in the whole body.
pub fn from_value_at<T: serde::de::DeserializeOwned>(
    value: &Value,
    at: &str,
) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.path().to_string();
        let path = match (at, inner.as_str()) {
            ("", _) => inner.clone(),
            (_, ".") => at.to_string(),
            (_, rest) if rest.starts_with('[') => format!("{at}{rest}"),
            (_, rest) => format!("{at}.{rest}"),
        };
        let error = ApiError::bad_request(if path == "." {
            format!("invalid request: {}", e.inner())
        } else {
            format!("invalid request: {path}: {}", e.inner())
        })
        .with_code("invalid_request");
        if path == "." {
            error
        } else {
            error.with_param(&path)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_chat_request_parses() {
        let body = br#"{
            "model": "m", "max_tokens": 20, "temperature": 0, "seed": -3, "stop": "\n", "n": 2,
            "logit_bias": {"42": -100}, "logprobs": true, "top_logprobs": 2,
            "stream": true, "stream_options": {"include_usage": true}, "top_k": 5,
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "42"}
            ],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}, "strict": true}}],
            "tool_choice": {"type": "function", "function": {"name": "f"}},
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string"}, "strict": false}},
            "user": "ignored"
        }"#;
        let r: ChatRequest = parse_body(body).unwrap();
        assert_eq!(r.sampling.max_tokens, Some(20));
        assert_eq!(r.sampling.seed, Some(-3));
        assert_eq!(r.sampling.stop.unwrap().strings(), vec!["\n"]);
        assert_eq!(r.messages.len(), 4);
        assert_eq!(
            r.messages[1].content.as_ref().unwrap().text("m").unwrap(),
            "ab"
        );
        assert_eq!(
            r.messages[2].tool_calls.as_ref().unwrap()[0].function.name,
            "f"
        );
        assert!(matches!(r.tool_choice, Some(ToolChoice::Named(_))));
        assert!(matches!(
            r.response_format,
            Some(ResponseFormat::JsonSchema {
                json_schema: JsonSchemaFormat {
                    strict: Some(false),
                    ..
                },
                ..
            })
        ));
        assert!(r.sampling.stream_options.unwrap().include_usage);
    }

    #[test]
    fn a_json_object_keeps_its_schema_and_unknown_format_fields_are_named() {
        let r: ChatRequest = parse_body(
            br#"{"messages": [], "response_format": {"type": "json_object", "schema": {"type": "string"}}}"#,
        )
        .unwrap();
        let format = r.response_format.unwrap();
        assert!(matches!(
            &format,
            ResponseFormat::JsonObject { schema: Some(s), .. } if s["type"] == "string"
        ));
        assert_eq!(format.unknown_field(), None);
        for (body, field) in [
            (
                &br#"{"type": "json_schema", "schema": {}, "json_schema": {"schema": {}}}"#[..],
                "response_format.schema",
            ),
            (
                br#"{"type": "json_schema", "json_schema": {"schema": {}, "grammar": "x"}}"#,
                "response_format.json_schema.grammar",
            ),
            (
                br#"{"type": "text", "regex": "a+"}"#,
                "response_format.regex",
            ),
            (
                br#"{"type": "json_object", "json_schema": {}}"#,
                "response_format.json_schema",
            ),
        ] {
            let format: ResponseFormat = serde_json::from_slice(body).unwrap();
            assert_eq!(format.unknown_field().as_deref(), Some(field));
        }
    }

    #[test]
    fn malformed_bodies_are_400s_that_say_why() {
        let e = parse_body::<ChatRequest>(b"{not json").unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        assert!(e.message.contains("not valid JSON"));
        let e = parse_body::<ChatRequest>(br#"{"model": "m"}"#).unwrap_err();
        assert!(e.message.contains("messages"), "{}", e.message);
        for (body, param) in [
            (
                &br#"{"messages": [], "max_tokens": "many"}"#[..],
                "max_tokens",
            ),
            (br#"{"messages": [], "stream": "yes"}"#, "stream"),
            (br#"{"messages": [], "top_k": -3}"#, "top_k"),
            (br#"{"messages": "hi"}"#, "messages"),
            (
                br#"{"messages": [{"role": 5, "content": "x"}]}"#,
                "messages[0].role",
            ),
        ] {
            let e = parse_body::<ChatRequest>(body).unwrap_err();
            assert_eq!(e.param.as_deref(), Some(param), "{}", e.message);
            assert!(e.message.contains(param), "{}", e.message);
        }
        assert_eq!(
            parse_body::<ChatRequest>(b"[]")
                .unwrap_err()
                .status
                .as_u16(),
            400
        );
    }

    #[test]
    fn image_parts_are_refused() {
        let c: Content =
            serde_json::from_str(r#"[{"type": "image_url", "image_url": {"url": "x"}}]"#).unwrap();
        let e = c.text("messages[0].content").unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].content[0]"));
    }

    #[test]
    fn completion_prompts() {
        let r: CompletionRequest = parse_body(br#"{"prompt": ["a"], "logprobs": 2}"#).unwrap();
        assert!(matches!(r.prompt, Prompt::Texts(ref v) if v == &["a"]));
        let r: CompletionRequest = parse_body(br#"{"prompt": [1, 2]}"#).unwrap();
        assert!(matches!(r.prompt, Prompt::Tokens(_)));
    }
}
