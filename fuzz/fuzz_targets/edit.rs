#![no_main]
//! `edit`: see `lesson_fuzz::checks::edit` (`tests/it/fuzz_checks.rs`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| lesson_fuzz::checks::edit(data));
