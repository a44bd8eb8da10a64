//! From a request's constraint to a compiled grammar: the request-level description
//! ([`Spec`]: which field asked, which tool-call schema), its facade [`Constraint`], and the
//! facade's cache with errors turned into OpenAI error objects.

use std::sync::Arc;
use std::time::Duration;

use constrain::{
    CallInput, Compilation, CompileOptions, Constraint, GrammarCache as Cache, Limits,
    SchemaOptions, TokenIndex, ToolCallFormat,
};
use serde_json::Value;

use crate::error::{constraint_error, ApiError};
use crate::tools::CustomInput;

/// What the output must follow, as the request said it: its [`Spec::constraint`] is what
/// compiles (and the cache key).
#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    /// JSON valid against a schema.
    JsonSchema(Value),
    /// A regular expression, matched in full.
    Regex(String),
    /// A GBNF grammar.
    Gbnf(String),
    /// A Lark grammar.
    Lark(String),
    /// An XGrammar structural tag, as its JSON.
    StructuralTag(Value),
    /// Tool calls in `format`: one, or with `parallel` one or more; each call's arguments
    /// valid against its function's parameters. With `or`, the output may instead be that (a
    /// response format).
    ToolCalls {
        /// The functions that may be called: name and parameters schema.
        tools: Vec<(String, Value)>,
        /// The custom tools that may be called: name and input.
        custom: Vec<(String, CustomInput)>,
        /// How the model writes calls.
        format: ToolCallFormat,
        /// One or more calls.
        parallel: bool,
        /// An alternative to calling.
        or: Option<Box<Spec>>,
    },
    /// What follows the format's trigger once calls began in free text: the rest of the calls.
    AfterTrigger {
        /// The functions that may be called: name and parameters schema.
        tools: Vec<(String, Value)>,
        /// The custom tools that may be called: name and input.
        custom: Vec<(String, CustomInput)>,
        /// How the model writes calls.
        format: ToolCallFormat,
        /// More calls may follow.
        parallel: bool,
    },
    /// A reasoning model's answer, after its `</think>`: a little whitespace, then `answer`
    /// (`None`: any text), or prose in which the format's trigger cannot appear.
    Answer {
        /// What the answer follows.
        answer: Option<Box<Spec>>,
        /// With tools offered in `auto` mode: calls, or prose without the trigger.
        prose_without: Option<String>,
    },
}

impl Spec {
    /// The facade's constraint: leaves as they are, tool calls in their family's format.
    pub fn constraint(&self) -> Constraint {
        let call = |schema: &Value| Constraint::JsonSchema(schema.clone());
        let inputs = |tools: &[(String, Value)],
                      custom: &[(String, CustomInput)],
                      format: &ToolCallFormat|
         -> Vec<(String, CallInput)> {
            let close = format.text_call_close().unwrap_or_default();
            tools
                .iter()
                .map(|(n, p)| (n.clone(), CallInput::Json(call(p))))
                .chain(
                    custom
                        .iter()
                        .map(|(n, i)| (n.clone(), CallInput::Text(i.constraint(close)))),
                )
                .collect()
        };
        match self {
            Spec::JsonSchema(schema) => call(schema),
            Spec::Regex(pattern) => Constraint::Regex(pattern.clone()),
            Spec::Gbnf(text) => Constraint::Gbnf(text.clone()),
            Spec::Lark(text) => Constraint::Lark(text.clone()),
            Spec::StructuralTag(tag) => Constraint::StructuralTag(tag.clone()),
            Spec::ToolCalls {
                tools,
                custom,
                format,
                parallel,
                or,
            } => {
                let calls = format.calls_of(&inputs(tools, custom, format), *parallel);
                match or {
                    Some(alternative) => Constraint::AnyOf(vec![calls, alternative.constraint()]),
                    None => calls,
                }
            }
            Spec::AfterTrigger {
                tools,
                custom,
                format,
                parallel,
            } => format.after_trigger_of(&inputs(tools, custom, format), *parallel),
            Spec::Answer {
                answer,
                prose_without,
            } => {
                let any_text = |excludes: Vec<&str>| {
                    Constraint::StructuralTag(serde_json::json!({"type": "structural_tag",
                        "format": {"type": "any_text", "excludes": excludes}}))
                };
                let answer = match (answer, prose_without) {
                    (Some(a), Some(trigger)) => {
                        Constraint::AnyOf(vec![a.constraint(), any_text(vec![trigger.as_str()])])
                    }
                    (Some(a), None) => a.constraint(),
                    (None, _) => any_text(Vec::new()),
                };
                Constraint::Sequence(vec![Constraint::Regex("[ \\n]{0,4}".into()), answer])
            }
        }
    }

    /// The request field a compile error is reported against.
    fn param(&self) -> &'static str {
        match self {
            Spec::JsonSchema(_) | Spec::StructuralTag(_) => "response_format",
            Spec::Regex(_) => "regex",
            Spec::Gbnf(_) | Spec::Lark(_) => "grammar",
            Spec::ToolCalls { .. } | Spec::AfterTrigger { .. } => "tools",
            Spec::Answer {
                answer: Some(a), ..
            } => a.param(),
            Spec::Answer { answer: None, .. } => "messages",
        }
    }

    /// An OpenAI error object for `err`, naming the field (and, inside a tool call's
    /// parameters, the function and the pointer there).
    fn error(&self, err: &constrain::Error) -> ApiError {
        match self {
            Spec::ToolCalls { tools, .. } | Spec::AfterTrigger { tools, .. } => {
                crate::tools::parameters_error(tools, err)
                    .unwrap_or_else(|| constraint_error(self.param(), err))
            }
            Spec::Answer {
                answer: Some(a), ..
            } => a.error(err),
            _ => constraint_error(self.param(), err),
        }
    }
}

/// The server's grammars: the facade's [`constrain::GrammarCache`] for the model's
/// vocabulary, with the server's schema layout and budgets, answering in OpenAI error objects.
pub struct GrammarCache {
    cache: Cache,
}

impl GrammarCache {
    /// A cache of at most `capacity` grammars, each compiled with `schema` options within
    /// `limits` (whose compile time covers each compilation whole).
    pub fn new(
        index: Arc<TokenIndex>,
        schema: SchemaOptions,
        limits: Limits,
        capacity: usize,
    ) -> GrammarCache {
        GrammarCache {
            cache: Cache::new(index, CompileOptions { schema, limits }, capacity),
        }
    }

    /// The compiled grammar of `spec`, and whether it came from the cache. Compiles (slow: call
    /// it off the async threads) on a miss.
    pub fn get(&self, spec: &Spec) -> (Result<Arc<Compilation>, ApiError>, bool) {
        let (result, hit) = self.cache.get(&spec.constraint());
        (result.map_err(|e| spec.error(&e)), hit)
    }

    /// Grammars in the cache.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }

    /// The compile-time budget of one compilation.
    pub fn compile_budget(&self) -> Option<Duration> {
        self.cache.options().limits.max_compile_time
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use constrain::{CompiledGrammar, Matcher, Separators, TokenKind, Vocabulary, Whitespace};
    use serde_json::json;

    /// A byte-level vocabulary: every byte is a token, plus an end token.
    fn byte_index() -> Arc<TokenIndex> {
        let mut tokens: Vec<(u32, Vec<u8>, TokenKind)> = (0..=255u8)
            .map(|b| (b as u32, vec![b], TokenKind::Text))
            .collect();
        tokens.push((256, b"<eos>".to_vec(), TokenKind::EndOfSequence));
        TokenIndex::new(Arc::new(Vocabulary::from_tokens(tokens).unwrap()))
    }

    fn cache() -> GrammarCache {
        let options = SchemaOptions {
            whitespace: Whitespace::Compact,
            separators: Some(Separators::python()),
            ..Default::default()
        };
        let limits = Limits {
            max_compile_time: Some(Duration::from_secs(10)),
            ..Limits::default()
        };
        GrammarCache::new(byte_index(), options, limits, 4)
    }

    fn accepts(grammar: &Arc<CompiledGrammar>, text: &str) -> bool {
        let mut m = Matcher::new(grammar.clone());
        m.accept_bytes(text.as_bytes()).is_ok() && m.is_accepting()
    }

    fn f_tool() -> Vec<(String, Value)> {
        vec![(
            "f".into(),
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                   "additionalProperties": false}),
        )]
    }

    #[test]
    fn tool_call_grammars() {
        let cache = cache();
        let spec = Spec::ToolCalls {
            tools: f_tool(),
            custom: Vec::new(),
            format: ToolCallFormat::generic(),
            parallel: true,
            or: None,
        };
        let (g, hit) = cache.get(&spec);
        assert!(!hit);
        let g = g.unwrap().grammar.clone();
        let one = "<tool_call>{\"name\": \"f\", \"arguments\": {\"n\": 1}}</tool_call>";
        assert!(accepts(&g, one));
        assert!(accepts(&g, &format!("{one}\n{one}")));
        assert!(!accepts(
            &g,
            "<tool_call>{\"name\": \"g\", \"arguments\": {\"n\": 1}}</tool_call>"
        ));
        assert!(cache.get(&spec).1, "the second time comes from the cache");

        let single = Spec::ToolCalls {
            tools: f_tool(),
            custom: Vec::new(),
            format: ToolCallFormat::generic(),
            parallel: false,
            or: Some(Box::new(Spec::JsonSchema(json!({"type": "boolean"})))),
        };
        let g = cache.get(&single).0.unwrap().grammar.clone();
        assert!(accepts(&g, one));
        assert!(!accepts(&g, &format!("{one}\n{one}")));
        assert!(accepts(&g, "true"));

        let after = Spec::AfterTrigger {
            tools: f_tool(),
            custom: Vec::new(),
            format: ToolCallFormat::generic(),
            parallel: true,
        };
        let g = cache.get(&after).0.unwrap().grammar.clone();
        assert!(accepts(
            &g,
            "{\"name\": \"f\", \"arguments\": {\"n\": 2}}</tool_call>"
        ));
    }

    #[test]
    fn custom_tools_take_text_in_their_grammar_beside_functions() {
        let cache = cache();
        let spec = Spec::ToolCalls {
            tools: f_tool(),
            custom: vec![
                (
                    "math".into(),
                    CustomInput::Lark("start: NUM (\"+\" NUM)*\nNUM: /[0-9]+/".into()),
                ),
                ("note".into(), CustomInput::Text),
            ],
            format: ToolCallFormat::generic(),
            parallel: true,
            or: None,
        };
        let g = cache.get(&spec).0.unwrap().grammar.clone();
        assert!(accepts(&g, "<tool_call>math\n1+22</tool_call>"));
        assert!(!accepts(&g, "<tool_call>math\n1+x</tool_call>"));
        assert!(accepts(
            &g,
            "<tool_call>note\nany <b>text</b>\n</tool_call>\n<tool_call>{\"name\": \"f\", \"arguments\": {\"n\": 1}}</tool_call>"
        ));
        assert!(!accepts(
            &g,
            "<tool_call>note\nno </tool_call> inside</tool_call>"
        ));
    }

    #[test]
    fn answers_after_thinking() {
        let cache = cache();
        let json_answer = Spec::Answer {
            answer: Some(Box::new(Spec::JsonSchema(json!({"type": "integer"})))),
            prose_without: None,
        };
        let g = cache.get(&json_answer).0.unwrap().grammar.clone();
        assert!(accepts(&g, "\n\n42"));
        assert!(!accepts(&g, "\n\nforty-two"));
        let calls_or_prose = Spec::Answer {
            answer: Some(Box::new(Spec::ToolCalls {
                tools: f_tool(),
                custom: Vec::new(),
                format: ToolCallFormat::hermes(),
                parallel: false,
                or: None,
            })),
            prose_without: Some("<tool_call>".into()),
        };
        let g = cache.get(&calls_or_prose).0.unwrap().grammar.clone();
        assert!(accepts(&g, "\n\nIt is sunny."));
        assert!(accepts(
            &g,
            "\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"n\": 1}}\n</tool_call>"
        ));
        // A call is never written in prose, where it would not be checked.
        assert!(!accepts(&g, "\n\nSure: <tool_call>\n{\"name\": \"f\"}"));
        let anything = Spec::Answer {
            answer: None,
            prose_without: None,
        };
        let g = cache.get(&anything).0.unwrap().grammar.clone();
        assert!(accepts(&g, "\nwhatever <b>"));
    }

    #[test]
    fn bad_constraints_are_400s_and_cached() {
        let cache = cache();
        let spec =
            Spec::JsonSchema(json!({"type": "object", "properties": {"a": {"minimum": "x"}}}));
        let (r, _) = cache.get(&spec);
        let e = r.unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        assert!(e.message.contains("/properties/a"), "{}", e.message);
        assert!(cache.get(&spec).1);
        let e = cache.get(&Spec::Regex("(".into())).0.unwrap_err();
        assert_eq!(e.param.as_deref(), Some("regex"));
        let e = cache
            .get(&Spec::Gbnf("root ::= undefined-rule".into()))
            .0
            .unwrap_err();
        assert_eq!(e.code, Some("invalid_grammar"));
    }

    #[test]
    fn structural_tags_compile_and_bad_ones_name_the_pointer() {
        let cache = cache();
        let tag = json!({"type": "structural_tag", "format": {"type": "triggered_tags",
            "triggers": ["<f>"], "at_least_one": true,
            "tags": [{"begin": "<f>", "content": {"type": "json_schema", "json_schema": {"type": "integer"}},
                      "end": "</f>"}]}});
        let g = cache
            .get(&Spec::StructuralTag(tag))
            .0
            .unwrap()
            .grammar
            .clone();
        assert!(accepts(&g, "<f>1</f> then text"));
        assert!(!accepts(&g, "text first <f>1</f>"));
        let bad = json!({"type": "structural_tag", "format": {"type": "or", "elements": [{"type": "x"}]}});
        let e = cache.get(&Spec::StructuralTag(bad)).0.unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        assert_eq!(e.param.as_deref(), Some("response_format"));
        assert_eq!(e.code, Some("invalid_structural_tag"));
        assert!(
            e.message.contains("/format/elements/0/type"),
            "{}",
            e.message
        );
    }
}
