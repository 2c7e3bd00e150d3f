#![no_main]
//! `mcp`: see `lesson_fuzz::checks::mcp` (`tests/it/fuzz_checks.rs`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| lesson_fuzz::checks::mcp(data));
