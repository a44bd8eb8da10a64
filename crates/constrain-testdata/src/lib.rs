//! Locating the reference data and fixtures that tests and benches read.
