//! The `lark` target: see [`constrain_fuzz::targets::lark`].

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| constrain_fuzz::targets::lark(data));
