//! The `regex` target: see [`constrain_fuzz::targets::regex`].

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| constrain_fuzz::targets::regex(data));
