#![no_main]
//! `add`: see `lesson_fuzz::checks::add` (`tests/it/fuzz_checks.rs`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| lesson_fuzz::checks::add(data));
