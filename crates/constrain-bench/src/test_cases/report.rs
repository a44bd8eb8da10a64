//! Counting checks and printing failures as they happen.

use std::fmt::Display;
use std::process::ExitCode;

/// The results of a run: one line per failed check as it happens, notes, and the final count.
#[derive(Debug, Default)]
pub struct Report {
    passed: usize,
    failed: usize,
    notes: Vec<String>,
}

impl Report {
    /// A check that passed.
    pub fn pass(&mut self) {
        self.passed += 1;
    }

    /// A check of case `case` that failed, and why: printed at once as one line.
    pub fn fail(&mut self, case: &str, what: impl Display) {
        self.fail_many(case, 1, what);
    }

    /// `count` checks of `case` that failed for one reason (for instance, checks that could
    /// not run because the grammar does not build): one line, `count` failures.
    pub fn fail_many(&mut self, case: &str, count: usize, what: impl Display) {
        println!("FAIL {case}: {what}");
        self.failed += count;
    }

    /// Something the reader should know about how the checks ran (printed before the count).
    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    /// Checks that failed so far.
    pub fn failed(&self) -> usize {
        self.failed
    }

    /// Prints the notes and the closing `N passed, M failed` line; success only if nothing
    /// failed.
    pub fn finish(self) -> ExitCode {
        for note in &self.notes {
            println!("note: {note}");
        }
        println!("{} passed, {} failed", self.passed, self.failed);
        if self.failed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}
