//! The `matcher` target: see [`constrain_fuzz::targets::matcher`].

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| constrain_fuzz::targets::matcher(data));
