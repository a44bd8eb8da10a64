//! The decode loop with the real model: constraints hold, limits stop, seeds repeat.

mod common;

use constrain_engine::{Grammar, Limits, Matcher};
use constrain_llama::{Generation, Model, Request, Session, SessionOptions, StopReason};
use constrain_sampling::SamplerConfig;

fn run(
    model: &Model,
    prompt: &str,
    grammar: Option<&Grammar>,
    sampling: SamplerConfig,
    seed: u64,
    max_tokens: usize,
    fast_forward: bool,
) -> Generation {
    let prompt = model.prompt_tokens(prompt, false).unwrap();
    let constraint = grammar.map(|g| Matcher::new(model.compile(g, Limits::default()).unwrap()));
    let mut session = Session::new(
        model,
        &SessionOptions {
            ctx_size: 512,
            ..SessionOptions::default()
        },
    )
    .unwrap();
    let mut streamed = Vec::new();
    let generation = session
        .generate(
            Request {
                prompt: &prompt,
                constraint,
                sampling,
                seed,
                max_tokens,
                truncate: false,
                fast_forward,
                logprobs: None,
                lookup: None,
                trace: None,
            },
            &mut |bytes: &[u8]| {
                streamed.extend_from_slice(bytes);
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(
        streamed, generation.output,
        "the sink sees exactly the output"
    );
    generation
}

/// Phone numbers `(555) ddd-dddd`, greedy and with two seeds, with or without fast forward:
/// each output is a complete full match of the pattern.
fn phone_numbers(model: &Model, fast_forward: bool) -> Vec<Generation> {
    let pattern = r"\(555\) [0-9]{3}-[0-9]{4}";
    let grammar = Grammar::from_regex(pattern).unwrap();
    let re = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
    let cases = [
        (SamplerConfig::greedy(), 0),
        (SamplerConfig::default(), 1),
        (SamplerConfig::default(), 2),
    ];
    cases
        .into_iter()
        .map(|(sampling, seed)| {
            let g = run(
                model,
                "Call me at",
                Some(&grammar),
                sampling,
                seed,
                40,
                fast_forward,
            );
            let text = String::from_utf8(g.output.clone()).unwrap();
            assert!(re.is_match(&text), "{text:?}");
            assert!(g.stats.stop_reason.is_complete(), "{:?}", g.stats);
            assert_eq!(
                g.tokens.len(),
                g.stats.sampled_tokens + g.stats.forced_tokens
            );
            assert!(g.stats.mask_us_p50.is_some());
            g
        })
        .collect()
}

#[test]
fn a_regex_constraint_gives_a_full_match_with_forced_tokens() {
    let Some(model) =
        common::model_or_skip("a_regex_constraint_gives_a_full_match_with_forced_tokens")
    else {
        return;
    };
    for g in phone_numbers(&model, true) {
        // `(555) ` is the only way to start: the grammar forces it.
        assert!(g.stats.forced_tokens >= 1, "{:?}", g.stats);
    }
}

#[test]
fn without_fast_forward_every_token_is_sampled_and_the_output_still_matches() {
    let Some(model) = common::model_or_skip(
        "without_fast_forward_every_token_is_sampled_and_the_output_still_matches",
    ) else {
        return;
    };
    for g in phone_numbers(&model, false) {
        assert_eq!(g.stats.forced_tokens, 0, "{:?}", g.stats);
    }
}

#[test]
fn the_same_seed_gives_the_same_output_and_the_limit_stops_generation() {
    let Some(model) =
        common::model_or_skip("the_same_seed_gives_the_same_output_and_the_limit_stops_generation")
    else {
        return;
    };
    let a = run(
        &model,
        "Once upon a time",
        None,
        SamplerConfig::default(),
        7,
        12,
        true,
    );
    let b = run(
        &model,
        "Once upon a time",
        None,
        SamplerConfig::default(),
        7,
        12,
        true,
    );
    assert_eq!(a.output, b.output);
    assert_eq!(a.tokens, b.tokens);
    if a.stats.stop_reason == StopReason::MaxTokens {
        assert_eq!(a.tokens.len(), 12);
        assert!(!a.stats.stop_reason.is_complete());
    }
    assert_eq!(a.stats.forced_tokens, 0);
    assert_eq!(a.stats.mask_us_p50, None);
}

#[test]
fn a_prompt_longer_than_the_context_is_an_error() {
    let Some(model) = common::model_or_skip("a_prompt_longer_than_the_context_is_an_error") else {
        return;
    };
    let prompt = model.prompt_tokens(&"word ".repeat(600), false).unwrap();
    let mut session = Session::new(
        &model,
        &SessionOptions {
            ctx_size: 256,
            ..SessionOptions::default()
        },
    )
    .unwrap();
    let request = Request {
        prompt: &prompt,
        constraint: None,
        sampling: SamplerConfig::greedy(),
        seed: 0,
        max_tokens: 4,
        truncate: false,
        fast_forward: true,
        logprobs: None,
        lookup: None,
        trace: None,
    };
    let err = session
        .generate(request, &mut |_: &[u8]| Ok(()))
        .unwrap_err();
    assert!(
        matches!(
            err,
            constrain_llama::LlamaError::PromptTooLong { ctx_size: 256, .. }
        ),
        "{err}"
    );
}
