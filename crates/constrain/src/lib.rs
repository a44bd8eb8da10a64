//! Grammar-constrained decoding for any model: output that follows a JSON Schema, a regular
//! expression, a GBNF or a Lark grammar, every time.
//!
//! The model is yours: anything that turns the tokens so far into one logit per vocabulary id.
//! Here it is a closure returning random logits, and the output still validates:
//!
//! ```
//! use std::sync::Arc;
//! use constrain::{Constraint, ConstrainedSampler, SamplerConfig, TokenIndex, TokenKind, Vocabulary};
//!
//! // A toy vocabulary; real ones come from `Tokenizer::from_file("tokenizer.json")`.
//! let pieces = ["{", "}", "\"", "name", "age", ":", ",", " ", "Ada", "Bob", "4", "2", "<eos>"];
//! let vocab = Vocabulary::from_tokens(pieces.iter().enumerate().map(|(id, p)| {
//!     let kind = if *p == "<eos>" { TokenKind::EndOfSequence } else { TokenKind::Text };
//!     (id as u32, p.as_bytes().to_vec(), kind)
//! }))?;
//! let index = TokenIndex::new(Arc::new(vocab));
//!
//! let schema = serde_json::json!({
//!     "type": "object",
//!     "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
//!     "required": ["name", "age"],
//!     "additionalProperties": false
//! });
//! let grammar = Constraint::JsonSchema(schema.clone()).compile(index)?;
//! let config = SamplerConfig { temperature: 1.5, ..SamplerConfig::default() };
//! let mut sampler = ConstrainedSampler::new(grammar, config, 7)?;
//!
//! // The "model": random logits from a tiny generator.
//! let mut state = 0x2545_f491_u64;
//! let mut model = |_tokens: &[u32]| -> Vec<f32> {
//!     (0..pieces.len())
//!         .map(|_| {
//!             state ^= state << 13;
//!             state ^= state >> 7;
//!             state ^= state << 17;
//!             (state % 1000) as f32 / 100.0
//!         })
//!         .collect()
//! };
//! let output = sampler.generate(&mut model, 200)?;
//! let text = String::from_utf8(output.bytes)?;
//! let value: serde_json::Value = serde_json::from_str(&text)?;
//! assert!(jsonschema::is_valid(&schema, &value), "{text}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Key types
//!
//! - [`Constraint`]: what the output must follow (a schema, a regex, a GBNF grammar, or a
//!   composition of them such as a [`ToolCallFormat`]'s calls, or an XGrammar structural tag); [`Constraint::compile`] binds
//!   it to a vocabulary ([`TokenIndex`]) as a shareable [`CompiledGrammar`], and a
//!   [`GrammarCache`] keeps compilations by the constraint's key.
//! - [`ConstrainedSampler`]: a [`Matcher`] plus the sampling [`Funnel`]: give it one step's
//!   logits, get a token; tell it what was fed; ask it for forced tokens.
//! - [`beam_search`]: the `B` most likely outputs under the constraint, with a
//!   [`BeamModel`] that evaluates several sequences at once.
//! - [`prompt_lookup`], [`grammar_prefix`]: drafts for speculative decoding, cut where the
//!   grammar refuses ([`ConstrainedSampler::set_lookup`] uses them).
//! - [`Step`]: one sequence's decode loop, split at the model ([`Step::next`]: what to
//!   evaluate; [`Step::sample`]: draw from those logits), for drivers that run the model
//!   their own way (a batching scheduler, a single-sequence loop).
//! - [`TriggeredMatcher`]: free text until a [`Trigger`] string appears in the output, then a
//!   grammar from the bytes after it (a tool call opened in the middle of prose).
//! - The engine ([`Matcher`], masks, rollback) and the funnel ([`Funnel`], [`SamplerConfig`])
//!   are re-exported for finer control.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod beam;
mod cache;
mod constraint;
mod lookup;
pub mod resources;
mod sampler;
mod step;
mod structural_tag;
mod tool_calls;
mod trace;
mod triggered;

pub use beam::{beam_search, Beam, BeamConfig, BeamModel, BeamOutput};
pub use cache::{Cached, GrammarCache};
pub use constraint::{parse_schema, Built, Compilation, CompileOptions, Constraint, Error};
pub use lookup::{
    grammar_prefix, is_draw_point, prompt_lookup, DraftCut, DraftLength, LOOKUP_NGRAMS,
};
pub use sampler::{ConstrainedSampler, Generation, StopReason};
pub use step::{Emitted, Next, Step, StepConstraint, StepOptions, StepStats, Stop, Verified};
pub use structural_tag::StructuralTagError;
pub use tool_calls::{
    CallInput, CallPiece, CallReader, ParsedCall, ToolCallFormat, TOOL_CALL_FORMATS,
};
pub use trace::{Candidate, Origin, StepTrace};
pub use triggered::{Trigger, TriggeredMatcher};

pub use constrain_engine::{
    fill_masks, CompiledGrammar, Completion, Expr, Grammar, GrammarBuilder, GrammarError, Limits,
    MatchError, Matcher, TokenIndex,
};
pub use constrain_gbnf::GbnfError;
pub use constrain_jsonschema::{
    AdditionalProperties, Escapes, Numbers, Options as SchemaOptions, PropertyOrder, SchemaError,
    Separators, Warning, WarningKind, Whitespace,
};
pub use constrain_lark::LarkError;
pub use constrain_sampling::{
    DraftCheck, Funnel, History, SamplerConfig, SamplingError, TokenLogprobs, Xoshiro256StarStar,
};
pub use constrain_vocab::{TokenKind, Tokenizer, VocabError, Vocabulary};
