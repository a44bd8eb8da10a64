//! The step against a fake model whose logits are a function of the tokens so far, driven as a
//! batching driver drives it: every row of an evaluation at once, the rejected tail cut.

use std::sync::Arc;

use constrain_engine::{CompiledGrammar, Grammar, Limits, Matcher, TokenIndex};
use constrain_sampling::SamplerConfig;
use constrain_vocab::Vocabulary;

use super::*;
use crate::trace::Origin;
use crate::triggered::{Trigger, TriggeredMatcher};
use crate::Constraint;

const PIECES: &[&str] = &[
    "{", "}", "\"", ":", ",", " ", "a", "b", "c", "0", "1", "2", "\"a", "b\"", "\":", "<eos>",
    "<call>",
];
const EOS: u32 = 15;
const CALL: u32 = 16;

/// `{"ab":"abc","c":12}` in the pieces.
const SCRIPT: &[u32] = &[0, 12, 13, 3, 2, 6, 7, 8, 2, 4, 2, 8, 14, 10, 11, 1];

fn vocabulary() -> Arc<Vocabulary> {
    constrain_testdata::pieces_vocabulary(PIECES)
}

fn json_grammar() -> Arc<CompiledGrammar> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"ab": {"type": "string", "maxLength": 5}, "c": {"type": "integer"}},
        "required": ["ab", "c"],
        "additionalProperties": false,
    });
    let options = constrain_jsonschema::Options {
        whitespace: constrain_jsonschema::Whitespace::Compact,
        ..Default::default()
    };
    Constraint::JsonSchemaWith(schema, options)
        .compile(TokenIndex::new(vocabulary()))
        .expect("the schema compiles")
}

fn regex_grammar(regex: &str) -> Arc<CompiledGrammar> {
    let grammar = Grammar::from_regex(regex).expect("the regex parses");
    CompiledGrammar::new(&grammar, TokenIndex::new(vocabulary()), Limits::default())
        .expect("the regex compiles")
}

/// A model that mostly goes on with [`SCRIPT`] (by position), so that drafts copied from a
/// prompt holding it are kept in part.
fn scripted(history: &[u32]) -> Vec<f32> {
    let mut logits = constrain_testdata::hashed_logits(history, 0, PIECES.len());
    logits[SCRIPT[history.len() % SCRIPT.len()] as usize] += 2.2;
    logits
}

fn step(constraint: StepConstraint, prompt: &[u32], options: StepOptions) -> Step {
    let sampling = SamplerConfig::greedy();
    Step::new(constraint, vocabulary(), sampling, 7, prompt, options).expect("a step")
}

/// What a driven sequence gave.
#[derive(Debug, PartialEq)]
struct Run {
    tokens: Vec<u32>,
    stop: Stop,
    forced: usize,
}

/// Drives `step` to its end with `model`, checking after every evaluation that the tokens the
/// "cache" keeps are the history's first tokens.
fn drive(step: &mut Step, model: fn(&[u32]) -> Vec<f32>, halt: &dyn Fn(u32) -> bool) -> Run {
    let mut cache = step.history().tokens().to_vec();
    let prompt_len = cache.len();
    let mut forced = 0;
    let mut emit = |e: Emitted| {
        forced += usize::from(e.forced);
        !halt(e.token)
    };
    let stop = loop {
        match step.next(&mut emit).expect("next") {
            Next::Done(stop) => break stop,
            Next::Evaluate { tokens, rows } => {
                cache.extend_from_slice(&tokens);
                let first = cache.len() - rows;
                let logits: Vec<Vec<f32>> = (first..cache.len())
                    .map(|end| model(&cache[..=end]))
                    .collect();
                let rows: Vec<&[f32]> = logits.iter().map(Vec::as_slice).collect();
                let rejected = step.sample(&rows, &mut emit).expect("sample");
                cache.truncate(cache.len() - rejected);
                let history = step.history().tokens();
                assert!(cache.len() <= history.len() && history[..cache.len()] == cache[..]);
            }
        }
    };
    Run {
        tokens: step.history().tokens()[prompt_len..].to_vec(),
        stop,
        forced,
    }
}

fn never(_: u32) -> bool {
    false
}

fn text(tokens: &[u32]) -> String {
    tokens
        .iter()
        .filter_map(|&t| PIECES.get(t as usize))
        .copied()
        .collect()
}

#[test]
fn greedy_output_is_the_same_with_drafts_of_any_length() {
    for constrained in [true, false] {
        let mut runs = Vec::new();
        for lookup in [0, 4, 16] {
            let constraint = if constrained {
                StepConstraint::Grammar(Matcher::new(json_grammar()))
            } else {
                StepConstraint::None
            };
            let options = StepOptions {
                max_tokens: 40,
                complete_within: true,
                lookup,
                ..StepOptions::default()
            };
            let mut prompt = vec![5, 6, 7];
            prompt.extend_from_slice(SCRIPT);
            let mut s = step(constraint, &prompt, options);
            let run = drive(&mut s, scripted, &never);
            if lookup > 0 {
                assert!(
                    s.stats().accepted_drafts > 0,
                    "lookup {lookup}: nothing kept"
                );
            }
            runs.push(run);
        }
        assert_eq!(runs[0], runs[1], "constrained: {constrained}");
        assert_eq!(runs[0], runs[2], "constrained: {constrained}");
    }
}

#[test]
fn forced_tokens_are_appended_without_a_draw_and_counted() {
    let options = |fast_forward| StepOptions {
        max_tokens: 20,
        fast_forward,
        ..StepOptions::default()
    };
    // "abc" then one digit: the three letters are forced (one spelling each).
    let grammar = || StepConstraint::Grammar(Matcher::new(regex_grammar("abc[0-9]")));
    let mut fast = step(grammar(), &[9], options(true));
    let run = drive(&mut fast, scripted, &never);
    assert_eq!(text(&run.tokens[..3]), "abc");
    assert_eq!((run.forced, fast.stats().forced), (3, 3));
    assert_eq!(run.stop, Stop::GrammarFinished);
    let mut slow = step(grammar(), &[9], options(false));
    let drawn = drive(&mut slow, scripted, &never);
    assert_eq!(drawn.forced, 0);
    assert_eq!(slow.stats().drawn, drawn.tokens.len());
    assert_eq!(text(&drawn.tokens[..3]), "abc");
}

#[test]
fn a_budget_ends_the_output_complete_and_a_limit_cuts_it() {
    for max_tokens in [12, 14, 20] {
        let options = StepOptions {
            max_tokens,
            complete_within: true,
            ..StepOptions::default()
        };
        let mut s = step(
            StepConstraint::Grammar(Matcher::new(json_grammar())),
            &[9],
            options,
        );
        let run = drive(&mut s, constrain_testdata_logits, &never);
        assert!(run.tokens.len() <= max_tokens + 1, "{run:?}");
        assert!(s.constraint().is_complete(), "{}", text(&run.tokens));
        let json = text(&run.tokens).replace("<eos>", "");
        assert!(
            serde_json::from_str::<serde_json::Value>(&json).is_ok(),
            "{json}"
        );
    }
    // Cut off: exactly the limit, incomplete.
    let options = StepOptions {
        max_tokens: 3,
        ..StepOptions::default()
    };
    let mut s = step(
        StepConstraint::Grammar(Matcher::new(json_grammar())),
        &[9],
        options,
    );
    let run = drive(&mut s, constrain_testdata_logits, &never);
    assert_eq!((run.tokens.len(), run.stop), (3, Stop::MaxTokens));
    assert!(!s.constraint().is_complete());
    // The context's room stops free text first when it is the smaller limit.
    let options = StepOptions {
        max_tokens: 30,
        room: Some(5),
        ..StepOptions::default()
    };
    let mut s = step(StepConstraint::None, &[9], options);
    let run = drive(&mut s, no_end, &never);
    assert_eq!((run.tokens.len(), run.stop), (5, Stop::ContextFull));
}

/// The fake model, with the end token never likely.
fn no_end(history: &[u32]) -> Vec<f32> {
    let mut logits = constrain_testdata_logits(history);
    logits[EOS as usize] = -100.0;
    logits
}

fn constrain_testdata_logits(history: &[u32]) -> Vec<f32> {
    constrain_testdata::hashed_logits(history, 3, PIECES.len())
}

/// The fake model, ending after four generated tokens.
fn ends_soon(history: &[u32]) -> Vec<f32> {
    let mut logits = no_end(history);
    if history.len() >= 5 {
        logits[EOS as usize] = 10.0;
    }
    logits
}

#[test]
fn an_end_token_ends_the_sequence_and_a_halt_stops_it() {
    let options = StepOptions {
        max_tokens: 30,
        logprobs: Some(2),
        ..StepOptions::default()
    };
    let mut s = step(StepConstraint::None, &[9], options.clone());
    let run = drive(&mut s, ends_soon, &never);
    assert_eq!(run.stop, Stop::EndOfSequence);
    assert_eq!(run.tokens.len(), 5);
    assert_eq!(run.tokens.last(), Some(&EOS));
    assert_eq!(s.generated(), 5);
    assert!(s.stats().sequence_logprob < 0.0);
    // The driver ends it at the second token.
    let mut s = step(StepConstraint::None, &[9], options);
    let second = drive(&mut s, ends_soon, &|t| t == run.tokens[1]);
    assert_eq!(second.stop, Stop::Halted);
    let at = run.tokens.iter().position(|&t| t == run.tokens[1]);
    assert_eq!(second.tokens, run.tokens[..at.expect("a token") + 1]);
}

/// Free text that opens a call after three tokens, then the script's digits.
fn calls(history: &[u32]) -> Vec<f32> {
    let mut logits = no_end(history);
    logits[CALL as usize] = if history.len() == 8 { 10.0 } else { -100.0 };
    logits[10] += 1.0;
    logits
}

#[test]
fn a_triggered_constraint_is_free_text_then_the_grammar() {
    let vocabulary = vocabulary();
    let trigger = Arc::new(Trigger::new("<call>", &vocabulary));
    let constraint = || {
        StepConstraint::Triggered(TriggeredMatcher::new(
            trigger.clone(),
            regex_grammar("[0-9]{2}"),
        ))
    };
    let options = StepOptions {
        max_tokens: 12,
        complete_within: true,
        lookup: 4,
        ..StepOptions::default()
    };
    // A prompt the lookup would draft from, were drafts allowed.
    let mut s = step(constraint(), &[9, 6, 7, 9, 6], options);
    let mut free = Vec::new();
    let mut emit_free = |e: Emitted| {
        free.push(e.free_text);
        true
    };
    let mut cache = s.history().tokens().to_vec();
    while let Next::Evaluate { tokens, rows } = s.next(&mut emit_free).expect("next") {
        assert_eq!(rows, 1, "no drafts under a trigger");
        cache.extend_from_slice(&tokens);
        s.sample(&[&calls(&cache)], &mut emit_free).expect("sample");
    }
    let out = text(&s.history().tokens()[5..]);
    let at = out.find("<call>").expect("the call opened");
    assert_eq!(s.constraint().trigger_start(), Some(at));
    let after = &out[at + "<call>".len()..];
    assert!(
        after.len() == 2 && after.bytes().all(|b| b.is_ascii_digit()),
        "{out}"
    );
    assert_eq!(s.stop(), Some(Stop::GrammarFinished));
    // Free text until the trigger, the grammar's after it.
    assert_eq!(free, [true, true, true, false, false, false]);
    assert_eq!(s.stats().drafted, 0);
}

/// Drives `step` to its end with the scripted model, one row at a time.
fn run_scripted(step: &mut Step, emit: &mut dyn FnMut(Emitted) -> bool) {
    loop {
        match step.next(emit).expect("next") {
            Next::Done(_) => break,
            Next::Evaluate { .. } => {
                let logits = scripted(step.history().tokens());
                step.sample(&[&logits], emit).expect("sample");
            }
        }
    }
}

/// The trace's removed mass, recomputed from the logits and a matcher replaying the output:
/// the softmax mass of the tokens the grammar refuses there.
#[test]
fn traced_removed_mass_is_the_softmax_mass_the_mask_refused() {
    for (fast_forward, max_tokens) in [(true, usize::MAX), (false, usize::MAX), (true, 14)] {
        let options = StepOptions {
            fast_forward,
            max_tokens,
            complete_within: max_tokens != usize::MAX,
            trace: Some(3),
            ..StepOptions::default()
        };
        let sampling = SamplerConfig {
            temperature: 0.9,
            top_k: 4,
            ..SamplerConfig::default()
        };
        let mut step = Step::new(
            StepConstraint::Grammar(Matcher::new(json_grammar())),
            vocabulary(),
            sampling,
            11,
            &[],
            options,
        )
        .expect("a step");
        let mut traces = Vec::new();
        let mut tokens = Vec::new();
        let mut emit = |e: Emitted| {
            tokens.push(e.token);
            traces.push((e.forced, e.trace.expect("every token is traced")));
            true
        };
        run_scripted(&mut step, &mut emit);
        let mut replay = Matcher::new(json_grammar());
        if max_tokens != usize::MAX {
            replay
                .set_token_budget(Some(max_tokens))
                .expect("the budget fits");
        }
        let mut mask = vec![0u32; replay.grammar().mask_words()];
        let mut budget_steps = 0;
        for (i, (forced, trace)) in traces.iter().enumerate() {
            assert_eq!(trace.token, tokens[i]);
            assert_eq!(trace.text, PIECES[tokens[i] as usize]);
            if *forced {
                assert_eq!(trace.origin, Origin::Forced);
                assert_eq!(trace.removed_mass, None);
            } else {
                let logits = scripted(&tokens[..i]);
                replay.fill_mask(&mut mask).expect("a mask");
                let allowed = |id: usize| mask[id / 32] >> (id % 32) & 1 == 1;
                let total: f64 = logits.iter().map(|&l| f64::from(l).exp()).sum();
                let refused: f64 = logits
                    .iter()
                    .enumerate()
                    .filter(|&(id, _)| !allowed(id))
                    .map(|(_, &l)| f64::from(l).exp())
                    .sum();
                let removed = trace.removed_mass.expect("a drawn token has it");
                // The trace sums f32 exponentials: agreement to f32's precision.
                assert!(
                    (removed - refused / total).abs() < 1e-6,
                    "{removed} vs {}",
                    refused / total
                );
                let count = (0..logits.len()).filter(|&id| allowed(id)).count();
                assert_eq!(trace.allowed, Some(count));
                // Candidates: most likely first, after the mask only allowed ones, the drawn
                // token among the funnel's.
                assert_eq!(trace.before_mask.len(), 3);
                assert!(trace.before_mask.windows(2).all(|w| w[0].prob >= w[1].prob));
                assert!(trace.after_mask.iter().all(|c| allowed(c.token as usize)));
                let kept: f64 = trace.after_mask.iter().map(|c| c.prob).sum();
                assert!(kept <= 1.0 + 1e-9);
                if trace.origin == Origin::Budget {
                    budget_steps += 1;
                }
            }
            if max_tokens != usize::MAX {
                assert_eq!(trace.budget_left, Some(max_tokens - i));
            }
            replay
                .accept_token(tokens[i])
                .expect("the output follows the grammar");
        }
        assert!(replay.is_accepting() || replay.is_finished());
        if !fast_forward {
            assert!(traces.iter().all(|(forced, _)| !forced));
        }
        assert_eq!(
            budget_steps,
            if max_tokens == usize::MAX {
                0
            } else {
                step.constraint()
                    .matcher()
                    .map_or(0, Matcher::budget_constrained_steps)
            },
            "budget-constrained draws are the steps the budget narrowed"
        );
    }
}

#[test]
fn without_trace_nothing_is_traced() {
    let mut step = step(
        StepConstraint::Grammar(Matcher::new(json_grammar())),
        &[],
        StepOptions::default(),
    );
    let mut any = false;
    let mut emit = |e: Emitted| {
        any |= e.trace.is_some();
        true
    };
    run_scripted(&mut step, &mut emit);
    assert!(!any);
}
