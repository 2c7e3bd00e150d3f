//! The fuzz targets' checks (`fuzz_checks`) on every input saved under `tests/fuzz/TARGET/`:
//! each crash fuzzing found (named after what it broke) and a few seeds. `cargo xtask fuzz`
//! runs the targets themselves; a new crash is saved here with its fix.

use std::path::Path;

use crate::fuzz_checks;

/// Run `check` on every file of `tests/fuzz/<target>/`; a panic names the file.
fn replay(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz")
        .join(target);
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "{}: no saved input", dir.display());
    for path in inputs {
        let bytes = std::fs::read(&path).unwrap();
        let run = std::panic::catch_unwind(|| check(&bytes));
        assert!(
            run.is_ok(),
            "fuzz target {target}: {} fails",
            path.display()
        );
    }
}

#[test]
fn replay_parse() {
    replay("parse", fuzz_checks::parse);
}

#[test]
fn replay_ledger() {
    replay("ledger", fuzz_checks::ledger);
}

#[test]
fn replay_merge() {
    replay("merge", fuzz_checks::merge);
}

#[test]
fn replay_add() {
    replay("add", fuzz_checks::add);
}

#[test]
fn replay_judge() {
    replay("judge", fuzz_checks::judge);
}

#[test]
fn replay_index() {
    replay("index", fuzz_checks::index);
}

#[test]
fn replay_edit() {
    replay("edit", fuzz_checks::edit);
}

#[cfg(feature = "mcp")]
#[test]
fn replay_mcp() {
    replay("mcp", fuzz_checks::mcp);
}

/// The `index` target's inputs that damage one byte: every third byte of the delta and every
/// 31st of the base (a checksum covers each section, so the section a byte is in decides the
/// path; a damaged delta section failed `Retriever::open` instead of rebuilding).
#[test]
fn one_damaged_byte_anywhere_in_the_index_is_rebuilt() {
    let (base, delta) = fuzz_checks::index_sizes();
    assert!(delta > 0, "the sample has no delta");
    for (mode, stride, len) in [(3u8, 3usize, delta), (2, 31, base)] {
        for offset in (0..len as u32).step_by(stride) {
            let mut input = vec![mode];
            input.extend_from_slice(&offset.to_le_bytes());
            input.push(0x30);
            let run = std::panic::catch_unwind(|| fuzz_checks::index(&input));
            assert!(
                run.is_ok(),
                "index damaged at byte {offset} (mode {mode}) fails"
            );
        }
    }
}
