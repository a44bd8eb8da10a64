//! Tool calls as constraints: how each model family writes its calls, the grammar of those
//! calls (each call's arguments valid against its function's parameters), and reading the
//! calls back out of the text, whole or as it streams ([`CallReader`]).
//!
//! A family's format is text around each call and around the whole run of calls:
//!
//! | family | one call | between calls | around the calls |
//! |---|---|---|---|
//! | `generic` | `<tool_call>{"name": "N", "arguments": A}</tool_call>` | newline | |
//! | `hermes` (Qwen 2.5/3, Hermes) | `<tool_call>\n{"name": "N", "arguments": A}\n</tool_call>` | newline | |
//! | `llama3` (Llama 3.1-3.3 JSON) | `{"name": "N", "parameters": A}` | one call only | |
//! | `mistral` | `{"name": "N", "arguments": A}` | `, ` | `[TOOL_CALLS] [` ... `]` |
//! | `deepseek` (V3, R1) | `<｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\nA\n```<｜tool▁call▁end｜>` | newline | `<｜tool▁calls▁begin｜>` ... `<｜tool▁calls▁end｜>` |
//! | `harmony` (gpt-oss) | `<\|channel\|>commentary to=functions.N <\|constrain\|>json<\|message\|>A<\|call\|>` | one call only | |
//!
//! The texts are those the families' chat templates write when they render a past call (Qwen's
//! and DeepSeek's are checked against their published templates in the server's tests), so a
//! call generated under the grammar reads back, and renders again, as the same text.

use std::sync::Arc;

use constrain_vocab::Vocabulary;

use crate::constraint::Constraint;
use crate::triggered::Trigger;

mod reader;

pub use reader::{CallPiece, CallReader, ParsedCall};

/// How a model family writes tool calls.
///
/// ```
/// use constrain::{Constraint, ToolCallFormat};
///
/// let format = ToolCallFormat::hermes();
/// let tools = [("get_weather".to_string(), Constraint::JsonSchema(serde_json::json!({"type": "object"})))];
/// let grammar = format.calls(&tools, false).grammar()?;
/// assert!(grammar.rule_count() > 1);
/// assert_eq!(
///     format.render(&[("get_weather", "{\"city\": \"Oslo\"}")]),
///     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>"
/// );
/// # Ok::<(), constrain::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ToolCallFormat {
    name: &'static str,
    /// Before the first call.
    calls_open: &'static str,
    /// Before a call's function name.
    before_name: &'static str,
    /// Between the name and the arguments.
    after_name: &'static str,
    /// After the arguments.
    call_close: &'static str,
    /// Between two calls.
    separator: &'static str,
    /// After the last call.
    calls_close: &'static str,
    /// The text that opens the calls in free text (a prefix of every first call).
    trigger: &'static str,
    /// Whether the name sits inside a JSON string (and is escaped as one).
    name_in_json: bool,
    /// Whether one message may hold several calls.
    parallel: bool,
    /// How a call whose input is free text (an OpenAI custom tool) is written, if the family
    /// has a way.
    text_call: Option<TextCall>,
}

/// A call whose input is text rather than JSON: `before_name`, the name, `after_name`, the
/// input (up to the first `close`), `close`. It begins as the family's other calls do, so the
/// same trigger opens both.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct TextCall {
    before_name: &'static str,
    after_name: &'static str,
    close: &'static str,
}

/// What a call carries: JSON arguments, or text (an OpenAI custom tool's input).
#[derive(Clone, Debug)]
pub enum CallInput {
    /// JSON arguments valid against this constraint (a function's parameters).
    Json(Constraint),
    /// Text in this constraint's language, which must not contain the call's closing text.
    Text(Constraint),
}

/// Every family, by the name `--tool-format` takes, in the order `--help` lists them.
pub const TOOL_CALL_FORMATS: &[&str] = &[
    "generic", "hermes", "llama3", "mistral", "deepseek", "harmony",
];

impl ToolCallFormat {
    /// `<tool_call>{"name": N, "arguments": A}</tool_call>` on one line, calls one per line:
    /// for models whose template has no tool format of its own (the tools and this format are
    /// then described in the system turn).
    pub fn generic() -> ToolCallFormat {
        ToolCallFormat {
            name: "generic",
            calls_open: "",
            before_name: "<tool_call>{\"name\": \"",
            after_name: "\", \"arguments\": ",
            call_close: "}</tool_call>",
            separator: "\n",
            calls_close: "",
            trigger: "<tool_call>",
            name_in_json: true,
            parallel: true,
            text_call: Some(TextCall {
                before_name: "<tool_call>",
                after_name: "\n",
                close: "</tool_call>",
            }),
        }
    }

    /// `<tool_call>\n{"name": N, "arguments": A}\n</tool_call>`, calls one per line: Hermes and
    /// Qwen 2.5/3 (their templates' own spelling).
    pub fn hermes() -> ToolCallFormat {
        ToolCallFormat {
            name: "hermes",
            before_name: "<tool_call>\n{\"name\": \"",
            call_close: "}\n</tool_call>",
            text_call: None,
            ..ToolCallFormat::generic()
        }
    }

    /// `{"name": N, "parameters": A}`, one call per message: Llama 3.1-3.3's JSON tool calling.
    pub fn llama3() -> ToolCallFormat {
        ToolCallFormat {
            name: "llama3",
            calls_open: "",
            before_name: "{\"name\": \"",
            after_name: "\", \"parameters\": ",
            call_close: "}",
            separator: "",
            calls_close: "",
            trigger: "{\"name\": \"",
            name_in_json: true,
            parallel: false,
            text_call: None,
        }
    }

    /// `[TOOL_CALLS] [{"name": N, "arguments": A}, ...]`: Mistral's function calling.
    pub fn mistral() -> ToolCallFormat {
        ToolCallFormat {
            name: "mistral",
            calls_open: "[TOOL_CALLS] [",
            before_name: "{\"name\": \"",
            after_name: "\", \"arguments\": ",
            call_close: "}",
            separator: ", ",
            calls_close: "]",
            trigger: "[TOOL_CALLS]",
            name_in_json: true,
            parallel: true,
            text_call: None,
        }
    }

    /// DeepSeek V3 and R1: each call a `function<｜tool▁sep｜>NAME` header and a fenced JSON
    /// block, the calls between `<｜tool▁calls▁begin｜>` and `<｜tool▁calls▁end｜>`.
    pub fn deepseek() -> ToolCallFormat {
        ToolCallFormat {
            name: "deepseek",
            calls_open: "<｜tool▁calls▁begin｜>",
            before_name: "<｜tool▁call▁begin｜>function<｜tool▁sep｜>",
            after_name: "\n```json\n",
            call_close: "\n```<｜tool▁call▁end｜>",
            separator: "\n",
            calls_close: "<｜tool▁calls▁end｜>",
            trigger: "<｜tool▁calls▁begin｜>",
            name_in_json: false,
            parallel: true,
            text_call: None,
        }
    }

    /// gpt-oss's harmony format: a message on the commentary channel addressed to
    /// `functions.NAME`, JSON arguments, `<|call|>`; one call per message.
    pub fn harmony() -> ToolCallFormat {
        ToolCallFormat {
            name: "harmony",
            calls_open: "",
            before_name: "<|channel|>commentary to=functions.",
            after_name: " <|constrain|>json<|message|>",
            call_close: "<|call|>",
            separator: "",
            calls_close: "",
            trigger: "<|channel|>commentary to=functions.",
            name_in_json: false,
            parallel: false,
            text_call: None,
        }
    }

    /// The family named `name` (one of [`TOOL_CALL_FORMATS`]; `qwen` is `hermes`).
    pub fn from_name(name: &str) -> Option<ToolCallFormat> {
        Some(match name {
            "generic" => ToolCallFormat::generic(),
            "hermes" | "qwen" => ToolCallFormat::hermes(),
            "llama3" => ToolCallFormat::llama3(),
            "mistral" => ToolCallFormat::mistral(),
            "deepseek" => ToolCallFormat::deepseek(),
            "harmony" | "gpt-oss" => ToolCallFormat::harmony(),
            _ => return None,
        })
    }

    /// The family whose calls a chat template (its Jinja text) writes, read from the markers
    /// the template spells; `generic` when it spells none.
    pub fn detect(template: &str) -> ToolCallFormat {
        if template.contains("tool▁calls▁begin") {
            ToolCallFormat::deepseek()
        } else if template.contains("[TOOL_CALLS]") {
            ToolCallFormat::mistral()
        } else if template.contains("<|channel|>") && template.contains("functions.") {
            ToolCallFormat::harmony()
        } else if template.contains("<tool_call>") {
            ToolCallFormat::hermes()
        } else if template.contains("<|python_tag|>")
            || (template.contains("<|start_header_id|>") && template.contains("\"parameters\""))
        {
            ToolCallFormat::llama3()
        } else {
            ToolCallFormat::generic()
        }
    }

    /// The family's name (`hermes`, `llama3`, ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The text whose appearance in free text opens the calls (see
    /// [`after_trigger`](Self::after_trigger)).
    pub fn trigger_text(&self) -> &'static str {
        self.trigger
    }

    /// Whether one message may hold several calls.
    pub fn allows_parallel(&self) -> bool {
        self.parallel
    }

    /// Whether the family has a way to write a call whose input is text (OpenAI's custom
    /// tools): only `generic` does, `<tool_call>NAME\nINPUT</tool_call>`.
    pub fn allows_text_calls(&self) -> bool {
        self.text_call.is_some()
    }

    /// The text a text call's input may not contain (it ends the call).
    pub fn text_call_close(&self) -> Option<&'static str> {
        self.text_call.as_ref().map(|t| t.close)
    }

    /// One call to each of `tools` (name, constraint of the arguments), or with `parallel` (and a
    /// family that allows it) one or more.
    pub fn calls(&self, tools: &[(String, Constraint)], parallel: bool) -> Constraint {
        self.calls_after(&json_inputs(tools), parallel, "")
    }

    /// What follows the [trigger](Self::trigger_text) once the calls began in free text: the
    /// rest of the calls.
    pub fn after_trigger(&self, tools: &[(String, Constraint)], parallel: bool) -> Constraint {
        self.calls_after(&json_inputs(tools), parallel, self.trigger)
    }

    /// [`calls`](Self::calls) of tools whose inputs are JSON or text. A text input needs a
    /// family that [allows](Self::allows_text_calls) it (it is left out otherwise).
    pub fn calls_of(&self, tools: &[(String, CallInput)], parallel: bool) -> Constraint {
        self.calls_after(tools, parallel, "")
    }

    /// [`after_trigger`](Self::after_trigger) of tools whose inputs are JSON or text.
    pub fn after_trigger_of(&self, tools: &[(String, CallInput)], parallel: bool) -> Constraint {
        self.calls_after(tools, parallel, self.trigger)
    }

    /// The trigger of [`after_trigger`](Self::after_trigger), for
    /// [`TriggeredMatcher`](crate::TriggeredMatcher).
    pub fn trigger(&self, vocabulary: &Vocabulary) -> Arc<Trigger> {
        Arc::new(Trigger::new(self.trigger, vocabulary))
    }

    /// The calls with `written` (a prefix of every first call) already written.
    fn calls_after(
        &self,
        tools: &[(String, CallInput)],
        parallel: bool,
        written: &str,
    ) -> Constraint {
        // `written` is stripped from the first call only.
        let call = |head: &str, written: &str| {
            Constraint::AnyOf(
                tools
                    .iter()
                    .filter_map(|(name, input)| {
                        let (before, after, body, close) = match (input, &self.text_call) {
                            (CallInput::Json(arguments), _) => (
                                self.before_name,
                                self.after_name,
                                arguments,
                                self.call_close,
                            ),
                            (CallInput::Text(text), Some(t)) => {
                                (t.before_name, t.after_name, text, t.close)
                            }
                            (CallInput::Text(_), None) => return None,
                        };
                        let name = match input {
                            CallInput::Json(_) => self.spell_name(name),
                            CallInput::Text(_) => name.clone(),
                        };
                        let open = format!("{head}{before}{name}{after}");
                        let open = open.strip_prefix(written).unwrap_or(&open);
                        Some(Constraint::Sequence(vec![
                            Constraint::Text(open.to_string()),
                            body.clone(),
                            Constraint::Text(close.into()),
                        ]))
                    })
                    .collect(),
            )
        };
        let mut parts = vec![call(self.calls_open, written)];
        if parallel && self.parallel {
            parts.push(Constraint::Repeat {
                item: Box::new(Constraint::Sequence(vec![
                    Constraint::Text(self.separator.into()),
                    call("", ""),
                ])),
                min: 0,
                max: None,
            });
        }
        if !self.calls_close.is_empty() {
            parts.push(Constraint::Text(self.calls_close.into()));
        }
        Constraint::Sequence(parts)
    }

    /// A text call as the family writes it (see [`allows_text_calls`](Self::allows_text_calls));
    /// `None` for a family without text calls.
    pub fn render_text_call(&self, name: &str, input: &str) -> Option<String> {
        let t = self.text_call.as_ref()?;
        Some(format!(
            "{}{name}{}{input}{}",
            t.before_name, t.after_name, t.close
        ))
    }

    /// Calls as the family writes them (`arguments`: JSON text, kept as given).
    pub fn render(&self, calls: &[(&str, &str)]) -> String {
        let mut text = String::from(self.calls_open);
        for (i, (name, arguments)) in calls.iter().enumerate() {
            if i > 0 {
                text.push_str(self.separator);
            }
            text.push_str(self.before_name);
            text.push_str(&self.spell_name(name));
            text.push_str(self.after_name);
            text.push_str(arguments);
            text.push_str(self.call_close);
        }
        text.push_str(self.calls_close);
        text
    }

    /// A reader of text in which this family's calls may appear.
    pub fn reader(&self) -> CallReader {
        CallReader::new(self.clone())
    }

    /// Splits a whole output into its text before the calls and the complete calls (a call
    /// cut off is dropped).
    pub fn parse(&self, text: &str) -> (String, Vec<ParsedCall>) {
        let mut reader = self.reader();
        let mut pieces = reader.push(text);
        pieces.extend(reader.finish());
        let mut content = String::new();
        for piece in pieces {
            if let CallPiece::Content(c) = piece {
                content.push_str(&c);
            }
        }
        (content, reader.into_calls())
    }

    fn spell_name(&self, name: &str) -> String {
        if self.name_in_json {
            let quoted = serde_json::Value::String(name.into()).to_string();
            quoted[1..quoted.len() - 1].to_string()
        } else {
            name.to_string()
        }
    }
}

fn json_inputs(tools: &[(String, Constraint)]) -> Vec<(String, CallInput)> {
    tools
        .iter()
        .map(|(n, c)| (n.clone(), CallInput::Json(c.clone())))
        .collect()
}

impl std::str::FromStr for ToolCallFormat {
    type Err = String;

    fn from_str(name: &str) -> Result<ToolCallFormat, String> {
        ToolCallFormat::from_name(name).ok_or_else(|| {
            format!(
                "unknown tool-call format {name:?}; use one of {}",
                TOOL_CALL_FORMATS.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests;
