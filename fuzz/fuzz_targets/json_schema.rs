//! The `json_schema` target: see [`constrain_fuzz::targets::json_schema`].

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| constrain_fuzz::targets::json_schema(data));
