//! The bounded queue of jobs and the scheduler thread behind it.
//!
//! Handlers queue [`Job`]s with [`Engine::submit`]; when the queue is full the answer is 429 at
//! once, so a burst of requests never piles up unbounded work. One thread runs the
//! [`Scheduler`] over a [`SlotModel`]: llama.cpp's context in the server
//! ([`crate::llama::LlamaSlots`]), a fake model in the router's tests. The model side is made
//! on that thread, because llama.cpp's context may not move between threads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use constrain_vocab::Vocabulary;

use crate::engine::Job;
use crate::error::{ApiError, StartError};
use crate::metrics::Metrics;
use crate::scheduler::{Scheduler, SchedulerOptions, SlotModel};

/// How the queue and the scheduler run.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Jobs that may wait for a slot; more are refused with 429.
    pub max_queue: usize,
    /// How the scheduler batches.
    pub scheduler: SchedulerOptions,
}

/// The queue and the scheduler behind it.
pub struct Engine {
    queue: SyncSender<Job>,
    metrics: Arc<Metrics>,
    max_queue: usize,
    /// Asks the scheduler to end its work and return.
    stop: Arc<AtomicBool>,
    /// The scheduler's thread, joined by [`Engine::stop`].
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Engine {
    /// Starts the scheduler thread over the model side `open` makes there (the number of
    /// slots and their room are the model side's); fails with `open`'s message if it cannot.
    pub fn start<M, F>(
        open: F,
        vocabulary: Arc<Vocabulary>,
        options: &EngineOptions,
        metrics: Arc<Metrics>,
    ) -> Result<Engine, StartError>
    where
        M: SlotModel,
        F: FnOnce() -> Result<M, String> + Send + 'static,
    {
        let (queue, jobs) = sync_channel::<Job>(options.max_queue);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let scheduler_options = options.scheduler.clone();
        let thread_metrics = metrics.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let thread_stop = stop.clone();
        let thread = std::thread::Builder::new()
            .name("constrain-scheduler".into())
            .spawn(move || {
                let model = match open() {
                    Ok(m) => {
                        let _ = ready_tx.send(Ok(()));
                        m
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                drop(ready_tx);
                Scheduler::new(model, vocabulary, scheduler_options, thread_metrics)
                    .run(jobs, &thread_stop);
            })
            .map_err(StartError::Thread)?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(StartError::Slots(e)),
            Err(_) => return Err(StartError::SchedulerGone),
        }
        Ok(Engine {
            queue,
            metrics,
            max_queue: options.max_queue,
            stop,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Stops the scheduler after its current step (what still runs fails with 503) and waits
    /// for its thread, so that the llama.cpp context is freed before the process exits: a
    /// decode running while the process tears down llama.cpp's globals would crash it.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        if let Some(thread) = thread {
            if thread.join().is_err() {
                eprintln!("constrain serve: the scheduler thread panicked");
            }
        }
    }

    /// Queues `job`; 429 at once when the queue is full.
    pub fn submit(&self, job: Job) -> Result<(), ApiError> {
        self.metrics.queued.fetch_add(1, Ordering::Relaxed);
        match self.queue.try_send(job) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                self.metrics.queued.fetch_sub(1, Ordering::Relaxed);
                Err(ApiError::busy(self.max_queue))
            }
            Err(TrySendError::Disconnected(_)) => {
                self.metrics.queued.fetch_sub(1, Ordering::Relaxed);
                Err(ApiError::unavailable("the model's scheduler has stopped"))
            }
        }
    }
}
