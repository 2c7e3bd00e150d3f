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

    /// Run this test again as a child process that records one outcome into `bank`.
    fn record_in_child(bank: &Path, env: &[(&str, &Path)]) -> std::process::ExitStatus {
        Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "edit::fault::tests::record_killed_at_every_point_loses_nothing",
                "--test-threads=1",
            ])
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

    /// `lesson record` killed at each point of the write door in turn: what the bank held is
    /// still there (the ledger only grew, untouched files are untouched, the lesson is its old
    /// or its new text), every file parses, lint finds nothing new that `--fix --unsafe-fixes`
    /// does not repair, and no temp file outlives the next locked write.
    #[test]
    fn record_killed_at_every_point_loses_nothing() {
        if let Some(bank) = std::env::var_os(CHILD_BANK) {
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
            let stamp = Stamp {
                at: NOW.parse().unwrap(),
                by: "tester".into(),
            };
            record(Path::new(&bank), &req, &stamp).unwrap();
            return;
        }
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/banks/ledger");
        let tmp = tempfile::tempdir().unwrap();
        // a whole run, to count the points and to know the bank it leaves
        let whole = tmp.path().join("whole");
        copy(&fixture, &whole);
        let before = files(&whole);
        let baseline = findings(&whole);
        let log = tmp.path().join("points");
        assert!(record_in_child(&whole, &[("LESSON_FAULT_LOG", &log)]).success());
        let points: Vec<String> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert!(points.len() >= 4, "{points:?}");
        let after = files(&whole);
        let lesson = PathBuf::from(format!("{SLUG}.md"));
        let ledger = PathBuf::from(format!("_log/{SLUG}.jsonl"));
        for n in 1..=points.len() {
            let bank = tmp.path().join(format!("killed-{n}"));
            copy(&fixture, &bank);
            let at = PathBuf::from(n.to_string());
            let status = record_in_child(&bank, &[("LESSON_FAULT_AT", &at)]);
            let point = &points[n - 1];
            assert!(!status.success(), "not killed at {n} ({point})");
            let now = files(&bank);
            for (path, old) in &before {
                let new = now.get(path);
                let kept = if *path == ledger {
                    new.is_some_and(|b| b.starts_with(old))
                } else if *path == lesson || Some(old) != after.get(path) {
                    new == Some(old) || new == after.get(path)
                } else {
                    new == Some(old)
                };
                assert!(
                    kept,
                    "killed at {n} ({point}): {} lost or mangled",
                    path.display()
                );
            }
            for (path, bytes) in &now {
                if path.extension().is_some_and(|e| e == "md") {
                    let text = String::from_utf8(bytes.clone()).unwrap();
                    let source = crate::source::Source::new(path.clone(), text);
                    let doc = crate::document::Document::parse(source, None);
                    let index = path.file_name().is_some_and(|f| f == "_index.md");
                    assert!(
                        index || doc.lesson.is_some(),
                        "killed at {n} ({point}): {} no longer parses",
                        path.display()
                    );
                }
            }
            // a line torn by the kill is the one finding `--fix` leaves (L002, by design: the
            // ledger is append-only); the record it was is then lost whole, the lesson untouched
            let torn = |(p, c, _): &(PathBuf, &str, bool)| *p == ledger && *c == "L002";
            for f in findings(&bank) {
                let known = baseline.iter().any(|(p, c, _)| *p == f.0 && *c == f.1);
                assert!(
                    known || f.2 || torn(&f),
                    "killed at {n} ({point}): new unfixable {} in {}",
                    f.1,
                    f.0.display()
                );
                if torn(&f) {
                    assert_eq!(
                        now.get(&lesson),
                        before.get(&lesson),
                        "killed at {n} ({point})"
                    );
                }
            }
            // a kill between the ledger append and the lesson's write leaves counts behind the
            // ledger: L001, whose fix is unsafe (it is for hand-edited counts too)
            crate::lint::fix::fix_and_write(
                &bank,
                &Selection::default(),
                true,
                NOW.parse().unwrap(),
            )
            .unwrap();
            let new: Vec<_> = findings(&bank)
                .into_iter()
                .filter(|f| !baseline.contains(f) && !torn(f))
                .collect();
            assert!(
                new.is_empty(),
                "killed at {n} ({point}): --fix left {new:?}"
            );
            let temp = files(&bank)
                .into_keys()
                .find(|p| p.to_string_lossy().contains(super::super::TEMP_PREFIX));
            assert_eq!(
                temp, None,
                "killed at {n} ({point}): a temp file outlived --fix"
            );
        }
    }
}
