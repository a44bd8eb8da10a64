use std::sync::Arc;

use constrain_sampling::SamplerConfig;

use super::*;
use crate::{ConstrainedSampler, Constraint, Error, TokenIndex};

/// A model of known logits: `logits(sequence)` for the whole sequence (prompt included). It
/// keeps each sequence's tokens as a backend keeps its cache, so a wrong fork or release
/// shows in the scores.
struct FakeModel<F> {
    logits_of: F,
    seqs: Vec<Option<Vec<u32>>>,
    logits: Vec<Vec<f32>>,
    widest_batch: usize,
}

impl<F: Fn(&[u32]) -> Vec<f32>> FakeModel<F> {
    fn new(logits_of: F, beams: usize) -> Self {
        FakeModel {
            logits_of,
            seqs: vec![None; beams],
            logits: vec![Vec::new(); beams],
            widest_batch: 0,
        }
    }
}

impl<F: Fn(&[u32]) -> Vec<f32>> BeamModel for FakeModel<F> {
    type Error = Error;

    fn decode(&mut self, work: &[(usize, &[u32])]) -> Result<(), Error> {
        let mut seen: Vec<usize> = work.iter().map(|&(seq, _)| seq).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), work.len(), "a sequence twice in one batch");
        self.widest_batch = self.widest_batch.max(work.len());
        for &(seq, tokens) in work {
            assert!(!tokens.is_empty(), "nothing to decode for sequence {seq}");
            let held = self.seqs[seq].get_or_insert_with(Vec::new);
            held.extend_from_slice(tokens);
            self.logits[seq] = (self.logits_of)(held);
        }
        Ok(())
    }

    fn logits(&self, seq: usize) -> &[f32] {
        &self.logits[seq]
    }

    fn fork(&mut self, from: usize, to: usize) -> Result<(), Error> {
        assert!(self.seqs[from].is_some(), "fork of an empty sequence");
        self.seqs[to] = self.seqs[from].clone();
        self.logits[to] = self.logits[from].clone();
        Ok(())
    }

    fn release(&mut self, seq: usize) -> Result<(), Error> {
        assert!(
            self.seqs[seq].take().is_some(),
            "release of an empty sequence"
        );
        Ok(())
    }
}

fn vocabulary(pieces: &[&str]) -> Arc<TokenIndex> {
    TokenIndex::new(constrain_testdata::pieces_vocabulary(pieces))
}

const PROMPT: [u32; 1] = [0];

/// The seeds' worked example: A .40 then at best .50 against B .35 then .90.
fn worked_example() -> (Matcher, impl Fn(&[u32]) -> Vec<f32>) {
    let pieces = ["A", "B", "C", "x", "y", "z", "<eos>"];
    let grammar = Constraint::Regex("[ABC][xyz]".into())
        .compile(vocabulary(&pieces))
        .unwrap();
    let model = |seq: &[u32]| -> Vec<f32> {
        let probs: [f32; 7] = match seq[1..] {
            [] => [0.40, 0.35, 0.25, 0.0, 0.0, 0.0, 0.0],
            [0] => [0.0, 0.0, 0.0, 0.50, 0.30, 0.20, 0.0],
            [1] => [0.0, 0.0, 0.0, 0.05, 0.90, 0.05, 0.0],
            _ => [0.0, 0.0, 0.0, 0.40, 0.30, 0.30, 0.0],
        };
        probs.iter().map(|p| p.ln()).collect()
    };
    (Matcher::new(grammar), model)
}

fn config(beams: usize, max_tokens: usize) -> BeamConfig {
    BeamConfig {
        beams,
        length_penalty: 0.0,
        max_tokens,
    }
}

#[test]
fn two_beams_find_the_sequence_greedy_never_sees() {
    let (matcher, logits_of) = worked_example();
    let mut model = FakeModel::new(&logits_of, 1);
    let greedy = beam_search(&mut model, &PROMPT, matcher.clone(), &config(1, 8)).unwrap();
    assert_eq!(greedy.best.tokens, [0, 3], "greedy takes A, then its best");
    assert!((greedy.best.logprob - (0.40f64 * 0.50).ln()).abs() < 1e-6);

    let mut model = FakeModel::new(&logits_of, 2);
    let beam = beam_search(&mut model, &PROMPT, matcher, &config(2, 8)).unwrap();
    assert_eq!(beam.best.tokens, [1, 4], "B then its .90 continuation");
    assert!((beam.best.logprob - (0.35f64 * 0.90).ln()).abs() < 1e-6);
    assert_eq!(model.widest_batch, 2, "both beams decode in one batch");
    assert_eq!(beam.decode_calls, 2);
}

#[test]
fn the_length_penalty_ranks_complete_outputs_by_score_over_length() {
    // The grammar forces every "a" and "b" at the start and after an "a"; after "ab" the model
    // ends with .6 or goes on with .4, and the budget of 4 tokens then ends "abab".
    let pieces = ["a", "b", "<eos>"];
    let grammar = Constraint::Regex("(ab)+".into())
        .compile(vocabulary(&pieces))
        .unwrap();
    let logits_of = |seq: &[u32]| -> Vec<f32> {
        let probs: [f32; 3] = match seq.len() - 1 {
            2 => [0.4, 0.0, 0.6],
            _ => [0.5, 0.5, 0.0],
        };
        probs.iter().map(|p| p.ln()).collect()
    };
    let run = |length_penalty| {
        let mut model = FakeModel::new(&logits_of, 2);
        let config = BeamConfig {
            beams: 2,
            length_penalty,
            max_tokens: 4,
        };
        beam_search(&mut model, &PROMPT, Matcher::new(grammar.clone()), &config).unwrap()
    };
    // ln .6 = -0.51 over 2 tokens (-0.26) against ln .4 = -0.92 over 4 (-0.23).
    let plain = run(0.0);
    assert_eq!(plain.best.tokens, [0, 1]);
    let penalized = run(1.0);
    assert_eq!(penalized.best.tokens, [0, 1, 0, 1]);
    let expected = 0.4f64.ln() / 4.0;
    assert!((penalized.best.score - expected).abs() < 1e-6);
    assert_eq!(penalized.completed.len(), 2);
}

/// Pseudo-random logits that depend on the whole sequence.
fn hashed_logits(width: usize) -> impl Fn(&[u32]) -> Vec<f32> {
    move |seq: &[u32]| constrain_testdata::hashed_logits(seq, 0, width)
}

fn person() -> (serde_json::Value, Arc<crate::CompiledGrammar>, usize) {
    let pieces = [
        "{", "}", "\"", "name", "age", ":", ",", " ", "Ada", "Bob", "4", "2", "<eos>", "\"name",
        "\":", "a", "e", "0",
    ];
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
        "required": ["name", "age"],
        "additionalProperties": false
    });
    let grammar = Constraint::JsonSchema(schema.clone())
        .compile(vocabulary(&pieces))
        .unwrap();
    (schema, grammar, pieces.len())
}

/// What the scores must be: a replay of the output from scratch, one model call per chosen
/// token, with no cache to get wrong.
fn replayed_logprob(
    beam: &Beam,
    grammar: &Arc<crate::CompiledGrammar>,
    max_tokens: usize,
    logits_of: &dyn Fn(&[u32]) -> Vec<f32>,
) -> f64 {
    let mut matcher = Matcher::new(grammar.clone());
    matcher.set_token_budget(Some(max_tokens)).unwrap();
    let mut mask = vec![0u32; grammar.mask_words()];
    let mut logprob = 0.0;
    let mut at = 0;
    let all: Vec<u32> = beam.tokens.iter().copied().chain(beam.end).collect();
    while at < all.len() {
        let forced = matcher.forced_tokens().unwrap();
        if !forced.is_empty() {
            for token in forced {
                assert_eq!(
                    all[at], token,
                    "a forced token where the output has another"
                );
                matcher.accept_token(token).unwrap();
                at += 1;
            }
            continue;
        }
        let seq: Vec<u32> = PROMPT
            .iter()
            .copied()
            .chain(all[..at].iter().copied())
            .collect();
        let logits = logits_of(&seq);
        matcher.fill_mask(&mut mask).unwrap();
        let normalizer = log_normalizer(&logits, Some(&mask)).unwrap();
        logprob += f64::from(logits[all[at] as usize]) - normalizer;
        matcher.accept_token(all[at]).unwrap();
        at += 1;
    }
    logprob
}

fn decode(grammar: &crate::CompiledGrammar, tokens: &[u32]) -> String {
    let vocab = grammar.vocabulary();
    let bytes: Vec<u8> = tokens
        .iter()
        .flat_map(|&t| vocab.token_bytes(t).unwrap().to_vec())
        .collect();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn one_beam_is_greedy_decoding_token_for_token() {
    let (_, grammar, width) = person();
    for salt in 0..20u32 {
        let logits_of = hashed_logits(width);
        let prompt = [salt];
        let mut model = FakeModel::new(&logits_of, 1);
        let beam = beam_search(
            &mut model,
            &prompt,
            Matcher::new(grammar.clone()),
            &config(1, 40),
        )
        .unwrap();
        let mut sampler =
            ConstrainedSampler::new(grammar.clone(), SamplerConfig::greedy(), 0).unwrap();
        let mut greedy_model = |tokens: &[u32]| {
            let seq: Vec<u32> = prompt.iter().chain(tokens).copied().collect();
            logits_of(&seq)
        };
        let greedy = sampler.generate(&mut greedy_model, 40).unwrap();
        assert_eq!(beam.best.tokens, greedy.tokens, "salt {salt}");
        assert_eq!(beam.best.forced, greedy.forced, "salt {salt}");
    }
}

#[test]
fn every_beam_output_validates_within_the_budget_and_scores_as_replayed() {
    let (schema, grammar, width) = person();
    let logits_of = hashed_logits(width);
    let mut improved = 0;
    for beams in [2, 3, 4] {
        for max_tokens in [12, 16, 40] {
            for salt in 0..6u32 {
                let logits_of = |seq: &[u32]| {
                    let mut salted = seq.to_vec();
                    salted[0] = salt;
                    logits_of(&salted)
                };
                let mut model = FakeModel::new(&logits_of, beams);
                let out = beam_search(
                    &mut model,
                    &PROMPT,
                    Matcher::new(grammar.clone()),
                    &config(beams, max_tokens),
                )
                .unwrap();
                assert!(
                    model.seqs.iter().all(Option::is_none),
                    "every sequence released"
                );
                assert!(model.widest_batch <= beams);
                for beam in &out.completed {
                    assert!(
                        beam.tokens.len() <= max_tokens,
                        "{} tokens",
                        beam.tokens.len()
                    );
                    let text = decode(&grammar, &beam.tokens);
                    let value: serde_json::Value =
                        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
                    assert!(jsonschema::is_valid(&schema, &value), "{text}");
                    let replayed = replayed_logprob(beam, &grammar, max_tokens, &logits_of);
                    assert!(
                        (replayed - beam.logprob).abs() < 1e-4,
                        "{replayed} vs {}",
                        beam.logprob
                    );
                }
                let mut greedy_model = FakeModel::new(&logits_of, 1);
                let greedy = beam_search(
                    &mut greedy_model,
                    &PROMPT,
                    Matcher::new(grammar.clone()),
                    &config(1, max_tokens),
                )
                .unwrap();
                improved += usize::from(out.best.logprob > greedy.best.logprob + 1e-9);
            }
        }
    }
    assert!(improved > 0, "beam search never beat greedy");
}

#[test]
fn a_budget_below_the_shortest_output_is_refused_and_zero_beams_too() {
    let (_, grammar, width) = person();
    let logits_of = hashed_logits(width);
    let mut model = FakeModel::new(&logits_of, 2);
    let err = beam_search(
        &mut model,
        &PROMPT,
        Matcher::new(grammar.clone()),
        &config(2, 3),
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::Match(MatchError::BudgetTooSmall { .. })),
        "{err}"
    );
    let err = beam_search(&mut model, &PROMPT, Matcher::new(grammar), &config(0, 30)).unwrap_err();
    assert!(
        matches!(err, Error::Sampling(SamplingError::InvalidSetting { .. })),
        "{err}"
    );
}
