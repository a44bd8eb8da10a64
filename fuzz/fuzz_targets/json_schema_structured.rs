//! The `json_schema_structured` target: see [`constrain_fuzz::targets::json_schema_structured`].

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| constrain_fuzz::targets::json_schema_structured(data));
