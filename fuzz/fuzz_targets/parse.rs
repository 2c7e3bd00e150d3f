#![no_main]
//! `parse`: see `lesson_fuzz::checks::parse` (`tests/it/fuzz_checks.rs`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| lesson_fuzz::checks::parse(data));
