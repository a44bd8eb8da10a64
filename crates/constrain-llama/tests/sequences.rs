//! The multi-sequence API with the real model: a batch over several sequences gives each the
//! logits it would get alone; a copied sequence continues as the original would; a cut
//! sequence forgets its tail; logits at every drafted position match one-by-one evaluation.

mod common;

use constrain_llama::{Model, SequenceTokens, Session, SessionOptions};

fn session(model: &Model, sequences: u32) -> Session<'_> {
    Session::new(
        model,
        &SessionOptions {
            ctx_size: 512,
            threads: Some(2),
            sequences,
            ..SessionOptions::default()
        },
    )
    .unwrap()
}

/// The logits after `tokens`, evaluated alone.
fn alone(model: &Model, tokens: &[u32]) -> Vec<f32> {
    let mut single = session(model, 1);
    single.eval(tokens).unwrap();
    single.logits().to_vec()
}

fn argmax(logits: &[f32]) -> usize {
    let mut best = 0;
    for (i, &l) in logits.iter().enumerate() {
        if l > logits[best] {
            best = i;
        }
    }
    best
}

/// Same most likely token, and logits within llama.cpp's batch-to-batch arithmetic: its CPU
/// kernels compute a token differently in batches of different shapes (tinyBLAS only from two
/// rows on, repacked weights four rows at a time, tiled flash attention), which moves logits
/// of this model by up to about one unit. A token of the wrong sequence or position moves
/// them by many.
fn assert_close(got: &[f32], expected: &[f32], what: &str) {
    assert_eq!(got.len(), expected.len(), "{what}: width");
    let worst = got
        .iter()
        .zip(expected)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(worst < 1.5, "{what}: logits differ by up to {worst}");
    assert_eq!(argmax(got), argmax(expected), "{what}: most likely token");
}

fn last(tokens: &[u32]) -> usize {
    tokens.len() - 1
}

#[test]
fn sequences_batch_copy_and_cut_as_if_each_were_alone() {
    let Some(model) = common::model_or_skip("sequences_batch_copy_and_cut_as_if_each_were_alone")
    else {
        return;
    };
    let a = model.tokenize("The capital of France is", false).unwrap();
    let b = model.tokenize("One, two, three, four,", false).unwrap();
    let next = model.tokenize(" the", false).unwrap()[1..].to_vec();
    let other = model.tokenize(" Paris", false).unwrap()[1..].to_vec();

    let mut multi = session(&model, 3);
    multi
        .decode(&[
            SequenceTokens {
                seq: 0,
                tokens: &a,
                logits_from: last(&a),
            },
            SequenceTokens {
                seq: 1,
                tokens: &b,
                logits_from: last(&b),
            },
        ])
        .unwrap();
    assert_close(
        multi.logits_at(0, last(&a)),
        &alone(&model, &a),
        "sequence 0",
    );
    assert_close(
        multi.logits_at(1, last(&b)),
        &alone(&model, &b),
        "sequence 1",
    );
    assert!(
        multi.logits_at(0, 0).is_empty(),
        "no logits where none were asked"
    );

    // Sequence 2 branches off sequence 0; both go on differently in one batch.
    multi.copy_sequence(0, 2).unwrap();
    assert_eq!(multi.sequence_len(2), a.len());
    multi
        .decode(&[
            SequenceTokens {
                seq: 0,
                tokens: &next,
                logits_from: last(&next),
            },
            SequenceTokens {
                seq: 2,
                tokens: &other,
                logits_from: last(&other),
            },
        ])
        .unwrap();
    let a_next: Vec<u32> = a.iter().chain(&next).copied().collect();
    let a_other: Vec<u32> = a.iter().chain(&other).copied().collect();
    assert_close(
        multi.last_logits_of(0),
        &alone(&model, &a_next),
        "the original",
    );
    assert_close(
        multi.last_logits_of(2),
        &alone(&model, &a_other),
        "the copy",
    );

    // Cut sequence 0 back to the prompt, then take the copy's way: the cut tail is gone.
    multi.truncate_sequence(0, a.len()).unwrap();
    multi
        .decode(&[SequenceTokens {
            seq: 0,
            tokens: &other,
            logits_from: last(&other),
        }])
        .unwrap();
    assert_close(
        multi.last_logits_of(0),
        &alone(&model, &a_other),
        "after the cut",
    );

    // Logits at every position of a draft, in one batch.
    multi.remove_sequence(1).unwrap();
    assert_eq!(multi.sequence_len(1), 0);
    multi
        .decode(&[SequenceTokens {
            seq: 1,
            tokens: &b,
            logits_from: 2,
        }])
        .unwrap();
    for i in 2..b.len() {
        assert_close(
            multi.logits_at(1, i),
            &alone(&model, &b[..=i]),
            "a drafted position",
        );
    }

    assert!(multi
        .decode(&[SequenceTokens {
            seq: 3,
            tokens: &b,
            logits_from: 0,
        }])
        .is_err());
}
