//! A request checked and turned into what the engine runs ([`Plan`]): its sampling settings,
//! seed and limits, its prompt's tokens, and its constraint (which tools, which format), all
//! refused with a 400 naming the field before any work is queued.
//!
//! The constraint is chosen as a [`Spec`] ([`response_spec`], `chat_spec`) and compiled by
//! [`prepare`]; nothing the request asks to constrain is ever dropped: a field of
//! `response_format` this server does not know, or a `strict: true` it cannot keep, is a 400.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use constrain::{ToolCallFormat, WarningKind};
use constrain_sampling::{PenaltyWindow, SamplerConfig, SamplingError};
use serde_json::{json, Value};

use crate::api::{
    ChatRequest, CompletionRequest, Prompt, ResponseFormat, SamplingFields, Tool, ToolChoice,
};
use crate::engine::{ConstraintKind, GenParams};
use crate::error::ApiError;
use crate::grammars::Spec;
use crate::state::AppState;
use crate::tools;

/// Which route a request came by, and so how its reply is shaped.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// `/v1/chat/completions`; `tools_active`: calls are read back from the output.
    Chat {
        /// Whether the model was offered tools to call.
        tools_active: bool,
        /// Whether the output starts with the model's thinking (`reasoning_content`).
        reasoning: bool,
    },
    /// `/v1/completions`.
    Completion,
}

/// What a chat or completion request asks for, checked.
pub struct Plan {
    /// The route.
    pub kind: Kind,
    /// The prompt's tokens (a rendered conversation, or the completion's prompt).
    pub prompt: Vec<u32>,
    /// Sampling, seed and limits; `max_tokens` fits in the context after the prompt.
    pub params: GenParams,
    /// Choices.
    pub n: usize,
    /// The constraint, not yet compiled.
    pub spec: Option<(Spec, ConstraintUse)>,
    /// Answer as server-sent events.
    pub stream: bool,
    /// A last event with `usage` (streaming only).
    pub include_usage: bool,
}

/// A chat request's plan: tools, response format, conversation rendered and tokenized.
pub fn chat(state: &AppState, request: &ChatRequest) -> Result<Plan, ApiError> {
    check_model(state, request.model.as_deref())?;
    let top_logprobs = request.top_logprobs.unwrap_or(0) as usize;
    if top_logprobs > 20 {
        return Err(ApiError::invalid_param(
            "top_logprobs",
            "top_logprobs must be between 0 and 20",
        ));
    }
    if request.top_logprobs.is_some() && request.logprobs != Some(true) {
        return Err(ApiError::invalid_param(
            "top_logprobs",
            "top_logprobs needs logprobs: true",
        ));
    }
    let logprobs = (request.logprobs == Some(true)).then_some(top_logprobs);
    let max_tokens = request
        .max_completion_tokens
        .or(request.sampling.max_tokens);
    let (mut params, n) = gen_params(state, &request.sampling, max_tokens, logprobs)?;

    let tool_plan = tool_plan(request, state.tool_format())?;
    let response = response_spec(request.response_format.as_ref(), &request.sampling)?;
    let thinking = thinking(state, request)?;
    let spec = chat_spec(
        tool_plan.as_ref(),
        response,
        state.tool_format(),
        thinking.as_ref(),
    );

    let text = chat_prompt(state, request, tool_plan.as_ref(), thinking.is_some())?;
    let prompt = state
        .tokenizer
        .tokenize(&text)
        .map_err(|e| ApiError::bad_request(e).with_param("messages"))?;
    check_prompt(state, &prompt, &mut params.max_tokens)?;
    Ok(Plan {
        kind: Kind::Chat {
            tools_active: tool_plan.is_some(),
            reasoning: thinking.is_some(),
        },
        prompt,
        params,
        n,
        spec,
        stream: request.sampling.stream.unwrap_or(false),
        include_usage: include_usage(&request.sampling),
    })
}

/// A text completion request's plan: the prompt as text or token ids, a response format.
pub fn completion(state: &AppState, request: &CompletionRequest) -> Result<Plan, ApiError> {
    check_model(state, request.model.as_deref())?;
    if request.echo == Some(true) {
        return Err(ApiError::invalid_param("echo", "echo is not supported"));
    }
    if request.suffix.as_deref().is_some_and(|s| !s.is_empty()) {
        return Err(ApiError::invalid_param("suffix", "suffix is not supported"));
    }
    let logprobs = request.logprobs.map(|k| k as usize);
    if logprobs.is_some_and(|k| k > 20) {
        return Err(ApiError::invalid_param(
            "logprobs",
            "logprobs must be between 0 and 20",
        ));
    }
    let (mut params, n) = gen_params(
        state,
        &request.sampling,
        request.sampling.max_tokens.or(Some(16)),
        logprobs,
    )?;
    let spec = response_spec(request.response_format.as_ref(), &request.sampling)?;
    let prompt = match &request.prompt {
        Prompt::Text(t) => state.tokenizer.tokenize(t),
        Prompt::Texts(v) if v.len() == 1 => state.tokenizer.tokenize(&v[0]),
        Prompt::Texts(_) => {
            return Err(ApiError::invalid_param(
                "prompt",
                "give one prompt (batches of prompts are not supported)",
            ))
        }
        Prompt::Tokens(ids) => {
            let width = state.vocabulary.logits_width();
            if ids.is_empty() || ids.iter().any(|&t| t as usize >= width) {
                return Err(ApiError::invalid_param(
                    "prompt",
                    "token ids must be a non-empty list of this model's ids",
                ));
            }
            Ok(ids.clone())
        }
    }
    .map_err(|e| ApiError::bad_request(e).with_param("prompt"))?;
    check_prompt(state, &prompt, &mut params.max_tokens)?;
    Ok(Plan {
        kind: Kind::Completion,
        prompt,
        params,
        n,
        spec,
        stream: request.sampling.stream.unwrap_or(false),
        include_usage: include_usage(&request.sampling),
    })
}

fn include_usage(f: &SamplingFields) -> bool {
    f.stream_options.as_ref().is_some_and(|o| o.include_usage)
}

/// The prompt text of a chat request, checked as [`chat`] checks its tools and thinking.
pub fn prompt_text(state: &AppState, request: &ChatRequest) -> Result<String, ApiError> {
    let tool_plan = tool_plan(request, state.tool_format())?;
    let thinking = thinking(state, request)?;
    chat_prompt(state, request, tool_plan.as_ref(), thinking.is_some())
}

/// The prompt text of a chat request: rendered with the Jinja template in use (which shows
/// the tools itself, if it knows how), or with the built-in template, the tools listed in a
/// system turn. With thinking turned off, the prompt ends in an empty thought.
fn chat_prompt(
    state: &AppState,
    request: &ChatRequest,
    tool_plan: Option<&ToolPlan<'_>>,
    thinking: bool,
) -> Result<String, ApiError> {
    let listed = tool_plan.map(|p| (p.listed.as_slice(), p.required));
    let empty_thought = state.reasons() && !thinking;
    let mut text = match state.jinja() {
        Some(jinja) => {
            let (messages, tools) = if jinja.shows_tools() {
                let tools = listed.map(|(t, _)| crate::prompt::jinja_tools(t));
                (crate::prompt::jinja_messages(&request.messages)?, tools)
            } else if jinja.shows_calls() {
                // The template writes past calls and their results its own way but lists no
                // tools: they go in the system turn.
                let mut messages = crate::prompt::jinja_messages(&request.messages)?;
                if let Some((tools, required)) = listed.filter(|(t, _)| !t.is_empty()) {
                    let listing = crate::tools::system_prompt(tools, required, state.tool_format());
                    match messages.first_mut() {
                        Some(first) if first["role"] == "system" => {
                            let before = first["content"].as_str().unwrap_or_default();
                            first["content"] = json!(format!("{before}\n\n{listing}"));
                        }
                        _ => messages.insert(0, json!({"role": "system", "content": listing})),
                    }
                }
                (messages, None)
            } else {
                let turns =
                    crate::prompt::chat_messages(&request.messages, listed, state.tool_format())?;
                let turns = turns
                    .into_iter()
                    .map(|t| json!({"role": t.role, "content": t.content}))
                    .collect();
                (turns, None)
            };
            let switch = state.reasons().then_some(thinking);
            let text = jinja
                .render(&messages, tools.as_deref(), switch)
                .map_err(|e| {
                    ApiError::invalid_param(
                        "messages",
                        format!("the chat template cannot render these messages: {e}"),
                    )
                })?;
            if jinja.switches_thinking() {
                return Ok(text);
            }
            text
        }
        None => {
            let messages =
                crate::prompt::chat_messages(&request.messages, listed, state.tool_format())?;
            state.template.render(&messages, true)
        }
    };
    if empty_thought {
        // Thinking turned off: the prompt holds an empty thought, as reasoning models'
        // templates write it.
        text.push_str(&format!(
            "{}\n\n{}\n\n",
            crate::reasoning::START,
            crate::reasoning::END
        ));
    }
    Ok(text)
}

/// A reasoning model's thinking, when this request has it: its budget in tokens (`None`:
/// only `max_tokens` bounds it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thinking {
    /// Most tokens of thinking.
    pub budget: Option<usize>,
}

/// Whether the model thinks before answering this request: a reasoning model does unless
/// `chat_template_kwargs` turns it off. A thinking budget or a thinking switch on a model that
/// does not think is a 400, never ignored.
fn thinking(state: &AppState, request: &ChatRequest) -> Result<Option<Thinking>, ApiError> {
    let mut enabled = true;
    for (key, value) in request.chat_template_kwargs.iter().flatten() {
        match key.as_str() {
            "enable_thinking" | "thinking" => {
                enabled = value.as_bool().ok_or_else(|| {
                    ApiError::invalid_param(
                        &format!("chat_template_kwargs.{key}"),
                        format!("chat_template_kwargs.{key} must be true or false"),
                    )
                })?;
            }
            other => {
                return Err(ApiError::invalid_param(
                    &format!("chat_template_kwargs.{other}"),
                    format!(
                        "chat_template_kwargs.{other} is not supported (the chat templates here \
                         take enable_thinking)"
                    ),
                ))
            }
        }
    }
    let budget = request
        .thinking_budget
        .map(|b| b as usize)
        .or(state.options.reasoning_budget);
    if !state.reasons() {
        if enabled && request.chat_template_kwargs.is_some() {
            return Err(ApiError::invalid_param(
                "chat_template_kwargs.enable_thinking",
                "thinking is turned on, but this model does not think before answering \
                 (see `constrain serve --reasoning`)",
            ));
        }
        if request.thinking_budget.is_some() {
            return Err(ApiError::invalid_param(
                "thinking_budget",
                "thinking_budget is given, but this model does not think before answering \
                 (see `constrain serve --reasoning`)",
            ));
        }
        return Ok(None);
    }
    Ok(enabled.then_some(Thinking { budget }))
}

/// Which tools the model sees and may call.
struct ToolPlan<'a> {
    /// Listed in the system turn.
    listed: Vec<&'a Tool>,
    /// Callable (all listed ones, or the named one).
    callable: Vec<&'a Tool>,
    /// `required` or named: the output is calls only.
    required: bool,
    parallel: bool,
}

fn tool_plan<'r>(
    request: &'r ChatRequest,
    format: &ToolCallFormat,
) -> Result<Option<ToolPlan<'r>>, ApiError> {
    let tools = request.tools.as_deref().unwrap_or_default();
    tools::check_tools(tools, format)?;
    let parallel = request.parallel_tool_calls.unwrap_or(true);
    let all: Vec<&Tool> = tools.iter().collect();
    let choice = request
        .tool_choice
        .clone()
        .unwrap_or_else(|| ToolChoice::Mode(if tools.is_empty() { "none" } else { "auto" }.into()));
    match choice {
        ToolChoice::Mode(mode) => match mode.as_str() {
            "none" => Ok(None),
            "auto" | "required" => {
                if tools.is_empty() {
                    if mode == "auto" {
                        return Ok(None);
                    }
                    return Err(ApiError::invalid_param(
                        "tool_choice",
                        "tool_choice \"required\" needs at least one tool in `tools`",
                    ));
                }
                Ok(Some(ToolPlan {
                    listed: all.clone(),
                    callable: all,
                    required: mode == "required",
                    parallel,
                }))
            }
            other => Err(ApiError::invalid_param(
                "tool_choice",
                format!("tool_choice {other:?}: use none, auto, required or a named function"),
            )),
        },
        ToolChoice::Named(named) => {
            let (name, field) =
                match (named.kind.as_str(), &named.custom) {
                    ("function", _) => (&named.function.name, "tool_choice.function.name"),
                    ("custom", Some(custom)) => (&custom.name, "tool_choice.custom.name"),
                    _ => return Err(ApiError::invalid_param(
                        "tool_choice.type",
                        "a named tool choice is {\"type\": \"function\", \"function\": {\"name\": \
                         ...}} or {\"type\": \"custom\", \"custom\": {\"name\": ...}}",
                    )),
                };
            let Some(tool) = tools
                .iter()
                .find(|t| t.name() == name && (t.kind == "custom") == (named.kind == "custom"))
            else {
                return Err(ApiError::invalid_param(
                    field,
                    format!("tool_choice names {name:?}, which is not in `tools`"),
                ));
            };
            Ok(Some(ToolPlan {
                listed: all,
                callable: vec![tool],
                required: true,
                parallel,
            }))
        }
    }
}

/// How a compiled spec is used, and what the response says about it.
#[derive(Clone)]
pub struct ConstraintUse {
    /// Free text until the tool-call format's trigger, then the spec.
    pub triggered: bool,
    /// Thinking first (free text until `</think>`), then the spec.
    pub thinking: Option<Thinking>,
    /// `json_schema`, `json_object`, `regex`, `grammar`, `lark`, `structural_tag`, `tool_calls`.
    pub kind: &'static str,
    /// `strict` as the request gave it.
    pub strict: Option<bool>,
}

/// The constraint of the response itself: `response_format` or one of the extensions.
pub fn response_spec(
    format: Option<&ResponseFormat>,
    fields: &SamplingFields,
) -> Result<Option<(Spec, ConstraintUse)>, ApiError> {
    if let Some(field) = format.and_then(ResponseFormat::unknown_field) {
        let hint = match format {
            Some(ResponseFormat::JsonSchema { .. }) if field == "response_format.schema" => {
                "; with type json_schema the schema goes in response_format.json_schema.schema"
            }
            _ => "",
        };
        return Err(ApiError::invalid_param(
            &field,
            format!("{field} is not supported, and it is not ignored either{hint}"),
        ));
    }
    let mut found: Vec<(&str, Spec, ConstraintUse)> = Vec::new();
    let uses = |kind, strict| ConstraintUse {
        triggered: false,
        thinking: None,
        kind,
        strict,
    };
    match format {
        None | Some(ResponseFormat::Text { .. }) => {}
        Some(ResponseFormat::JsonObject { schema: None, .. }) => found.push((
            "response_format",
            Spec::JsonSchema(json!({"type": "object"})),
            uses("json_object", None),
        )),
        // llama-server's form of a schema: the schema is what is enforced, whatever it allows.
        Some(ResponseFormat::JsonObject {
            schema: Some(schema),
            ..
        }) => found.push((
            "response_format",
            Spec::JsonSchema(schema.clone()),
            uses("json_schema", None),
        )),
        Some(ResponseFormat::JsonSchema { json_schema, .. }) => {
            let schema = json_schema.schema.clone().unwrap_or_else(|| json!({}));
            found.push((
                "response_format",
                Spec::JsonSchema(schema),
                uses("json_schema", Some(json_schema.strict.unwrap_or(false))),
            ));
        }
        Some(ResponseFormat::StructuralTag { fields }) => found.push((
            "response_format",
            Spec::StructuralTag(ResponseFormat::structural_tag(fields)),
            uses("structural_tag", None),
        )),
    }
    if let Some(schema) = &fields.json_schema {
        found.push((
            "json_schema",
            Spec::JsonSchema(schema.clone()),
            uses("json_schema", None),
        ));
    }
    if let Some(regex) = &fields.regex {
        found.push(("regex", Spec::Regex(regex.clone()), uses("regex", None)));
    }
    let syntax = fields.grammar_syntax.as_deref();
    if let Some(syntax) = syntax {
        if !matches!(syntax, "gbnf" | "lark") {
            return Err(ApiError::invalid_param(
                "grammar_syntax",
                format!("grammar_syntax {syntax:?} is not one of \"gbnf\", \"lark\""),
            ));
        }
        if fields.grammar.is_none() {
            return Err(ApiError::invalid_param(
                "grammar_syntax",
                "grammar_syntax is given without a grammar",
            ));
        }
    }
    if let Some(grammar) = &fields.grammar {
        let (spec, kind) = match syntax {
            Some("lark") => (Spec::Lark(grammar.clone()), "lark"),
            _ => (Spec::Gbnf(grammar.clone()), "grammar"),
        };
        found.push(("grammar", spec, uses(kind, None)));
    }
    match found.len() {
        0 => Ok(None),
        1 => Ok(found.pop().map(|(_, spec, u)| (spec, u))),
        _ => Err(ApiError::invalid_param(
            found[1].0,
            format!(
                "give at most one constraint; this request has {}",
                found.iter().map(|f| f.0).collect::<Vec<_>>().join(" and ")
            ),
        )),
    }
}

/// The constraint of a chat answer. With tools to call: calls only (`required` or a named
/// function), calls or the response's own constraint (`auto` beside one), or calls after
/// the format's trigger in free text (`auto`); without tools, the response's own constraint.
/// With thinking, that constraint applies to the answer after it (in `auto` mode: calls, or
/// prose in which no call can open).
fn chat_spec(
    tool_plan: Option<&ToolPlan<'_>>,
    response: Option<(Spec, ConstraintUse)>,
    format: &ToolCallFormat,
    thinking: Option<&Thinking>,
) -> Option<(Spec, ConstraintUse)> {
    let (spec, used) = match tool_plan {
        Some(plan) => {
            let tools = tools::callable(&plan.callable);
            let custom = tools::custom_callable(&plan.callable);
            let strict = plan
                .callable
                .iter()
                .any(|t| t.function.strict == Some(true));
            let used = |triggered| ConstraintUse {
                triggered,
                thinking: None,
                kind: "tool_calls",
                strict: Some(strict),
            };
            let calls = |or| Spec::ToolCalls {
                tools: tools.clone(),
                custom: custom.clone(),
                format: format.clone(),
                parallel: plan.parallel,
                or,
            };
            if plan.required {
                (calls(None), used(false))
            } else if let Some((alternative, _)) = response {
                (calls(Some(Box::new(alternative))), used(false))
            } else if thinking.is_some() {
                let answer = Spec::Answer {
                    answer: Some(Box::new(calls(None))),
                    prose_without: Some(format.trigger_text().to_string()),
                };
                return Some((
                    answer,
                    ConstraintUse {
                        thinking: thinking.copied(),
                        ..used(false)
                    },
                ));
            } else {
                let after = Spec::AfterTrigger {
                    tools: tools.clone(),
                    custom: custom.clone(),
                    format: format.clone(),
                    parallel: plan.parallel,
                };
                (after, used(true))
            }
        }
        None => match response {
            Some(r) => r,
            // Thinking within a budget needs the end of the thought forced, then any answer.
            None => match thinking {
                Some(t) if t.budget.is_some() => (
                    Spec::Answer {
                        answer: None,
                        prose_without: None,
                    },
                    ConstraintUse {
                        triggered: false,
                        thinking: Some(*t),
                        kind: "reasoning",
                        strict: None,
                    },
                ),
                _ => return None,
            },
        },
    };
    match thinking {
        Some(t) => Some((
            Spec::Answer {
                answer: Some(Box::new(spec)),
                prose_without: None,
            },
            ConstraintUse {
                thinking: Some(*t),
                ..used
            },
        )),
        None => Some((spec, used)),
    }
}

/// A plan's constraint, compiled, as the job and the response carry it.
pub struct Prepared {
    /// What the sequences follow; `None`: free text.
    pub constraint: Option<ConstraintKind>,
    /// The response's `constraint` field (null without one).
    pub info: Value,
    /// The compile time, when the grammar was not in the cache.
    pub compiled_in: Option<Duration>,
}

/// Compiles (or finds in the cache) the plan's constraint. A `strict: true` whose schema has a
/// keyword the grammar does not enforce (an unknown `format`) is refused: the response would
/// otherwise claim a strictness it does not have.
pub async fn prepare(
    state: &Arc<AppState>,
    spec: Option<&(Spec, ConstraintUse)>,
) -> Result<Prepared, ApiError> {
    let Some((spec, used)) = spec else {
        return Ok(Prepared {
            constraint: None,
            info: Value::Null,
            compiled_in: None,
        });
    };
    let (compiled, cached) = compile(state, spec).await?;
    if used.strict == Some(true) {
        if let Some(w) = compiled
            .warnings
            .iter()
            .find(|w| w.kind == WarningKind::UnknownFormat)
        {
            let param = if used.kind == "tool_calls" {
                "tools"
            } else {
                "response_format.json_schema.strict"
            };
            return Err(ApiError::invalid_param(
                param,
                format!(
                    "{param}: strict: true, but the schema has a keyword that is not \
                     enforced: {w}; remove it or give strict: false"
                ),
            )
            .with_code("invalid_schema"));
        }
    }
    let info = json!({
        "type": used.kind,
        "enforced": true,
        "strict": used.strict,
        "triggered_by": if used.triggered {
            Some(state.tool_format().trigger_text())
        } else if used.thinking.is_some() {
            Some(crate::reasoning::END)
        } else {
            None
        },
        "cached": cached,
        "warnings": compiled.warnings.iter().map(ToString::to_string).collect::<Vec<_>>(),
    });
    let constraint = Some(match (&state.reasoning, used.thinking) {
        (Some(end), Some(thinking)) => ConstraintKind::Reasoning {
            end: end.clone(),
            grammar: compiled.grammar.clone(),
            budget: thinking.budget,
        },
        _ if used.triggered => {
            ConstraintKind::Triggered(state.trigger.clone(), compiled.grammar.clone())
        }
        _ => ConstraintKind::Grammar(compiled.grammar.clone()),
    });
    Ok(Prepared {
        constraint,
        info,
        compiled_in: (!cached).then_some(compiled.took),
    })
}

/// Compiles (or finds) the spec's grammar off the async threads.
async fn compile(
    state: &Arc<AppState>,
    spec: &Spec,
) -> Result<(Arc<constrain::Compilation>, bool), ApiError> {
    let state2 = state.clone();
    let spec2 = spec.clone();
    let (result, hit) = tokio::task::spawn_blocking(move || state2.grammars.get(&spec2))
        .await
        .map_err(|e| ApiError::internal(format!("compiling the constraint: {e}")))?;
    let compiled = result?;
    state.metrics.add_compile((!hit).then_some(compiled.took));
    Ok((compiled, hit))
}

/// Candidates a traced token lists per distribution (before and after the mask and the funnel).
const TRACE_CANDIDATES: usize = 5;

/// Longest prompt-lookup draft a request may ask for: each drafted token is a row of logits
/// the step evaluates and copies.
pub const MAX_LOOKUP: usize = 16;

/// The ranges OpenAI's API documents for its sampling fields, narrower than the funnel's own
/// (which [`SamplerConfig::set`] checks); a value outside gets the funnel's kind of message.
const API_RANGES: [(&str, f64, f64); 7] = [
    ("temperature", 0.0, 2.0),
    ("top_p", 0.0, 1.0),
    ("min_p", 0.0, 1.0),
    ("typical_p", 0.0, 1.0),
    ("presence_penalty", -2.0, 2.0),
    ("frequency_penalty", -2.0, 2.0),
    ("repeat_penalty", 0.01, 10.0),
];

/// An out-of-range sampling setting as a 400 naming the field.
fn setting_error(e: SamplingError) -> ApiError {
    let param = match &e {
        SamplingError::InvalidSetting { setting, .. } => *setting,
        _ => "sampling",
    };
    ApiError::invalid_param(param, e.to_string())
}

/// The request's sampling fields over the server's defaults, checked against OpenAI's ranges
/// and then by [`SamplerConfig::set`].
fn sampler_config(state: &AppState, f: &SamplingFields) -> Result<SamplerConfig, ApiError> {
    let float = |value: Option<f32>| value.map(f64::from);
    let fields = [
        ("temperature", float(f.temperature)),
        ("top_k", f.top_k.map(|k| k as f64)),
        ("top_p", float(f.top_p)),
        ("min_p", float(f.min_p)),
        ("typical_p", float(f.typical_p)),
        ("repeat_penalty", float(f.repeat_penalty)),
        ("frequency_penalty", float(f.frequency_penalty)),
        ("presence_penalty", float(f.presence_penalty)),
    ];
    for (name, value) in fields {
        let range = API_RANGES.iter().find(|(known, ..)| *known == name);
        if let (Some(&(_, lo, hi)), Some(value)) = (range, value) {
            if !(lo..=hi).contains(&value) {
                return Err(setting_error(SamplingError::InvalidSetting {
                    setting: name,
                    value: value.to_string(),
                    expected: "a number in the OpenAI API's range for it (temperature [0, 2], \
                               penalties [-2, 2], repeat_penalty [0.01, 10], others [0, 1])",
                }));
            }
        }
    }
    let mut sampling = state
        .options
        .sampling
        .with_settings(fields)
        .map_err(setting_error)?;
    // OpenAI's penalties look at the generated tokens only.
    sampling.penalty_window = PenaltyWindow {
        last_n: None,
        include_prompt: false,
    };
    Ok(sampling)
}

/// Sampling settings, seed, stop strings and limits from the shared fields.
fn gen_params(
    state: &AppState,
    f: &SamplingFields,
    max_tokens: Option<u64>,
    logprobs: Option<usize>,
) -> Result<(GenParams, usize), ApiError> {
    let mut sampling = sampler_config(state, f)?;
    let n = f.n.unwrap_or(1) as usize;
    if n == 0 || n > state.options.max_n {
        return Err(ApiError::invalid_param(
            "n",
            format!("n must be between 1 and {}", state.options.max_n),
        ));
    }
    let vocab_width = state.vocabulary.logits_width();
    let mut logit_bias = Vec::new();
    for (key, &bias) in f.logit_bias.iter().flatten() {
        let id: u32 = key
            .parse()
            .ok()
            .filter(|&id| (id as usize) < vocab_width)
            .ok_or_else(|| {
                ApiError::invalid_param(
                    "logit_bias",
                    format!(
                        "logit_bias key {key:?} is not a token id of this model (0..{vocab_width})"
                    ),
                )
            })?;
        if !(-100.0..=100.0).contains(&bias) {
            return Err(ApiError::invalid_param(
                "logit_bias",
                format!("logit_bias must be between -100 and 100, not {bias}"),
            ));
        }
        // -100 bans the token, as OpenAI's documentation says it effectively does.
        logit_bias.push((
            id,
            if bias <= -100.0 {
                f32::NEG_INFINITY
            } else {
                bias
            },
        ));
    }
    let lookup = match f.lookup {
        None => state.options.lookup,
        Some(k) if k <= MAX_LOOKUP as u64 => k as usize,
        Some(k) => {
            return Err(ApiError::invalid_param(
                "lookup",
                format!("lookup must be between 0 and {MAX_LOOKUP}, not {k}"),
            ))
        }
    };
    let stop = f.stop.as_ref().map(|s| s.strings()).unwrap_or_default();
    if stop.len() > 4 {
        return Err(ApiError::invalid_param("stop", "at most 4 stop strings"));
    }
    sampling.logit_bias = logit_bias;
    sampling.validate().map_err(setting_error)?;
    let max_tokens = match max_tokens {
        Some(0) => {
            return Err(ApiError::invalid_param(
                "max_tokens",
                "max_tokens must be at least 1",
            ))
        }
        Some(m) => usize::try_from(m).unwrap_or(usize::MAX),
        None => state.options.default_max_tokens,
    };
    let seed = match f.seed {
        Some(s) => s as u64,
        None => random_u64(),
    };
    Ok((
        GenParams {
            sampling,
            seed,
            max_tokens,
            stop,
            logprobs,
            fast_forward: logprobs.is_none(),
            lookup,
            trace: (f.trace == Some(true)).then_some(TRACE_CANDIDATES),
        },
        n,
    ))
}

fn check_model(state: &AppState, model: Option<&str>) -> Result<(), ApiError> {
    match model {
        None | Some("") => Ok(()),
        Some(m) if state.model_aliases.iter().any(|a| a == m) => Ok(()),
        Some(m) => Err(ApiError::invalid_param(
            "model",
            format!(
                "the model {m:?} is not served here; this server serves {:?} (GET /v1/models)",
                state.model_id
            ),
        )
        .with_code("model_not_found")),
    }
}

/// The prompt must leave room for one token.
fn check_prompt(state: &AppState, prompt: &[u32], max_tokens: &mut usize) -> Result<(), ApiError> {
    let ctx = state.options.ctx_size as usize;
    if prompt.len() >= ctx {
        return Err(ApiError::bad_request(format!(
            "the prompt is {} tokens long but the context holds {ctx} (--ctx-size)",
            prompt.len()
        ))
        .with_param("messages")
        .with_code("context_length_exceeded"));
    }
    *max_tokens = (*max_tokens).min(ctx - prompt.len());
    Ok(())
}

/// A random 64-bit number (ids, seeds).
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}
