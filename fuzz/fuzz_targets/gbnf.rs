//! The `gbnf` target: see [`constrain_fuzz::targets::gbnf`].

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| constrain_fuzz::targets::gbnf(data));
