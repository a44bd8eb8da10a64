//! A transition table that grows without moving what it holds.
//!
//! The automaton and the lexer keep one row of transitions per state, one entry per byte
//! class, built lazily as masks are computed. A vector that doubles would copy every row
//! each time it grows: a grammar with 65,536 states of 94 classes holds 24 MB of rows, and
//! the copy (with the page faults of the new allocation) is a pause of 15 ms inside one
//! mask. Rows are kept in pages of a fixed size instead: a new state costs at most the
//! allocation of one page, however large the table.

/// Entries per page (about 256 KB of `u32`), rounded down to whole rows.
const PAGE_ENTRIES: usize = 1 << 16;

/// Rows of `width` entries, `fill` until set, appended a row at a time.
pub(crate) struct TransitionTable {
    width: usize,
    fill: u32,
    /// Rows per page, a power of two: the page of row `r` is `r >> shift`.
    shift: u32,
    pages: Vec<Box<[u32]>>,
    rows: usize,
}

impl TransitionTable {
    /// An empty table of rows of `width` entries that start as `fill`.
    pub(crate) fn new(width: usize, fill: u32) -> TransitionTable {
        let rows_per_page = (PAGE_ENTRIES / width.max(1)).max(1);
        // The largest power of two that fits.
        let shift = usize::BITS - 1 - rows_per_page.leading_zeros();
        TransitionTable {
            width,
            fill,
            shift,
            pages: Vec::new(),
            rows: 0,
        }
    }

    /// Appends a row of `fill` entries.
    pub(crate) fn push_row(&mut self) {
        if self.rows >> self.shift == self.pages.len() {
            let page = vec![self.fill; self.width << self.shift];
            self.pages.push(page.into_boxed_slice());
        }
        self.rows += 1;
    }

    /// Where row `row` starts in its page.
    #[inline]
    fn offset(&self, row: usize) -> usize {
        debug_assert!(row < self.rows);
        (row & ((1 << self.shift) - 1)) * self.width
    }

    /// Entry `column` of row `row` (read for every byte a walk steps: one index into one
    /// page).
    #[inline]
    pub(crate) fn get(&self, row: usize, column: usize) -> u32 {
        debug_assert!(column < self.width);
        self.pages[row >> self.shift][self.offset(row) + column]
    }

    /// Row `row`.
    #[cfg(test)]
    fn row(&self, row: usize) -> &[u32] {
        let start = self.offset(row);
        &self.pages[row >> self.shift][start..start + self.width]
    }

    /// Row `row`, to set its entries.
    #[inline]
    pub(crate) fn row_mut(&mut self, row: usize) -> &mut [u32] {
        let start = self.offset(row);
        &mut self.pages[row >> self.shift][start..start + self.width]
    }

    /// Sets entry `column` of row `row`.
    #[inline]
    pub(crate) fn set(&mut self, row: usize, column: usize, value: u32) {
        debug_assert!(column < self.width);
        let at = self.offset(row) + column;
        self.pages[row >> self.shift][at] = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_their_entries_across_pages() {
        for width in [1, 3, 94, 1 << 17] {
            let mut table = TransitionTable::new(width, u32::MAX);
            let rows = 3 * (PAGE_ENTRIES / width).max(1) + 5;
            for r in 0..rows {
                table.push_row();
                assert!(table.row(r).iter().all(|&e| e == u32::MAX));
                table.set(r, r % width, r as u32);
            }
            for r in 0..rows {
                assert_eq!(table.get(r, r % width), r as u32, "width {width}, row {r}");
                let others = table
                    .row(r)
                    .iter()
                    .enumerate()
                    .filter(|&(c, _)| c != r % width);
                assert!(others.clone().all(|(_, &e)| e == u32::MAX));
            }
        }
    }
}
