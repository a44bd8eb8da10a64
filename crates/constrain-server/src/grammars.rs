//! From a request's constraint to a compiled grammar: building it (schemas, regexes, GBNF, tool
//! calls, and their combinations), bounding its compile time, and caching it by its text.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use constrain::{CompiledGrammar, Expr, Grammar, GrammarBuilder, Limits, TokenIndex};
use constrain_engine::RuleId;
use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::error::{constraint_error, ApiError};
use crate::tools::{CALL_CLOSE, CALL_OPEN, CALL_SEPARATOR};

/// What the output must follow, before compilation. Its [`Spec::key`] is the cache key.
#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    /// JSON valid against a schema.
    JsonSchema(Value),
    /// A regular expression, matched in full.
    Regex(String),
    /// A GBNF grammar.
    Gbnf(String),
    /// Tool calls: `<tool_call>CALL</tool_call>`, one, or with `parallel` one or more separated
    /// by newlines; each call valid against `call_schema`. With `or`, the output may instead be
    /// that (a response format).
    ToolCalls {
        /// The schema of one call (see [`crate::tools::call_schema`]).
        call_schema: Value,
        /// One or more calls.
        parallel: bool,
        /// An alternative to calling.
        or: Option<Box<Spec>>,
    },
    /// What follows `<tool_call>` once a call opened in free text: the rest of the call
    /// (`CALL</tool_call>`), then, with `parallel`, more calls.
    AfterCallOpen {
        /// The schema of one call.
        call_schema: Value,
        /// More calls may follow.
        parallel: bool,
    },
}

impl Spec {
    /// The text that identifies the grammar (the cache key).
    pub fn key(&self) -> String {
        self.describe().to_string()
    }

    fn describe(&self) -> Value {
        match self {
            Spec::JsonSchema(s) => json!({"json_schema": s}),
            Spec::Regex(r) => json!({"regex": r}),
            Spec::Gbnf(g) => json!({"gbnf": g}),
            Spec::ToolCalls {
                call_schema,
                parallel,
                or,
            } => json!({"tool_calls": call_schema, "parallel": parallel,
                        "or": or.as_ref().map(|o| o.describe())}),
            Spec::AfterCallOpen {
                call_schema,
                parallel,
            } => json!({"after_call_open": call_schema, "parallel": parallel}),
        }
    }

    /// The request field a compile error is reported against.
    fn param(&self) -> &'static str {
        match self {
            Spec::JsonSchema(_) => "response_format",
            Spec::Regex(_) => "regex",
            Spec::Gbnf(_) => "grammar",
            Spec::ToolCalls { or: Some(_), .. } => "tools",
            Spec::ToolCalls { .. } | Spec::AfterCallOpen { .. } => "tools",
        }
    }
}

/// A compiled constraint with what the compiler noted about it.
#[derive(Debug)]
pub struct Compiled {
    /// The grammar, bound to the model's vocabulary.
    pub grammar: Arc<CompiledGrammar>,
    /// Keywords accepted but not enforced (unknown formats, annotations...), for the response.
    pub warnings: Vec<String>,
    /// How long compilation took.
    pub took: Duration,
}

/// Compiles specs for one vocabulary, each once: a bounded cache by key (least recently used
/// dropped first), failures included (a schema that ran out of time is not tried again).
pub struct GrammarCache {
    index: Arc<TokenIndex>,
    schema_options: constrain_jsonschema::Options,
    limits: Limits,
    capacity: usize,
    entries: Mutex<HashMap<String, Entry>>,
    clock: std::sync::atomic::AtomicU64,
}

struct Entry {
    result: Result<Arc<Compiled>, ApiError>,
    used: u64,
}

impl GrammarCache {
    /// A cache of at most `capacity` grammars; each compilation gets `budget`.
    pub fn new(
        index: Arc<TokenIndex>,
        schema_options: constrain_jsonschema::Options,
        budget: Duration,
        capacity: usize,
    ) -> GrammarCache {
        let limits = Limits {
            max_compile_time: Some(budget),
            ..Limits::default()
        };
        GrammarCache {
            index,
            schema_options,
            limits,
            capacity: capacity.max(1),
            entries: Mutex::new(HashMap::new()),
            clock: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The cache with these budgets for every compilation (source size, schema depth,
    /// automaton sizes); their compile time replaces the budget given to [`GrammarCache::new`].
    pub fn with_limits(mut self, limits: Limits) -> GrammarCache {
        self.limits = limits;
        self
    }

    /// The compiled grammar of `spec`, and whether it came from the cache. Compiles (slow: call
    /// it off the async threads) on a miss.
    pub fn get(&self, spec: &Spec) -> (Result<Arc<Compiled>, ApiError>, bool) {
        let key = spec.key();
        let tick = self
            .clock
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(entry) = self.entries.lock().get_mut(&key) {
            entry.used = tick;
            return (entry.result.clone(), true);
        }
        let result = self.compile(spec).map(Arc::new);
        let mut entries = self.entries.lock();
        if entries.len() >= self.capacity {
            if let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
            {
                entries.remove(&oldest);
            }
        }
        entries.insert(
            key,
            Entry {
                result: result.clone(),
                used: tick,
            },
        );
        (result, false)
    }

    /// Grammars in the cache.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn compile(&self, spec: &Spec) -> Result<Compiled, ApiError> {
        let start = Instant::now();
        let param = spec.param();
        let mut warnings = Vec::new();
        let grammar = self.grammar(spec, &mut warnings).map_err(|e| match spec {
            Spec::ToolCalls { call_schema, .. } | Spec::AfterCallOpen { call_schema, .. } => {
                crate::tools::parameters_error(call_schema, &e)
                    .unwrap_or_else(|| constraint_error(param, &e))
            }
            _ => constraint_error(param, &e),
        })?;
        let limits = self.limits.after(start.elapsed());
        let compiled = CompiledGrammar::new(&grammar, self.index.clone(), limits)
            .map_err(|e| constraint_error(param, &constrain::Error::Grammar(e)))?;
        Ok(Compiled {
            grammar: compiled,
            warnings,
            took: start.elapsed(),
        })
    }

    /// The grammar of `spec` (not yet bound to the vocabulary).
    pub fn grammar(
        &self,
        spec: &Spec,
        warnings: &mut Vec<String>,
    ) -> Result<Grammar, constrain::Error> {
        match spec {
            Spec::JsonSchema(schema) => self.schema(schema, warnings),
            Spec::Regex(pattern) => {
                self.limits.check_source_len(pattern.len())?;
                Ok(Grammar::from_regex(pattern)?)
            }
            Spec::Gbnf(text) => {
                self.limits.check_source_len(text.len())?;
                Ok(constrain_gbnf::parse(text)?)
            }
            Spec::ToolCalls {
                call_schema,
                parallel,
                or,
            } => {
                let call = self.schema(call_schema, warnings)?;
                let mut b = GrammarBuilder::new();
                let body = embed(&mut b, &call, "call.")?;
                let one = Expr::seq(vec![
                    Expr::literal(CALL_OPEN),
                    Expr::rule(body),
                    Expr::literal(CALL_CLOSE),
                ]);
                let one = b.add_rule("tool_call", one)?;
                let calls = if *parallel {
                    Expr::seq(vec![
                        Expr::rule(one),
                        Expr::seq(vec![Expr::literal(CALL_SEPARATOR), Expr::rule(one)]).star(),
                    ])
                } else {
                    Expr::rule(one)
                };
                let root = match or {
                    Some(alternative) => {
                        let alt = self.grammar(alternative, warnings)?;
                        let alt = embed(&mut b, &alt, "response.")?;
                        Expr::alt(vec![calls, Expr::rule(alt)])
                    }
                    None => calls,
                };
                let root = b.add_rule("root", root)?;
                Ok(b.build(root)?)
            }
            Spec::AfterCallOpen {
                call_schema,
                parallel,
            } => {
                let call = self.schema(call_schema, warnings)?;
                let mut b = GrammarBuilder::new();
                let body = embed(&mut b, &call, "call.")?;
                let mut parts = vec![Expr::rule(body), Expr::literal(CALL_CLOSE)];
                if *parallel {
                    parts.push(
                        Expr::seq(vec![
                            Expr::literal(CALL_SEPARATOR),
                            Expr::literal(CALL_OPEN),
                            Expr::rule(body),
                            Expr::literal(CALL_CLOSE),
                        ])
                        .star(),
                    );
                }
                let root = b.add_rule("root", Expr::seq(parts))?;
                Ok(b.build(root)?)
            }
        }
    }

    fn schema(
        &self,
        schema: &Value,
        warnings: &mut Vec<String>,
    ) -> Result<Grammar, constrain::Error> {
        let compiled =
            constrain_jsonschema::compile_with_limits(schema, &self.schema_options, &self.limits)?;
        warnings.extend(compiled.warnings.iter().map(|w| w.to_string()));
        Ok(compiled.grammar)
    }
}

/// Copies the rules of `grammar` into `b`, names prefixed, and returns its start rule there.
/// A grammar with a check beside it (`uniqueItems`) cannot be embedded.
pub fn embed(
    b: &mut GrammarBuilder,
    grammar: &Grammar,
    prefix: &str,
) -> Result<RuleId, constrain::Error> {
    if grammar.text_check().is_some() {
        return Err(constrain::GrammarError::Unsupported {
            what: "a schema with 'uniqueItems' over objects or strings inside a tool call or \
                   beside tools (give it as the only constraint)"
                .into(),
        }
        .into());
    }
    let ids: Vec<RuleId> = grammar
        .rules()
        .map(|(_, name, _)| b.rule_id(&format!("{prefix}{name}")))
        .collect();
    for (id, _, body) in grammar.rules() {
        b.define(ids[id.index()], remap(body, &ids))?;
    }
    Ok(ids[grammar.start().index()])
}

fn remap(expr: &Expr, ids: &[RuleId]) -> Expr {
    match expr {
        Expr::Regex(_) | Expr::Graph(_) => expr.clone(),
        Expr::Rule(r) => Expr::Rule(ids[r.index()]),
        Expr::Seq(parts) => Expr::Seq(parts.iter().map(|p| remap(p, ids)).collect()),
        Expr::Alt(parts) => Expr::Alt(parts.iter().map(|p| remap(p, ids)).collect()),
        Expr::Repeat { expr, min, max } => Expr::Repeat {
            expr: Box::new(remap(expr, ids)),
            min: *min,
            max: *max,
        },
        Expr::Unordered(u) => {
            let mut u = (**u).clone();
            for m in &mut u.members {
                m.expr = remap(&m.expr, ids);
            }
            u.extra = u.extra.as_ref().map(|e| remap(e, ids));
            u.separator = remap(&u.separator, ids);
            Expr::Unordered(Box::new(u))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use constrain::{Matcher, TokenKind, Vocabulary};

    /// A byte-level vocabulary: every byte is a token, plus an end token.
    fn byte_index() -> Arc<TokenIndex> {
        let mut tokens: Vec<(u32, Vec<u8>, TokenKind)> = (0..=255u8)
            .map(|b| (b as u32, vec![b], TokenKind::Text))
            .collect();
        tokens.push((256, b"<eos>".to_vec(), TokenKind::EndOfSequence));
        TokenIndex::new(Arc::new(Vocabulary::from_tokens(tokens).unwrap()))
    }

    fn cache() -> GrammarCache {
        let options = constrain_jsonschema::Options {
            whitespace: constrain_jsonschema::Whitespace::Compact,
            separators: Some(constrain_jsonschema::Separators::python()),
            ..Default::default()
        };
        GrammarCache::new(byte_index(), options, Duration::from_secs(10), 4)
    }

    fn accepts(grammar: &Arc<CompiledGrammar>, text: &str) -> bool {
        let mut m = Matcher::new(grammar.clone());
        m.accept_bytes(text.as_bytes()).is_ok() && m.is_accepting()
    }

    #[test]
    fn tool_call_grammars() {
        let call = json!({"type": "object", "properties": {"name": {"const": "f"},
            "arguments": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
                          "additionalProperties": false}},
            "required": ["name", "arguments"], "additionalProperties": false});
        let cache = cache();
        let spec = Spec::ToolCalls {
            call_schema: call.clone(),
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
            call_schema: call.clone(),
            parallel: false,
            or: Some(Box::new(Spec::JsonSchema(json!({"type": "boolean"})))),
        };
        let g = cache.get(&single).0.unwrap().grammar.clone();
        assert!(accepts(&g, one));
        assert!(!accepts(&g, &format!("{one}\n{one}")));
        assert!(accepts(&g, "true"));

        let after = Spec::AfterCallOpen {
            call_schema: call,
            parallel: true,
        };
        let g = cache.get(&after).0.unwrap().grammar.clone();
        assert!(accepts(
            &g,
            "{\"name\": \"f\", \"arguments\": {\"n\": 2}}</tool_call>"
        ));
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
    fn the_cache_is_bounded() {
        let cache = cache();
        for i in 0..10 {
            cache.get(&Spec::Regex(format!("a{{{i}}}"))).0.unwrap();
        }
        assert_eq!(cache.len(), 4);
    }
}
