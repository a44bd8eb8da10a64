//! llama.cpp backend: guaranteed-valid generation with a GGUF model.
//!
//! - [`Model`] loads a GGUF file and reads its [`Vocabulary`](constrain_vocab::Vocabulary)
//!   from the model itself, so masks line up with the model's logits.
//! - [`Session`] is a context; [`Session::generate`] runs the decode loop with an optional
//!   grammar [`Matcher`](constrain_engine::Matcher) in lockstep.
//! - [`Session::generate_beams`] runs constrained beam search, all beams of a step in one
//!   batch, on the multi-sequence API ([`Session::decode`], [`Session::copy_sequence`], ...).
//! - [`ChatTemplate`] renders a conversation as a chat model's prompt.
//! - [`model_store`] knows where the default model is cached and how to fetch it.

#![deny(missing_docs)]

mod beam;
mod chat;
mod error;
mod generate;
mod gpu;
mod llama_reference;
mod model;
pub mod model_store;
mod sequences;
mod session;
mod stats;
mod vocabulary;

pub use beam::{BeamGeneration, BeamRequest};
pub use chat::{ChatMessage, ChatTemplate, CHAT_TEMPLATES};
pub use error::LlamaError;
pub use generate::{Generation, Request, Sink};
pub use gpu::{default_gpu_layers, GpuDevice, NoGpu, Placement};
pub use llama_reference::llama_json_schema_to_gbnf;
pub use model::{LoadOptions, Model};
pub use sequences::SequenceTokens;
pub use session::{Session, SessionOptions};
pub use stats::{Stats, StopReason};
pub use vocabulary::vocabulary_from_model;
