//! The scheduler against a fake model whose logits are a function of each slot's tokens: what
//! a sequence generates is reproducible, so batching can be checked to change nothing.

use std::collections::BTreeMap;

use constrain::{Constraint, TokenIndex};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use super::fake::{logits_after, FakeModel};
use super::*;
use crate::engine::{ConstraintKind, Done, GenParams};

/// The fake model's tokens: JSON pieces over a few letters and digits, and an end token.
const PIECES: &[&str] = &[
    "{", "}", "\"", ":", ",", " ", "a", "b", "c", "0", "1", "2", "\"a", "b\"", "\":", "<eos>",
];

fn vocabulary() -> Arc<Vocabulary> {
    constrain_testdata::pieces_vocabulary(PIECES)
}

/// A real grammar over the fake vocabulary: a small JSON object.
fn grammar(vocabulary: &Arc<Vocabulary>) -> Arc<constrain::CompiledGrammar> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"ab": {"type": "string", "maxLength": 5}, "c": {"type": "integer"}},
        "required": ["ab", "c"],
        "additionalProperties": false,
    });
    let options = constrain::SchemaOptions {
        whitespace: constrain::Whitespace::Compact,
        ..Default::default()
    };
    Constraint::JsonSchemaWith(schema, options)
        .compile(TokenIndex::new(vocabulary.clone()))
        .unwrap()
}

fn scheduler(slots: usize, prompt_chunk: usize) -> Scheduler<FakeModel> {
    let vocabulary = vocabulary();
    let model = FakeModel::new(slots, 256, vocabulary.logits_width());
    Scheduler::new(
        model,
        vocabulary,
        SchedulerOptions { prompt_chunk },
        Arc::new(Metrics::default()),
    )
}

/// A constrained job: `prompt_len` prompt tokens (a function of `seed`), `n` choices.
fn job(
    seed: u64,
    prompt_len: usize,
    max_tokens: usize,
    n: usize,
) -> (Job, UnboundedReceiver<Event>) {
    let vocabulary = vocabulary();
    let (events, rx) = unbounded_channel();
    let prompt = (0..prompt_len)
        .map(|i| ((seed as usize * 7 + i * 3) % 15) as u32)
        .collect();
    let job = Job {
        prompt,
        n,
        params: GenParams {
            sampling: constrain_sampling::SamplerConfig::default(),
            seed,
            max_tokens,
            stop: Vec::new(),
            logprobs: None,
            fast_forward: true,
            lookup: 0,
            trace: None,
        },
        constraint: Some(ConstraintKind::Grammar(grammar(&vocabulary))),
        events,
        deadline: None,
        admitted: Arc::default(),
    };
    (job, rx)
}

/// Every event received so far: the finished sequences by index, and whether the job failed.
fn drain(rx: &mut UnboundedReceiver<Event>) -> (BTreeMap<usize, Done>, Option<ApiError>) {
    let mut done = BTreeMap::new();
    let mut failed = None;
    while let Ok(event) = rx.try_recv() {
        match event {
            Event::Done(d) => {
                done.insert(d.index, d);
            }
            Event::Failed(e) => failed = Some(e),
            Event::Delta { .. } => {}
        }
    }
    (done, failed)
}

/// Steps until nothing runs; panics past `limit` steps (a scheduler that starves someone).
fn run_to_idle(s: &mut Scheduler<FakeModel>, limit: usize) -> Vec<StepReport> {
    let mut reports = Vec::new();
    while !s.is_idle() {
        assert!(reports.len() < limit, "not idle after {limit} steps");
        reports.push(s.step());
    }
    reports
}

fn alone(seed: u64, prompt_len: usize, max_tokens: usize) -> Done {
    let mut s = scheduler(1, 256);
    let (j, mut rx) = job(seed, prompt_len, max_tokens, 1);
    s.push(j);
    run_to_idle(&mut s, 1000);
    let (mut done, failed) = drain(&mut rx);
    assert!(failed.is_none(), "{failed:?}");
    done.remove(&0).expect("the sequence finished")
}

#[test]
fn a_sequence_generates_the_same_alone_or_batched_with_others() {
    let expected = alone(7, 12, 40);
    assert!(
        serde_json::from_str::<serde_json::Value>(&expected.text).is_ok(),
        "{}",
        expected.text
    );
    let mut s = scheduler(4, 5);
    let mut others = Vec::new();
    for seed in [1, 2] {
        let (j, rx) = job(seed, 30, 60, 1);
        s.push(j);
        others.push(rx);
    }
    // The job of interest joins while the others run; one more joins after it.
    s.step();
    s.step();
    let (j, mut rx) = job(7, 12, 40, 1);
    s.push(j);
    s.step();
    let (j, rx3) = job(3, 3, 20, 1);
    s.push(j);
    others.push(rx3);
    run_to_idle(&mut s, 1000);
    let (done, failed) = drain(&mut rx);
    assert!(failed.is_none(), "{failed:?}");
    assert_eq!(done[&0].text, expected.text);
    assert_eq!(done[&0].completion_tokens, expected.completion_tokens);
    for mut rx in others {
        let (done, failed) = drain(&mut rx);
        assert!(failed.is_none(), "{failed:?}");
        assert_eq!(done.len(), 1);
    }
}

#[test]
fn every_job_completes_and_no_generating_sequence_skips_a_step() {
    let chunk = 8;
    let mut s = scheduler(3, chunk);
    let mut receivers = Vec::new();
    // Long and short jobs, long and short prompts; more jobs than slots.
    for (i, (prompt_len, max_tokens)) in [
        (20, 60),
        (3, 16),
        (40, 20),
        (5, 60),
        (2, 16),
        (17, 30),
        (9, 18),
    ]
    .into_iter()
    .enumerate()
    {
        let (j, rx) = job(i as u64 + 10, prompt_len, max_tokens, 1);
        s.push(j);
        receivers.push(rx);
    }
    let mut admitted_at: BTreeMap<usize, usize> = BTreeMap::new();
    let mut generating: Vec<bool> = vec![false; 3];
    let mut waits = Vec::new();
    let mut step = 0;
    while !s.is_idle() {
        assert!(step < 1000, "not idle after 1000 steps");
        let before = generating.clone();
        let report = s.step();
        for &slot in &report.admitted {
            admitted_at.insert(slot, step);
            generating[slot] = false;
        }
        // A sequence that was generating before this step is in its decode (or left in it,
        // done, before the decode).
        for (slot, &was) in before.iter().enumerate() {
            if was && !report.freed.contains(&slot) {
                assert!(
                    report.decoded.iter().any(|&(d, _)| d == slot),
                    "step {step}: slot {slot} generating but not decoded: {report:?}"
                );
            }
        }
        let prompt_tokens: usize = report
            .decoded
            .iter()
            .filter(|(slot, _)| !before[*slot])
            .map(|(_, n)| n)
            .sum();
        assert!(
            prompt_tokens <= chunk,
            "step {step}: {prompt_tokens} prompt tokens"
        );
        for &slot in &report.sampled {
            if !generating[slot] {
                generating[slot] = true;
                waits.push(step - admitted_at[&slot]);
            }
        }
        for &slot in &report.freed {
            generating[slot] = false;
        }
        step += 1;
    }
    // Every prompt is read within the steps the prompts ahead of it need, at `chunk` a step.
    let total_prompt: usize = 20 + 3 + 40 + 5 + 2 + 17 + 9;
    for wait in &waits {
        assert!(*wait <= total_prompt.div_ceil(chunk), "waited {wait} steps");
    }
    assert_eq!(waits.len(), 7);
    for mut rx in receivers {
        let (done, failed) = drain(&mut rx);
        assert!(failed.is_none(), "{failed:?}");
        assert_eq!(done.len(), 1);
    }
    assert_eq!(s.busy_slots(), 0);
    assert!(s.model().histories.iter().all(Vec::is_empty));
}

#[test]
fn a_dropped_receiver_frees_its_slot_within_one_step() {
    let mut s = scheduler(2, 256);
    let (j, rx) = job(1, 4, 200, 1);
    s.push(j);
    let (j, mut keep) = job(2, 4, 30, 1);
    s.push(j);
    for _ in 0..3 {
        s.step();
    }
    assert_eq!(s.busy_slots(), 2);
    drop(rx);
    let report = s.step();
    assert_eq!(report.freed, vec![0]);
    assert_eq!(s.busy_slots(), 1);
    assert!(s.model().histories[0].is_empty());
    assert!(report.decoded.iter().all(|&(slot, _)| slot == 1));
    run_to_idle(&mut s, 1000);
    assert_eq!(drain(&mut keep).0.len(), 1);
    assert_eq!(s.metrics.cancelled.load(Ordering::Relaxed), 1);
    assert_eq!(s.metrics.active.load(Ordering::Relaxed), 0);
}

#[test]
fn a_job_pushed_while_others_run_joins_at_the_next_step() {
    let mut s = scheduler(2, 256);
    let (j, _rx) = job(1, 4, 100, 1);
    s.push(j);
    s.step();
    s.step();
    let (j, _rx2) = job(2, 6, 100, 1);
    s.push(j);
    let report = s.step();
    assert_eq!(report.admitted, vec![1]);
    assert!(report.decoded.contains(&(1, 6)), "{report:?}");
    assert!(report.decoded.iter().any(|&(slot, _)| slot == 0));
}

#[test]
fn choices_beyond_the_free_slots_run_as_slots_free_up_with_their_own_seeds() {
    let mut s = scheduler(2, 256);
    let (j, mut rx) = job(20, 5, 25, 3);
    s.push(j);
    let first = s.step();
    assert_eq!(first.admitted, vec![0, 1]);
    run_to_idle(&mut s, 1000);
    let (done, failed) = drain(&mut rx);
    assert!(failed.is_none(), "{failed:?}");
    assert_eq!(done.len(), 3);
    // Choice i draws with seed + i; the prompt is the job's.
    for (i, d) in &done {
        let mut one = scheduler(1, 256);
        let (mut j, mut rx1) = job(20, 5, 25, 1);
        j.params.seed = 20 + *i as u64;
        one.push(j);
        run_to_idle(&mut one, 1000);
        assert_eq!(drain(&mut rx1).0[&0].text, d.text, "choice {i}");
    }
    assert_eq!(s.metrics.active.load(Ordering::Relaxed), 0);
}

#[test]
fn a_job_past_its_deadline_fails_with_504_and_leaves() {
    let mut s = scheduler(1, 256);
    let (mut j, mut rx) = job(1, 4, 100, 1);
    j.deadline = Some(Instant::now());
    s.push(j);
    let report = s.step();
    assert!(report.decoded.is_empty());
    assert!(s.is_idle());
    let (_, failed) = drain(&mut rx);
    assert_eq!(failed.map(|e| e.status.as_u16()), Some(504));
}

mod lookup;
