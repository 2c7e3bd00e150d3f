#![no_main]
//! `ledger`: see `lesson_fuzz::checks::ledger` (`tests/it/fuzz_checks.rs`).

libfuzzer_sys::fuzz_target!(|data: &[u8]| lesson_fuzz::checks::ledger(data));
