#![no_main]
//! `index`: see `lesson_fuzz::checks::index` (`tests/it/fuzz_checks.rs`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| lesson_fuzz::checks::index(data));
