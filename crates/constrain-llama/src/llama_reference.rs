//! llama.cpp's own sampler chain and GBNF grammar sampler, run through the same session, for
//! comparisons (the throughput benchmark).
//!
//! It follows llama.cpp's `common_sampler_sample`: the token is drawn from the chain without
//! the grammar first; only if the grammar rejects it are the full logits filtered by the
//! grammar and the token drawn again. That is llama.cpp's default, and its fastest mode.

use std::time::{Duration, Instant};

use constrain_vocab::TokenKind;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

use crate::stats::{percentile_us, Stats, StopReason};
use constrain_sampling::SamplerConfig;

use crate::{Generation, LlamaError, Session, Sink};

/// llama.cpp's JSON Schema to GBNF converter (`json_schema_to_grammar` of llama.cpp's `common`).
pub fn llama_json_schema_to_gbnf(schema: &str) -> Result<String, LlamaError> {
    llama_cpp_2::json_schema_to_grammar(schema).map_err(|e| LlamaError::LlamaGrammar(e.to_string()))
}

impl Session<'_> {
    /// Generates with llama.cpp's sampler chain, constrained by llama.cpp's grammar sampler
    /// when `gbnf` is given (root rule `root`). Stops at an end-of-generation token or at
    /// `max_tokens`. The stats' mask times are the grammar sampler's time per sampled token.
    pub fn generate_with_llama_sampler(
        &mut self,
        prompt: &[u32],
        gbnf: Option<&str>,
        sampling: &SamplerConfig,
        seed: u64,
        max_tokens: usize,
        sink: &mut Sink<'_>,
    ) -> Result<Generation, LlamaError> {
        let ctx_size = self.ctx_size() as usize;
        if prompt.is_empty() {
            return Err(LlamaError::EmptyPrompt);
        }
        if prompt.len() >= ctx_size {
            return Err(LlamaError::PromptTooLong {
                prompt_tokens: prompt.len(),
                ctx_size: self.ctx_size(),
            });
        }
        let llama = self.model.llama();
        let mut grammar = match gbnf {
            Some(text) => Some(
                LlamaSampler::grammar(llama, text, "root")
                    .map_err(|e| LlamaError::LlamaGrammar(e.to_string()))?,
            ),
            None => None,
        };
        let mut chain = chain(sampling, seed, llama.n_vocab(), ctx_size);
        if sampling.penalty_window.include_prompt {
            chain.accept_many(prompt.iter().map(|&t| LlamaToken::new(t as i32)));
        }
        let vocabulary = self.model.vocabulary().clone();

        self.clear();
        let prefill_start = Instant::now();
        self.eval(prompt)?;
        let prefill_s = prefill_start.elapsed().as_secs_f64();

        let (mut output, mut tokens) = (Vec::new(), Vec::new());
        let mut grammar_times: Vec<Duration> = Vec::new();
        let mut eval_time = Duration::ZERO;
        let start = Instant::now();
        let stop_reason = loop {
            if tokens.len() >= max_tokens {
                break StopReason::MaxTokens;
            }
            if self.position() >= ctx_size {
                break StopReason::ContextFull;
            }
            let logits = self.logits();
            let mut candidates = candidate_array(logits);
            candidates.apply_sampler(&mut chain);
            let mut token = candidates.selected_token().ok_or(LlamaError::DeadEnd {
                generated: tokens.len(),
            })?;
            if let Some(grammar) = grammar.as_mut() {
                let t = Instant::now();
                let mut single =
                    LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
                single.apply_sampler(grammar);
                if single.data[0].logit() == f32::NEG_INFINITY {
                    let mut all = candidate_array(logits);
                    all.apply_sampler(grammar);
                    all.apply_sampler(&mut chain);
                    token = all.selected_token().ok_or(LlamaError::DeadEnd {
                        generated: tokens.len(),
                    })?;
                }
                grammar_times.push(t.elapsed());
            }
            let id = token.0 as u32;
            tokens.push(id);
            chain.accept(token);
            if vocabulary.kind(id) == Some(TokenKind::EndOfSequence) {
                break StopReason::EndOfSequence;
            }
            if let Some(grammar) = grammar.as_mut() {
                grammar.accept(token);
            }
            if let Some(bytes) = vocabulary.token_bytes(id) {
                output.extend_from_slice(bytes);
                sink(bytes).map_err(LlamaError::Output)?;
            }
            let eval_start = Instant::now();
            self.eval(&[id])?;
            eval_time += eval_start.elapsed();
        };
        let decode_s = start.elapsed().as_secs_f64();
        let sampled = tokens.len();
        let stats = Stats {
            budget_constrained_tokens: None,
            sampled_tokens: sampled,
            forced_tokens: 0,
            prompt_tokens: prompt.len(),
            decode_s,
            sampled_tokens_per_s: if decode_s > 0.0 {
                sampled as f64 / decode_s
            } else {
                0.0
            },
            mask_us_p50: percentile_us(&mut grammar_times, 50.0),
            mask_us_p99: percentile_us(&mut grammar_times, 99.0),
            stop_reason,
            output_bytes: output.len(),
            prefill_s,
            eval_s: eval_time.as_secs_f64(),
            sequence_logprob: None,
            draft_tokens: None,
            accepted_draft_tokens: None,
        };
        Ok(Generation {
            output,
            tokens,
            stats,
            logprobs: Vec::new(),
            trace: Vec::new(),
        })
    }
}

/// llama.cpp's usual chain: penalties, top-k, typical, top-p, min-p, temperature, draw.
fn chain(p: &SamplerConfig, seed: u64, n_vocab: i32, ctx_size: usize) -> LlamaSampler {
    let last_n = p.penalty_window.last_n.unwrap_or(ctx_size);
    let last_n = i32::try_from(last_n).unwrap_or(i32::MAX);
    let mut stages = vec![LlamaSampler::penalties(
        n_vocab,
        last_n,
        p.repetition_penalty,
        p.frequency_penalty,
        p.presence_penalty,
    )];
    if p.temperature <= 0.0 {
        stages.push(LlamaSampler::greedy());
    } else {
        let top_k = i32::try_from(p.top_k).unwrap_or(i32::MAX);
        stages.extend([
            LlamaSampler::top_k(top_k),
            LlamaSampler::typical(p.typical_p, 1),
            LlamaSampler::top_p(p.top_p, 1),
            LlamaSampler::min_p(p.min_p, 1),
            LlamaSampler::temp(p.temperature),
            // llama.cpp seeds are 32 bits.
            LlamaSampler::dist(seed as u32),
        ]);
    }
    LlamaSampler::chain_simple(stages)
}

fn candidate_array(logits: &[f32]) -> LlamaTokenDataArray {
    LlamaTokenDataArray::from_iter(
        logits
            .iter()
            .enumerate()
            .map(|(i, &l)| LlamaTokenData::new(LlamaToken::new(i as i32), l, 0.0)),
        false,
    )
}
