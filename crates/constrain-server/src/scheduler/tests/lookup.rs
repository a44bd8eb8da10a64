//! Prompt lookup in the scheduler: a drafting sequence verifies its draft from the rows of one
//! decode and has the rejected tail cut from its slot, so its output is plain decoding's.

use super::*;
use crate::engine::Finish;

/// `{"ab":"abc","c":12}` in the fake vocabulary's pieces.
const SCRIPT: &[u32] = &[0, 12, 13, 3, 2, 6, 7, 8, 2, 4, 2, 8, 14, 10, 11, 1];

/// A model that mostly goes on with [`SCRIPT`] (by position) and sometimes does not, so that
/// drafts copied from a prompt holding the script are accepted in part.
fn scripted_logits(history: &[u32], width: usize) -> Vec<f32> {
    let mut logits = logits_after(history, width);
    logits[SCRIPT[history.len() % SCRIPT.len()] as usize] += 2.2;
    logits
}

fn scripted_scheduler(slots: usize) -> Scheduler<FakeModel> {
    let mut s = scheduler(slots, 256);
    s.model.logits_of = scripted_logits;
    s
}

/// Jobs of every kind: drafting or not, constrained or not.
fn mixed_jobs() -> Vec<(Job, UnboundedReceiver<Event>)> {
    (0..5)
        .map(|lead| lookup_job(lead, 4 * (lead % 2), 1.0, lead != 3))
        .collect()
}

/// A job whose prompt is `lead` tokens and then the script; greedy unless `temperature`.
fn lookup_job(
    lead: usize,
    lookup: usize,
    temperature: f32,
    constrained: bool,
) -> (Job, UnboundedReceiver<Event>) {
    let (mut job, rx) = job(lead as u64, lead, 40, 1);
    job.prompt.extend_from_slice(SCRIPT);
    job.params.lookup = lookup;
    job.params.sampling.temperature = temperature;
    if !constrained {
        job.constraint = None;
    }
    (job, rx)
}

/// Runs the jobs side by side (one slot each), checking after every step that each slot holds
/// exactly the tokens its sequence has evaluated; returns each job's one output.
fn run_checked(slots: usize, jobs: Vec<(Job, UnboundedReceiver<Event>)>) -> Vec<Done> {
    run_with(scripted_scheduler(slots), jobs).0
}

/// [`run_checked`] on a given scheduler; also returns how many masks were filled while the
/// model evaluated.
fn run_with(
    mut s: Scheduler<FakeModel>,
    jobs: Vec<(Job, UnboundedReceiver<Event>)>,
) -> (Vec<Done>, usize) {
    let mut receivers = Vec::new();
    for (job, rx) in jobs {
        s.push(job);
        receivers.push(rx);
    }
    let (mut steps, mut prefilled) = (0, 0);
    while !s.is_idle() {
        assert!(steps < 2000, "not idle after {steps} steps");
        prefilled += s.step().prefilled.len();
        steps += 1;
        for (slot, active) in s.slots.iter().enumerate() {
            if let Some(active) = active {
                assert_eq!(
                    s.model.histories[slot].len(),
                    active.seq.position,
                    "slot {slot} after step {steps}"
                );
            }
        }
    }
    let done = receivers
        .iter_mut()
        .map(|rx| {
            let (mut done, failed) = drain(rx);
            assert!(failed.is_none(), "{failed:?}");
            done.remove(&0).expect("the sequence finished")
        })
        .collect();
    (done, prefilled)
}

#[test]
fn greedy_output_with_lookup_is_plain_decodings_token_for_token() {
    let (mut drafted, mut accepted) = (0, 0);
    for constrained in [true, false] {
        for lead in 0..6 {
            let plain = &run_checked(1, vec![lookup_job(lead, 0, 0.0, constrained)])[0];
            assert_eq!(plain.drafted, 0);
            for k in [1, 4, 16] {
                let fast = &run_checked(1, vec![lookup_job(lead, k, 0.0, constrained)])[0];
                assert_eq!(fast.text, plain.text, "lead {lead}, lookup {k}");
                assert_eq!(fast.completion_tokens, plain.completion_tokens);
                assert_eq!(fast.finish, plain.finish);
                drafted += fast.drafted;
                accepted += fast.accepted_drafts;
            }
            if constrained {
                let json: Result<serde_json::Value, _> = serde_json::from_str(&plain.text);
                assert!(
                    json.is_ok() || plain.finish == Finish::Length,
                    "{}",
                    plain.text
                );
            }
        }
    }
    // Both ways of a verification happened: kept drafts and cut ones.
    assert!(accepted > 0, "{accepted} of {drafted}");
    assert!(accepted < drafted, "{accepted} of {drafted}");
}

#[test]
fn a_drafting_sequence_batched_with_others_generates_as_alone() {
    let alone: Vec<Done> = mixed_jobs()
        .into_iter()
        .map(|job| run_checked(1, vec![job]).remove(0))
        .collect();
    let batched = run_checked(3, mixed_jobs());
    for (a, b) in alone.iter().zip(&batched) {
        assert_eq!(a.text, b.text);
        assert_eq!(a.drafted, b.drafted);
        assert_eq!(a.accepted_drafts, b.accepted_drafts);
    }
    assert!(batched.iter().any(|d| d.drafted > 0));
}

#[test]
fn masks_filled_while_the_model_evaluates_change_no_output() {
    let (serial, none) = run_with(scripted_scheduler(3), mixed_jobs());
    let mut s = scripted_scheduler(3);
    s.model.spare_core = true;
    let (overlapped, prefilled) = run_with(s, mixed_jobs());
    assert_eq!(none, 0);
    assert!(prefilled > 0);
    for (a, b) in serial.iter().zip(&overlapped) {
        assert_eq!(a.text, b.text);
        assert_eq!(a.accepted_drafts, b.accepted_drafts);
    }
    assert!(overlapped.iter().any(|d| d.drafted > 0));
}
