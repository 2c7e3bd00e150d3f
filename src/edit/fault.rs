//! Fault injection: named points in the write door where a test kills the process, so that
//! "killed at every point of a write" is a loop over a count rather than a random signal.
//!
//! Compiled in only under `cfg(test)` or the `fault-injection` feature; elsewhere [`point`] is
//! an empty function and no environment is read. With it, `LESSON_FAULT_AT=N` kills the process
//! (SIGKILL: no destructor runs, no temp file is cleaned up) at the Nth point it crosses, and
//! `LESSON_FAULT_LOG=FILE` appends the name of each point crossed, which is how a test learns
//! how many points a command has.

/// A point where a write can be cut short.
pub(crate) fn point(name: &'static str) {
    point_with(name, || {});
}

/// A point where a write can be cut short, after `partial` (half of a write, say) when the
/// process is killed here.
#[cfg(any(test, feature = "fault-injection"))]
pub(crate) fn point_with(name: &'static str, partial: impl FnOnce()) {
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CROSSED: AtomicUsize = AtomicUsize::new(0);
    let at = std::env::var("LESSON_FAULT_AT").ok();
    let log = std::env::var_os("LESSON_FAULT_LOG");
    if at.is_none() && log.is_none() {
        return;
    }
    let n = CROSSED.fetch_add(1, Ordering::SeqCst) + 1;
    if let Some(log) = log {
        if let Ok(mut f) = std::fs::File::options().create(true).append(true).open(log) {
            let _ = writeln!(f, "{name}");
        }
    }
    if at.and_then(|a| a.parse::<usize>().ok()) == Some(n) {
        partial();
        kill();
    }
}

/// A point where a write can be cut short (fault injection is compiled out).
#[cfg(not(any(test, feature = "fault-injection")))]
#[inline(always)]
pub(crate) fn point_with(_name: &'static str, _partial: impl FnOnce()) {}

#[cfg(all(unix, any(test, feature = "fault-injection")))]
fn kill() -> ! {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    std::process::abort()
}

#[cfg(all(not(unix), any(test, feature = "fault-injection")))]
fn kill() -> ! {
    std::process::abort()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};
    use std::process::Command;

    use crate::curate::add;
    use crate::curate::record::{record, Request};
    use crate::curate::Stamp;
    use crate::ledger::{Applied, RunOutcome};
    use crate::lint::Selection;

    /// Set in the child process: the bank it records into.
    const CHILD_BANK: &str = "LESSON_FAULT_TEST_BANK";
    const NOW: &str = "2026-11-22T12:00:00Z";
    const SLUG: &str = "flaky-retries";

    fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        walkdir::WalkDir::new(root)
            .into_iter()
            .filter_entry(|e| e.file_name() != ".lesson")
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| {
                let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
                (rel, std::fs::read(e.path()).unwrap())
            })
            .collect()
    }

    fn copy(from: &Path, to: &Path) {
        for (rel, bytes) in files(from) {
            let path = to.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
    }

    /// The writes killed at every point, each a `#[test]` below that runs itself again as a
    /// child process (`CHILD_BANK` set) to do the write once.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Op {
        /// `lesson record` of one outcome.
        Record,
        /// `lesson add` of one new lesson.
        Add,
        /// `lesson supersede` of one lesson by another.
        Supersede,
        /// `lesson archive` of two lessons.
        Archive,
        /// `lesson lint --fix` of a stale `_index.md`, a heading and a hidden character.
        Fix,
        /// The index writer: the first search of a bank builds and persists its index.
        Index,
    }

    impl Op {
        /// The test that runs `self` (the child runs it again).
        fn test(self) -> &'static str {
            match self {
                Op::Record => "edit::fault::tests::record_killed_at_every_point_loses_nothing",
                Op::Add => "edit::fault::tests::add_killed_at_every_point_loses_nothing",
                Op::Supersede => {
                    "edit::fault::tests::supersede_killed_at_every_point_loses_nothing"
                }
                Op::Archive => "edit::fault::tests::archive_killed_at_every_point_loses_nothing",
                Op::Fix => "edit::fault::tests::lint_fix_killed_at_every_point_loses_nothing",
                Op::Index => "edit::fault::tests::index_writer_killed_at_every_point_loses_nothing",
            }
        }

        /// Make the fixture bank at `bank` ready for the write (what `--fix` repairs).
        fn prepare(self, bank: &Path) {
            if self != Op::Fix {
                return;
            }
            std::fs::write(bank.join("_index.md"), "# stale\n").unwrap();
            let edit = |file: &str, from: &str, to: &str| {
                let path = bank.join(file);
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(text.contains(from), "{file}: no {from:?}");
                std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
            };
            edit("lint-in-ci.md", "\n# ", "\n# Not the title: ");
            edit("run-clippy-in-ci.md", "\n## ", "\n## \u{200b}");
        }

        /// Do the write once, in the child process.
        fn run(self, bank: &Path) {
            let stamp = Stamp {
                at: NOW.parse().unwrap(),
                by: "tester".into(),
            };
            match self {
                Op::Record => {
                    let req = Request {
                        slug: SLUG.into(),
                        applied: Applied::Followed,
                        run: RunOutcome::Success,
                        evidence: crate::curate::new::NewEvidence {
                            kind: crate::lesson::EvidenceKind::Run,
                            reference: "r_fault".into(),
                            note: None,
                        },
                        retrieval: None,
                    };
                    record(bank, &req, &stamp).unwrap();
                }
                Op::Add => {
                    let candidates =
                        add::read_candidates("new.md", NEW_LESSON.as_bytes().to_vec()).unwrap();
                    let added = add::add(bank, &candidates, &add::Intake::default(), &stamp, false)
                        .unwrap();
                    assert_eq!(added.admitted.len(), 1, "{added:?}");
                }
                Op::Supersede => {
                    let done = crate::curate::supersede::supersede(
                        bank,
                        &["document-exit-codes".into()],
                        "pin-the-toolchain",
                        &stamp,
                    )
                    .unwrap();
                    assert!(done.changed());
                }
                Op::Archive => {
                    let selection = crate::curate::archive::Selection {
                        slugs: vec!["pin-the-toolchain".into(), "hand-written".into()],
                        ..Default::default()
                    };
                    let moved =
                        crate::curate::archive::archive(bank, &selection, &stamp, false).unwrap();
                    assert_eq!(moved.len(), 2);
                }
                Op::Fix => {
                    let fixed = crate::lint::fix::fix_and_write(
                        bank,
                        &Selection::default(),
                        false,
                        stamp.at,
                    )
                    .unwrap();
                    assert!(!fixed.changes.is_empty());
                }
                Op::Index => {
                    std::hint::black_box(search(bank));
                }
            }
        }
    }

    /// A lesson for `lesson add`, unlike every lesson of the fixture.
    const NEW_LESSON: &str = concat!(
        "---\nschema: learning/v1\nslug: vendor-the-fixtures\ntitle: Vendor the test fixtures.\n",
        "trigger:\n  description: Tests fetch fixtures from a mirror that goes down.\n",
        "  tags: [tests]\noutcome: failure\nevidence:\n  - kind: run\n    ref: r_vendor\n---\n\n",
        "# Vendor the test fixtures.\n\n## When this applies\n\nTests download data.\n\n",
        "## What to do (or avoid)\n\nKeep it in the repository.\n\n",
        "## Counter-example\n\nData too big for git.\n",
    );

    /// The hits (slug, score) of a search of `bank` for what the fixture is about.
    fn search(bank: &Path) -> Vec<(String, f64)> {
        let mut retriever = crate::retrieve::Retriever::open(bank).unwrap();
        let request = crate::retrieve::Request::new("ci lint clippy toolchain retries")
            .k(10)
            .now(NOW.parse().unwrap());
        let found = retriever.search(&request).unwrap();
        found
            .hits
            .iter()
            .map(|h| (h.slug.clone(), h.score.score))
            .collect()
    }

    /// Run `op`'s test again as a child process that does the write once into `bank`.
    fn run_in_child(op: Op, bank: &Path, env: &[(&str, &Path)]) -> std::process::ExitStatus {
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", op.test(), "--test-threads=1"])
            .env(CHILD_BANK, bank)
            .envs(env.iter().map(|(k, v)| (k, v.as_os_str())))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
    }

    fn findings(root: &Path) -> Vec<(PathBuf, &'static str, bool)> {
        let bank = crate::lint::load(root, NOW.parse().unwrap()).unwrap();
        let mut out: Vec<_> = crate::lint::lint(&bank, &Selection::default())
            .into_iter()
            .map(|d| {
                let rel = d.path.strip_prefix(root).unwrap_or(&d.path).to_path_buf();
                (rel, d.code, d.fix.is_some())
            })
            .collect();
        out.sort();
        out
    }

    /// `op` killed at each point of the write door in turn: what the bank held is still there
    /// (a ledger only grew, untouched files are untouched, a written file is its old or its new
    /// text, a moved file is at one of its two places), every file parses, lint finds nothing
    /// new that `--fix` does not repair, no temp file outlives the next locked
    /// write, and a search answers as it does in the bank the whole write left.
    fn killed_at_every_point(op: Op) {
        if let Some(bank) = std::env::var_os(CHILD_BANK) {
            op.run(Path::new(&bank));
            return;
        }
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/banks/ledger");
        let tmp = tempfile::tempdir().unwrap();
        let fresh = |name: &str| {
            let bank = tmp.path().join(name);
            copy(&fixture, &bank);
            op.prepare(&bank);
            bank
        };
        // a whole run, to count the points and to know the bank it leaves
        let whole = fresh("whole");
        let before = files(&whole);
        let baseline = findings(&whole);
        let log = tmp.path().join("points");
        assert!(run_in_child(op, &whole, &[("LESSON_FAULT_LOG", &log)]).success());
        let points: Vec<String> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert!(points.len() >= 4, "{op:?}: {points:?}");
        let after = files(&whole);
        let answer = search(&whole);
        // where the whole write moved each file it moved: the new file of the same name
        let moved_to = |path: &Path| {
            after
                .keys()
                .find(|q| !before.contains_key(*q) && q.file_name() == path.file_name())
                .cloned()
        };
        let is_ledger = |path: &Path| {
            path.starts_with("_log") && path.extension().is_some_and(|e| e == "jsonl")
        };
        for n in 1..=points.len() {
            let bank = fresh(&format!("killed-{n}"));
            let at = PathBuf::from(n.to_string());
            let status = run_in_child(op, &bank, &[("LESSON_FAULT_AT", &at)]);
            let point = &points[n - 1];
            let at = format!("{op:?} killed at {n} ({point})");
            assert!(!status.success(), "{at}: not killed");
            let now = files(&bank);
            for (path, old) in &before {
                let new = now.get(path);
                let kept = if is_ledger(path) {
                    new.is_some_and(|b| b.starts_with(old))
                } else if new.is_none() && !after.contains_key(path) {
                    // moved: at its new place, as it was or as the whole write left it
                    moved_to(path).is_some_and(|q| {
                        now.get(&q)
                            .is_some_and(|b| b == old || Some(b) == after.get(&q))
                    })
                } else {
                    new == Some(old) || (new.is_some() && new == after.get(path))
                };
                assert!(kept, "{at}: {} lost or mangled", path.display());
            }
            for (path, bytes) in &now {
                if path.extension().is_some_and(|e| e == "md") {
                    let text = String::from_utf8(bytes.clone()).unwrap();
                    let source = crate::source::Source::new(path.clone(), text);
                    let doc = crate::document::Document::parse(source, None);
                    let index = path.file_name().is_some_and(|f| f == "_index.md");
                    assert!(
                        index || doc.lesson.is_some(),
                        "{at}: {} no longer parses",
                        path.display()
                    );
                }
            }
            // a line torn by the kill is the one finding `--fix` leaves (L002, by design: the
            // ledger is append-only); the event it was is then lost whole
            let torn = |(p, c, _): &(PathBuf, &str, bool)| is_ledger(p) && *c == "L002";
            for f in findings(&bank) {
                let known = baseline.iter().any(|(p, c, _)| *p == f.0 && *c == f.1);
                assert!(
                    known || f.2 || torn(&f),
                    "{at}: new unfixable {} in {}",
                    f.1,
                    f.0.display()
                );
            }
            // the index answers from the files as they are: as a fresh index of this bank
            // does, and, when the kill cut no lesson write short, as the whole write's bank
            let answer_now = search(&bank);
            let rebuilt = tmp.path().join(format!("rebuilt-{n}"));
            copy(&bank, &rebuilt);
            assert_eq!(answer_now, search(&rebuilt), "{at}: the index went stale");
            if op == Op::Index {
                assert_eq!(answer_now, answer, "{at}");
            }
            // a kill between a ledger append and the lesson's write leaves counts behind the
            // ledger: L001, which plain `--fix` completes
            crate::lint::fix::fix_and_write(
                &bank,
                &Selection::default(),
                false,
                NOW.parse().unwrap(),
            )
            .unwrap();
            let new: Vec<_> = findings(&bank)
                .into_iter()
                .filter(|f| !baseline.contains(f) && !torn(f))
                .filter(|f| op != Op::Fix || f.2)
                .collect();
            assert!(new.is_empty(), "{at}: --fix left {new:?}");
            let temp = files(&bank)
                .into_keys()
                .find(|p| p.to_string_lossy().contains(super::super::TEMP_PREFIX));
            assert_eq!(temp, None, "{at}: a temp file outlived --fix");
        }
    }

    #[test]
    fn record_killed_at_every_point_loses_nothing() {
        killed_at_every_point(Op::Record);
    }

    #[test]
    fn add_killed_at_every_point_loses_nothing() {
        killed_at_every_point(Op::Add);
    }

    #[test]
    fn supersede_killed_at_every_point_loses_nothing() {
        killed_at_every_point(Op::Supersede);
    }

    #[test]
    fn archive_killed_at_every_point_loses_nothing() {
        killed_at_every_point(Op::Archive);
    }

    #[test]
    fn lint_fix_killed_at_every_point_loses_nothing() {
        killed_at_every_point(Op::Fix);
    }

    #[test]
    fn index_writer_killed_at_every_point_loses_nothing() {
        killed_at_every_point(Op::Index);
    }
}
