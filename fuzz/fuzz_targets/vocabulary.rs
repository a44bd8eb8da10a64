//! The `vocabulary` target: see [`constrain_fuzz::targets::vocabulary`].

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| constrain_fuzz::targets::vocabulary(data));
