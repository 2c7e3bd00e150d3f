#![no_main]
//! `judge`: see `lesson_fuzz::checks::judge` (`tests/it/fuzz_checks.rs`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| lesson_fuzz::checks::judge(data));
