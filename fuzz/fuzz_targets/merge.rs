#![no_main]
//! `merge`: see `lesson_fuzz::checks::merge` (`tests/it/fuzz_checks.rs`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| lesson_fuzz::checks::merge(data));
