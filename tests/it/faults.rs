//! Faults of the file system under the bank: a full disk and a read-only bank, each on a small
//! tmpfs mounted for the test. Every write then ends with exit 2 and a message that names the
//! file and the cause (never a panic), loses nothing (a file is as it was, a ledger only grew,
//! a moved file is at one of its two places), leaves no temp file, and every read still
//! answers. Mounting needs root (CI runs as root); elsewhere each test says `skipped: …`.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::sandbox::{copy_dir, Sandbox, Tree};

const FIXTURE: &str = "tests/fixtures/banks/ledger";

/// A tmpfs mounted on a directory for one test, unmounted when dropped.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mount a tmpfs of `size` (as `mount -o size=` takes it) on `dir` (created), or say why
    /// not and return `None`.
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output();
        match out {
            Ok(out) if out.status.success() => Some(Tmpfs {
                dir: dir.to_path_buf(),
            }),
            Ok(out) => {
                eprintln!(
                    "skipped: cannot mount a tmpfs here (needs root): {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("skipped: no `mount` command: {e}");
                None
            }
        }
    }

    /// Make it read-only (for root too, unlike file modes).
    fn read_only(&self) {
        let ok = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cannot remount {} read-only", self.dir.display());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
    }
}

/// Fill the file system holding `dir` with `dir/.lesson/filler` until a write fails for want
/// of space; returns the filler's path.
fn fill(dir: &Path) -> PathBuf {
    use std::io::Write;
    let filler = dir.join(".lesson").join("filler");
    std::fs::create_dir_all(filler.parent().unwrap()).unwrap();
    let mut f = std::fs::File::create(&filler).unwrap();
    let block = vec![0u8; 4096];
    loop {
        if let Err(e) = f.write_all(&block) {
            assert_eq!(e.raw_os_error(), Some(28), "{e}");
            break;
        }
    }
    // and the last partial page, byte by byte
    while f.write_all(&[0]).is_ok() {}
    filler
}

/// The error-level and warning codes `lesson lint` reports, with their files, sorted.
fn findings(s: &Sandbox) -> Vec<String> {
    let lint = s.run(&["lint", "--output-format", "concise"]);
    assert!(lint.code == 0 || lint.code == 1, "{lint}");
    let mut codes: Vec<String> = lint
        .stdout
        .lines()
        .filter_map(|l| {
            // `FILE:LINE:COL: CODE message`
            let mut parts = l.splitn(4, ':');
            let (file, line, col, rest) =
                (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
            line.parse::<u32>().ok()?;
            col.parse::<u32>().ok()?;
            let code = rest.split_whitespace().next()?;
            Some(format!("{file} {code}"))
        })
        .collect();
    codes.sort();
    codes
}

/// Nothing of `before` is lost in `now`: every file is as it was, or (a ledger) only grew, or
/// was moved whole to a new file of the same name; and no temp file of the write door is left.
fn nothing_lost(before: &Tree, now: &Tree, what: &str) {
    for (path, old) in before {
        let ledger = path.extension().is_some_and(|e| e == "jsonl");
        let kept = match now.get(path) {
            Some(new) if ledger => new.starts_with(old),
            Some(new) => new == old,
            None => now.iter().any(|(q, new)| {
                !before.contains_key(q) && q.file_name() == path.file_name() && new == old
            }),
        };
        assert!(kept, "{what}: {} lost or changed", path.display());
    }
    let temp = now
        .keys()
        .find(|p| p.to_string_lossy().contains(".lesson-tmp"));
    assert_eq!(temp, None, "{what}: a temp file is left");
}

/// The writes tried on a faulty bank, each with a name for messages.
const WRITES: &[&[&str]] = &[
    &[
        "record",
        "flaky-retries",
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r_fault",
    ],
    &["add", "candidate.md"],
    &[
        "supersede",
        "document-exit-codes",
        "--by",
        "pin-the-toolchain",
    ],
    &["archive", "hand-written"],
    &[
        "new",
        "vendor-the-fixtures",
        "--title",
        "Vendor the fixtures.",
        "--trigger",
        "Tests fetch fixtures.",
        "--evidence",
        "run:r_vendor",
    ],
];

/// A lesson for `lesson add`, written beside the bank (outside the tmpfs).
const CANDIDATE: &str = "---\nschema: learning/v1\nslug: keep-fixtures-local\n\
title: Keep test fixtures in the repository.\ntrigger:\n  description: Tests fetch fixtures \
from a mirror that goes down.\n  tags: [tests]\noutcome: failure\nevidence:\n  - kind: run\n    \
ref: r_local\n---\n\n# Keep test fixtures in the repository.\n\n## When this applies\n\n\
Tests download data.\n\n## What to do (or avoid)\n\nVendor it.\n\n## Counter-example\n\n\
Data too big for git.\n";

/// The fixture bank on its own tmpfs of 1 MiB, the candidate for `add` beside it, and what
/// lint finds in it; `None` (said) where no tmpfs can be mounted.
fn faulty_bank() -> Option<(Sandbox, Tmpfs, Vec<String>)> {
    let s = Sandbox::new();
    let fs = Tmpfs::mount(&s.bank(), "1m")?;
    copy_dir(Path::new(FIXTURE), &s.bank());
    s.write("candidate.md", CANDIDATE);
    let baseline = findings(&s);
    Some((s, fs, baseline))
}

#[test]
fn a_full_disk_fails_each_write_cleanly_and_a_retry_repairs() {
    let Some((s, _fs, baseline)) = faulty_bank() else {
        return;
    };
    assert!(
        baseline.iter().any(|f| f.ends_with(" L004")),
        "{baseline:?}"
    );
    let warm = s.run(&["search", "flaky network retries"]);
    assert_eq!(warm.code, 0, "{warm}");
    let before = s.tree();
    let filler = fill(&s.bank());
    for args in WRITES {
        let what = args.join(" ");
        let run = s.run(args);
        assert_eq!(run.code, 2, "{what}: {run}");
        assert!(
            run.stderr.contains("No space left on device") && run.stderr.contains("lessons/"),
            "{what}: the message names neither the cause nor the file: {run}"
        );
        assert!(!run.stderr.contains("panicked"), "{what}: {run}");
        nothing_lost(&before, &s.tree(), &what);
    }
    // reads answer on a full disk
    let search = s.run(&["search", "flaky network retries"]);
    assert_eq!(search.code, 0, "{search}");
    assert!(
        search.stdout.contains("Retry flaky network calls"),
        "{search}"
    );
    let list = s.run(&["list"]);
    assert_eq!(list.code, 0, "{list}");

    // with room again, the same record is a retry: it appends nothing more than what reached
    // the ledger, and brings the counts up to date (no L001 left behind)
    std::fs::remove_file(filler).unwrap();
    let retry = s.run(WRITES[0]);
    assert_eq!(retry.code, 0, "{retry}");
    let after = findings(&s);
    assert!(
        !after.iter().any(|f| f.ends_with(" L001")),
        "counts still behind the ledger after the retry: {after:?}"
    );
    // what the other cut-short writes left, `lint --fix` repairs (a stale `_index.md`)
    let fix = s.run(&[
        "lint",
        "--fix",
        "--unsafe-fixes",
        "--output-format",
        "concise",
    ]);
    assert!(fix.code == 0 || fix.code == 1, "{fix}");
    let left: Vec<String> = findings(&s)
        .into_iter()
        .filter(|f| !baseline.contains(f))
        .collect();
    assert!(left.is_empty(), "new findings after --fix: {left:?}");
}

#[test]
fn a_read_only_bank_is_read_and_never_written() {
    let Some((s, fs, baseline)) = faulty_bank() else {
        return;
    };
    let before = s.tree();
    fs.read_only();
    // reads answer, without an index on disk and without writing one
    assert_eq!(findings(&s), baseline);
    for args in [
        &["search", "flaky network retries"][..],
        &["list"],
        &["show", "flaky-retries"],
        &["review"],
    ] {
        let run = s.run(args);
        assert_eq!(run.code, 0, "{}: {run}", args.join(" "));
    }
    let search = s.run(&["search", "flaky network retries"]);
    assert!(
        search.stdout.contains("Retry flaky network calls"),
        "{search}"
    );
    let writes = WRITES
        .iter()
        .copied()
        .chain([&["index"][..], &["lint", "--fix", "--unsafe-fixes"]]);
    for args in writes {
        let what = args.join(" ");
        let run = s.run(args);
        assert_eq!(run.code, 2, "{what}: {run}");
        assert!(
            run.stderr.contains("Read-only file system"),
            "{what}: the message does not say why: {run}"
        );
        assert!(!run.stderr.contains("panicked"), "{what}: {run}");
        assert_eq!(s.tree(), before, "{what} changed a read-only bank");
    }
}
