//! The sampling funnel: penalties, temperature, truncation and a seeded draw

#![deny(missing_docs)]
