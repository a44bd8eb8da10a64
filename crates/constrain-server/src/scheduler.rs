//! Continuous batching: one thread drives every sequence the server generates through one
//! context, one decode per step.
//!
//! A batch of several tokens costs the model far less than as many one-token passes, so the
//! sequences of all running requests share each forward pass. Every [`Scheduler::step`]:
//!
//! 1. admits waiting choices into free slots (a job with `n` choices takes its slots one by one
//!    as they free up, before any later job: its choices run side by side when slots allow, one
//!    after the other when not);
//! 2. drops the sequences nobody waits for (the job's receiver is gone, the job failed, or its
//!    deadline passed) and clears their slots;
//! 3. asks each remaining sequence what it needs evaluated ([`Sequence::next_tokens`]);
//!    a sequence that is complete sends its end and leaves;
//! 4. decodes one batch: every generating sequence's pending tokens, plus at most
//!    `prompt_chunk` tokens of prompts being read (oldest first), so a long prompt never
//!    stalls the sequences already generating; where the model leaves a core free
//!    ([`SlotModel::has_spare_core`]), the masks of the sequences that will draw after it are
//!    filled on rayon's threads meanwhile (a mask depends on the accepted tokens, not on the
//!    logits);
//! 5. copies the logits rows of every sequence whose tokens are all evaluated, then samples
//!    all of them at once on rayon's threads (masks included): the model side need not be
//!    `Sync`. A sequence that drafted (prompt lookup) gets a row per drafted position, verifies
//!    its draft and has the rejected tail cut from its slot in the same step.
//!
//! Invariants (tested with a fake model below):
//! - every sequence that holds a slot and is not finished is in every step's decode;
//! - a sequence's tokens depend only on its job, its index and its seed, never on what it was
//!   batched with (each has its own slot in the cache, funnel, generator and budget);
//! - a slot whose sequence ended or was abandoned is cleared in the step that saw it;
//! - jobs are admitted in the order they arrived.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::Instant;

use constrain_vocab::Vocabulary;
use rayon::prelude::*;

use crate::engine::{Event, Job, Next, Sequence};
use crate::error::ApiError;
use crate::metrics::Metrics;

/// One slot's part of a decode.
#[derive(Clone, Copy, Debug)]
pub struct SlotTokens<'a> {
    /// The slot.
    pub slot: usize,
    /// Tokens appended to it (never empty).
    pub tokens: &'a [u32],
    /// How many of the last tokens need their next-token logits (at least 1).
    pub rows: usize,
}

/// How often an idle scheduler looks whether it should stop.
const IDLE_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// The model side of the scheduler: a context of `slots()` independent sequences.
///
/// Implemented for llama.cpp's context by [`crate::llama::LlamaSlots`], and in the tests by a
/// fake model, so the scheduling (and the router over it) is tested without weights.
pub trait SlotModel {
    /// How many sequences the context holds side by side.
    fn slots(&self) -> usize;
    /// Tokens one slot may hold (prompt plus output).
    fn slot_room(&self) -> usize;
    /// Appends each entry's tokens to its slot, all in one evaluation.
    fn decode(&mut self, work: &[SlotTokens<'_>]) -> Result<(), String>;
    /// The next-token logits after the `row`-th of the last `rows` tokens of `slot`'s entry in
    /// the last decode (row `rows - 1`: after its last token).
    fn logits(&self, slot: usize, row: usize) -> &[f32];
    /// Cuts `slot` back to its first `len` tokens (a rejected draft's tail).
    fn truncate(&mut self, slot: usize, len: usize) -> Result<(), String>;
    /// Whether a core is free while [`SlotModel::decode`] runs: the scheduler then fills the
    /// next masks of the sequences in the decode meanwhile.
    fn has_spare_core(&self) -> bool {
        false
    }
    /// Empties `slot`.
    fn clear(&mut self, slot: usize) -> Result<(), String> {
        self.truncate(slot, 0)
    }
}

/// What one job's sequences share while they run.
struct JobState {
    job: Job,
    /// Set when one of its sequences failed: the others stop too.
    failed: AtomicBool,
    /// Sequences not yet ended (done, failed or dropped).
    left: AtomicUsize,
    /// The order of arrival, for prompt reading and admission.
    arrival: u64,
}

impl JobState {
    /// Whether its sequences should stop: nobody waits, it failed, or it ran out of time.
    fn abandoned(&self, now: Instant) -> Option<Abandon> {
        if self.failed.load(Ordering::Relaxed) {
            Some(Abandon::Failed)
        } else if self.job.events.is_closed() {
            Some(Abandon::Cancelled)
        } else if self.job.deadline.is_some_and(|d| now >= d) {
            Some(Abandon::Deadline)
        } else {
            None
        }
    }

    fn fail(&self, error: ApiError) {
        if !self.failed.swap(true, Ordering::Relaxed) {
            let _ = self.job.events.send(Event::Failed(error));
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Abandon {
    Failed,
    Cancelled,
    Deadline,
}

/// A sequence in a slot.
struct Active {
    state: Arc<JobState>,
    seq: Sequence,
    /// Tokens to evaluate before the next draw (the prompt first; a draft last).
    feed: Vec<u32>,
    /// How many of `feed`'s last tokens need logits.
    rows: usize,
    /// How many of `feed` are evaluated.
    fed: usize,
    /// Whether `feed` is current (false: ask the sequence).
    has_feed: bool,
}

/// What one step did, for the metrics and the tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepReport {
    /// Slots in the decode, with how many tokens each had evaluated.
    pub decoded: Vec<(usize, usize)>,
    /// Slots whose sequence drew a token.
    pub sampled: Vec<usize>,
    /// Slots freed in this step (the sequence ended, failed or was abandoned).
    pub freed: Vec<usize>,
    /// Slots that took a new sequence in this step.
    pub admitted: Vec<usize>,
    /// Slots whose next mask was filled while the model evaluated.
    pub prefilled: Vec<usize>,
}

/// How the scheduler batches.
#[derive(Clone, Debug)]
pub struct SchedulerOptions {
    /// Most prompt tokens read in one step (all prompts together).
    pub prompt_chunk: usize,
}

impl Default for SchedulerOptions {
    fn default() -> SchedulerOptions {
        SchedulerOptions { prompt_chunk: 256 }
    }
}

/// The continuous-batching loop over a [`SlotModel`].
pub struct Scheduler<M: SlotModel> {
    model: M,
    vocabulary: Arc<Vocabulary>,
    options: SchedulerOptions,
    metrics: Arc<Metrics>,
    slots: Vec<Option<Active>>,
    /// Jobs with choices not yet admitted, oldest first; the front job's next choice.
    waiting: VecDeque<(Arc<JobState>, usize)>,
    arrivals: u64,
}

impl<M: SlotModel> Scheduler<M> {
    /// A scheduler with every slot free.
    pub fn new(
        model: M,
        vocabulary: Arc<Vocabulary>,
        options: SchedulerOptions,
        metrics: Arc<Metrics>,
    ) -> Scheduler<M> {
        let slots = (0..model.slots().max(1)).map(|_| None).collect();
        Scheduler {
            model,
            vocabulary,
            options,
            metrics,
            slots,
            waiting: VecDeque::new(),
            arrivals: 0,
        }
    }

    /// The model side.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// Slots holding a sequence.
    pub fn busy_slots(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// Whether nothing runs and nothing waits.
    pub fn is_idle(&self) -> bool {
        self.busy_slots() == 0 && self.waiting.is_empty()
    }

    /// Whether a new job could take a slot at the next step (free slots beyond the choices
    /// already waiting).
    pub fn wants_jobs(&self) -> bool {
        let waiting: usize = self.waiting.iter().map(|(s, next)| s.job.n - next).sum();
        self.slots.len() - self.busy_slots() > waiting
    }

    /// Takes `job`; its choices join at the next step with free slots.
    pub fn push(&mut self, job: Job) {
        self.arrivals += 1;
        let n = job.n;
        let state = Arc::new(JobState {
            job,
            failed: AtomicBool::new(false),
            left: AtomicUsize::new(n),
            arrival: self.arrivals,
        });
        if n == 0 {
            return;
        }
        self.metrics.active.fetch_add(1, Ordering::Relaxed);
        self.waiting.push_back((state, 0));
    }

    /// Runs until `jobs` closes and the last sequence is done.
    pub fn run(mut self, jobs: Receiver<Job>, stop: &AtomicBool) {
        let mut open = true;
        loop {
            if stop.load(Ordering::Relaxed) {
                self.abandon_all(&jobs);
                return;
            }
            while open && self.wants_jobs() {
                match jobs.try_recv() {
                    Ok(job) => {
                        self.metrics.queued.fetch_sub(1, Ordering::Relaxed);
                        self.push(job);
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => open = false,
                }
            }
            if self.is_idle() {
                if !open {
                    return;
                }
                // Idle: wait for a job, looking at `stop` now and then.
                match jobs.recv_timeout(IDLE_POLL) {
                    Ok(job) => {
                        self.metrics.queued.fetch_sub(1, Ordering::Relaxed);
                        self.push(job);
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return,
                }
                continue;
            }
            self.step();
        }
    }

    /// One step: admit, drop the abandoned, decode one batch, sample.
    pub fn step(&mut self) -> StepReport {
        let mut report = StepReport::default();
        self.admit(&mut report);
        self.drop_abandoned(&mut report);
        self.prepare(&mut report);
        let ready = self.decode(&mut report);
        self.sample(ready, &mut report);
        self.metrics
            .busy_slots
            .store(self.busy_slots(), Ordering::Relaxed);
        report
    }

    /// Places waiting choices in free slots, oldest job first.
    fn admit(&mut self, report: &mut StepReport) {
        let room = self.model.slot_room();
        let mut slot = 0;
        while slot < self.slots.len() {
            if self.slots[slot].is_some() {
                slot += 1;
                continue;
            }
            let Some((state, index)) = self.waiting.pop_front() else {
                return;
            };
            if index + 1 < state.job.n {
                self.waiting.push_front((state.clone(), index + 1));
            }
            if state.failed.load(Ordering::Relaxed) {
                self.sequence_ended(&state);
                continue;
            }
            match Sequence::new(&state.job, index, self.vocabulary.clone(), room) {
                Ok(seq) => {
                    state.job.admitted.get_or_init(Instant::now);
                    self.slots[slot] = Some(Active {
                        state,
                        seq,
                        feed: Vec::new(),
                        rows: 1,
                        fed: 0,
                        has_feed: false,
                    });
                    report.admitted.push(slot);
                    slot += 1;
                }
                // The slot stays free for the next choice.
                Err(e) => {
                    state.fail(e);
                    self.sequence_ended(&state);
                }
            }
        }
    }

    /// Frees the slots of sequences nobody waits for.
    /// Ends every job, running, waiting or still in the queue, with 503: the server stops.
    fn abandon_all(&mut self, jobs: &Receiver<Job>) {
        let error = ApiError::unavailable("the server is shutting down");
        while let Ok(job) = jobs.try_recv() {
            self.metrics.queued.fetch_sub(1, Ordering::Relaxed);
            self.push(job);
        }
        let mut report = StepReport::default();
        for slot in 0..self.slots.len() {
            if let Some(active) = &self.slots[slot] {
                active.state.fail(error.clone());
            }
            self.free(slot, &mut report);
        }
        for (state, next) in std::mem::take(&mut self.waiting) {
            state.fail(error.clone());
            for _ in next..state.job.n {
                self.sequence_ended(&state);
            }
        }
        self.metrics.busy_slots.store(0, Ordering::Relaxed);
    }

    fn drop_abandoned(&mut self, report: &mut StepReport) {
        let now = Instant::now();
        for slot in 0..self.slots.len() {
            let Some(active) = &self.slots[slot] else {
                continue;
            };
            let Some(why) = active.state.abandoned(now) else {
                continue;
            };
            self.abandon(&active.state, why);
            self.free(slot, report);
        }
        // Choices of abandoned jobs that never got a slot.
        let waiting = std::mem::take(&mut self.waiting);
        for (state, next) in waiting {
            match state.abandoned(now) {
                None => self.waiting.push_back((state, next)),
                Some(why) => {
                    self.abandon(&state, why);
                    for _ in next..state.job.n {
                        self.sequence_ended(&state);
                    }
                }
            }
        }
    }

    /// Marks an abandoned job failed, so its other sequences stop without counting it again.
    fn abandon(&self, state: &JobState, why: Abandon) {
        match why {
            Abandon::Cancelled => {
                if !state.failed.swap(true, Ordering::Relaxed) {
                    self.metrics.cancelled.fetch_add(1, Ordering::Relaxed);
                }
            }
            Abandon::Deadline => state.fail(ApiError::deadline()),
            Abandon::Failed => {}
        }
    }

    /// Asks every sequence without tokens to evaluate what it needs next; the complete ones
    /// send their end and leave.
    fn prepare(&mut self, report: &mut StepReport) {
        for slot in 0..self.slots.len() {
            let Some(active) = &mut self.slots[slot] else {
                continue;
            };
            if active.has_feed {
                continue;
            }
            match guarded(|| active.seq.next_tokens()) {
                Ok(Next::Evaluate { tokens, .. }) if tokens.is_empty() => {
                    active.state.fail(ApiError::internal(
                        "a sequence had nothing to evaluate (an empty prompt?)",
                    ));
                    self.free(slot, report);
                }
                Ok(Next::Evaluate { tokens, rows }) => {
                    active.rows = rows.clamp(1, tokens.len());
                    active.feed = tokens;
                    active.fed = 0;
                    active.has_feed = true;
                }
                Ok(Next::Done(done)) => {
                    if let Some(event) = active.seq.flush() {
                        let _ = active.state.job.events.send(event);
                    }
                    self.metrics.add_sequence(&active.seq.stats);
                    let _ = active.state.job.events.send(Event::Done(done));
                    self.free(slot, report);
                }
                Err(e) => {
                    active.state.fail(e);
                    self.free(slot, report);
                }
            }
        }
    }

    /// Decodes one batch; returns the slots whose tokens are all evaluated, with their logits
    /// rows.
    fn decode(&mut self, report: &mut StepReport) -> Vec<(usize, Vec<Vec<f32>>)> {
        // Generating sequences first, whole; then prompts, oldest first, within the chunk.
        let mut order: Vec<usize> = (0..self.slots.len())
            .filter(|&s| self.slots[s].is_some())
            .collect();
        order.sort_by_key(|&s| {
            self.slots[s]
                .as_ref()
                .map(|a| (a.seq.position == 0, a.state.arrival, a.seq.index()))
        });
        let mut chunk_left = self.options.prompt_chunk.max(1);
        let mut spans: Vec<(usize, usize, usize)> = Vec::new();
        for slot in order {
            let Some(active) = &self.slots[slot] else {
                continue;
            };
            let rest = active.feed.len() - active.fed;
            let take = if active.seq.position == 0 {
                let take = rest.min(chunk_left);
                chunk_left -= take;
                take
            } else {
                rest
            };
            if take > 0 {
                spans.push((slot, active.fed, active.fed + take));
            }
        }
        if spans.is_empty() {
            return Vec::new();
        }
        // (slot, tokens, rows); rows only where the feed ends (a prompt's chunk before that
        // needs one).
        let feeds: Vec<(usize, Vec<u32>, usize)> = spans
            .iter()
            .filter_map(|&(slot, from, to)| {
                let a = self.slots[slot].as_ref()?;
                let rows = if to == a.feed.len() { a.rows } else { 1 };
                Some((slot, a.feed[from..to].to_vec(), rows))
            })
            .collect();
        let work: Vec<SlotTokens<'_>> = feeds
            .iter()
            .map(|(slot, tokens, rows)| SlotTokens {
                slot: *slot,
                tokens,
                rows: *rows,
            })
            .collect();
        // Sequences that draw from a single row after this decode: their masks can be filled
        // while it runs, where a core is free for them.
        let mut prefill = vec![false; self.slots.len()];
        if self.model.has_spare_core() {
            for &(slot, _, to) in &spans {
                if let Some(a) = &self.slots[slot] {
                    prefill[slot] = to == a.feed.len() && a.rows == 1;
                }
            }
        }
        report.prefilled = (0..prefill.len()).filter(|&s| prefill[s]).collect();
        let tokens: usize = spans.iter().map(|(_, from, to)| to - from).sum();
        let t = Instant::now();
        let result = if prefill.contains(&true) {
            let (model, slots) = (&mut self.model, &mut self.slots);
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    slots
                        .par_iter_mut()
                        .zip(&prefill)
                        .filter(|(_, wanted)| **wanted)
                        .for_each(|(active, _)| {
                            if let Some(active) = active {
                                // A panic here is met again, and reported, by the draw.
                                let _ = std::panic::catch_unwind(AssertUnwindSafe(|| {
                                    active.seq.prefill_mask();
                                }));
                            }
                        });
                });
                model.decode(&work)
            })
        } else {
            self.model.decode(&work)
        };
        self.metrics.add_eval(t.elapsed());
        self.metrics.add_step(spans.len(), tokens);
        if let Err(e) = result {
            let error = ApiError::internal(format!(
                "decoding a batch of {tokens} tokens for {} sequences: {e}",
                spans.len()
            ));
            for &(slot, _, _) in &spans {
                if let Some(active) = &self.slots[slot] {
                    active.state.fail(error.clone());
                }
                self.free(slot, report);
            }
            return Vec::new();
        }
        let mut ready = Vec::new();
        for (slot, from, to) in spans {
            report.decoded.push((slot, to - from));
            let Some(active) = &mut self.slots[slot] else {
                continue;
            };
            active.fed = to;
            if active.fed == active.feed.len() {
                active.seq.position += active.feed.len();
                active.feed.clear();
                active.fed = 0;
                active.has_feed = false;
                let rows = (0..active.rows)
                    .map(|row| self.model.logits(slot, row).to_vec())
                    .collect();
                ready.push((slot, rows));
            }
        }
        ready
    }

    /// Draws the next token of every ready sequence (verifying its draft first), in parallel,
    /// sends what they made and cuts rejected drafts from the slots.
    fn sample(&mut self, mut ready: Vec<(usize, Vec<Vec<f32>>)>, report: &mut StepReport) {
        ready.sort_by_key(|(slot, _)| *slot);
        let mut work: Vec<(usize, &mut Active, Vec<Vec<f32>>)> = Vec::with_capacity(ready.len());
        let mut ready = ready.into_iter().peekable();
        for (slot, entry) in self.slots.iter_mut().enumerate() {
            if ready.peek().is_some_and(|(s, _)| *s == slot) {
                if let (Some(active), Some((_, logits))) = (entry.as_mut(), ready.next()) {
                    work.push((slot, active, logits));
                }
            }
        }
        type Sampled = Result<(Option<Event>, usize), ApiError>;
        let results: Vec<(usize, Sampled)> = work
            .par_iter_mut()
            .map(|(slot, active, rows)| {
                let rows: Vec<&[f32]> = rows.iter().map(Vec::as_slice).collect();
                (*slot, guarded(|| active.seq.sample(&rows)))
            })
            .collect();
        drop(work);
        for (slot, result) in results {
            let Some(active) = &mut self.slots[slot] else {
                continue;
            };
            if let Some(took) = active.seq.stats.last_mask {
                self.metrics.add_mask(took);
            }
            let result = result.and_then(|(event, rejected)| {
                if rejected > 0 {
                    active.seq.position -= rejected;
                    self.model
                        .truncate(slot, active.seq.position)
                        .map_err(|e| {
                            ApiError::internal(format!("cutting a rejected draft: {e}"))
                        })?;
                }
                Ok(event)
            });
            match result {
                Ok(event) => {
                    report.sampled.push(slot);
                    if let Some(event) = event {
                        let _ = active.state.job.events.send(event);
                    }
                }
                Err(e) => {
                    active.state.fail(e);
                    self.free(slot, report);
                }
            }
        }
    }

    /// Empties `slot` (its cache too) and counts its sequence as ended.
    fn free(&mut self, slot: usize, report: &mut StepReport) {
        let Some(active) = self.slots[slot].take() else {
            return;
        };
        if let Err(e) = self.model.clear(slot) {
            // The slot's cache keeps stale entries: later sequences there would read them.
            // Nothing can be trusted in this context any more; say so loudly.
            eprintln!("constrain serve: clearing slot {slot}: {e}");
        }
        report.freed.push(slot);
        self.sequence_ended(&active.state);
    }

    fn sequence_ended(&self, state: &JobState) {
        if state.left.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.metrics.active.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Runs `f`, turning a panic into an internal error of the one job it concerns: the
/// scheduler and the other sequences go on.
fn guarded<T>(f: impl FnOnce() -> Result<T, ApiError>) -> Result<T, ApiError> {
    match std::panic::catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Err(ApiError::internal(format!("generation failed: {what}")))
        }
    }
}

#[cfg(test)]
pub(crate) mod fake;
#[cfg(test)]
mod tests;
