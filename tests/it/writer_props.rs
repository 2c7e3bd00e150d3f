//! Property tests of the writers' invariants (issue 19): `record` applied N times adds exactly
//! what the replay rules count (and a retry adds nothing); `_index.md` does not depend on the
//! order the lessons are read in nor on their line endings; `lint --fix` is idempotent.

use std::path::Path;

use lesson::curate::new::NewEvidence;
use lesson::curate::record::{record, Request};
use lesson::curate::Stamp;
use lesson::ledger::{Applied, Delta, RunOutcome};
use lesson::lesson::EvidenceKind;
use lesson::lint::Selection;
use proptest::prelude::*;

use crate::sandbox::{Sandbox, NOW};

const SLUG: &str = "flaky-retries";

fn now() -> jiff::Timestamp {
    NOW.parse().unwrap()
}

/// `slug`'s counts as its file says.
fn counts(root: &Path, slug: &str) -> (u64, u64) {
    let bank = lesson::lint::load(root, now()).unwrap();
    let l = bank
        .documents
        .iter()
        .filter_map(|d| d.lesson.as_ref())
        .find(|l| l.slug.value == slug)
        .unwrap();
    (l.successes(), l.failures())
}

/// The codes lint reports for the bank at `root`, with their files, sorted.
fn findings(root: &Path) -> Vec<(String, &'static str)> {
    let bank = lesson::lint::load(root, now()).unwrap();
    let mut out: Vec<_> = lesson::lint::lint(&bank, &Selection::default())
        .into_iter()
        .map(|d| (d.path.display().to_string(), d.code))
        .collect();
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(crate::cases(12)))]

    #[test]
    fn record_n_times_adds_what_the_replay_rules_count(
        outcomes in proptest::collection::vec((any::<bool>(), any::<bool>(), any::<bool>()), 1..8),
    ) {
        let s = Sandbox::with_bank("tests/fixtures/banks/ledger");
        let root = s.bank();
        let (mut successes, mut failures) = counts(&root, SLUG);
        let stamp = Stamp { at: now(), by: "prop".into() };
        for (i, &(followed, success, retry)) in outcomes.iter().enumerate() {
            let applied = if followed { Applied::Followed } else { Applied::Contradicted };
            let run = if success { RunOutcome::Success } else { RunOutcome::Failure };
            let req = Request {
                slug: SLUG.into(),
                applied,
                run,
                evidence: NewEvidence {
                    kind: EvidenceKind::Run,
                    reference: format!("r_prop_{i}"),
                    note: None,
                },
                retrieval: None,
            };
            let first = record(&root, &req, &stamp).unwrap();
            prop_assert!(first.appended);
            if retry {
                // the same outcome again (a runtime retrying): nothing appended, nothing counted
                prop_assert!(!record(&root, &req, &stamp).unwrap().appended);
            }
            let delta = Delta::of(applied, run);
            successes += delta.success;
            failures += delta.failure;
            prop_assert_eq!(counts(&root, SLUG), (successes, failures), "after {} records", i + 1);
        }
        prop_assert!(
            !findings(&root).iter().any(|(_, c)| *c == "L001"),
            "counts and ledger disagree"
        );
    }

    #[test]
    fn index_md_is_independent_of_file_order_and_line_endings(
        seed in any::<u64>(),
        crlf in proptest::collection::vec(any::<bool>(), 64),
    ) {
        let s = Sandbox::with_bank("lessons");
        let root = s.bank();
        let expected = lesson::index_md::render(&lesson::lint::load(&root, now()).unwrap()).unwrap();
        // some lessons with CRLF line endings
        let lessons = lesson_files(&root);
        for (path, crlf) in lessons.iter().zip(crlf.iter().cycle()) {
            if *crlf {
                let text = std::fs::read_to_string(path).unwrap();
                std::fs::write(path, text.replace('\n', "\r\n")).unwrap();
            }
        }
        let mut bank = lesson::lint::load(&root, now()).unwrap();
        // and read in another order
        let n = bank.documents.len();
        let mut x = seed | 1;
        for i in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            bank.documents.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let rendered = lesson::index_md::render(&bank).unwrap();
        prop_assert!(rendered == expected, "{}", similar_lines(&expected, &rendered));
    }

    #[test]
    fn lint_fix_is_idempotent(
        breaks in proptest::collection::vec((0usize..6, 0usize..64), 1..6),
        unsafe_fixes in any::<bool>(),
    ) {
        let s = Sandbox::with_bank("lessons");
        let root = s.bank();
        let lessons = lesson_files(&root);
        for &(what, which) in &breaks {
            let path = &lessons[which % lessons.len()];
            let text = std::fs::read_to_string(path).unwrap();
            let broken = match what {
                // a heading that is not the title (D001)
                0 => text.replacen("\n# ", "\n# Not quite: ", 1),
                // a hidden character (D004)
                1 => text.replacen("\n## ", "\n## \u{200b}", 1),
                // the legacy schema id (S005)
                2 => text.replacen("schema: learning/v1", "schema: agentlearning/v1", 1),
                // counts no ledger backs, or behind it (L001/L004, unsafe fixes)
                3 => text.replacen("success_count: 0", "success_count: 3", 1),
                // CRLF line endings
                4 => text.replace('\n', "\r\n"),
                // a stale `_index.md` (B008)
                _ => {
                    std::fs::write(root.join("_index.md"), "# stale\n").unwrap();
                    continue;
                }
            };
            std::fs::write(path, broken).unwrap();
        }
        let fix = || lesson::lint::fix::fix_and_write(&root, &Selection::default(), unsafe_fixes, now()).unwrap();
        let first = fix();
        // a heading, a legacy id and a stale `_index.md` have safe fixes; a hidden character
        // an unsafe one
        if breaks
            .iter()
            .any(|&(what, _)| matches!(what, 0 | 2 | 5) || (what == 1 && unsafe_fixes))
        {
            prop_assert!(!first.changes.is_empty(), "--fix fixed nothing");
        }
        let once = s.tree();
        let left = findings(&root);
        let again = fix();
        prop_assert!(again.changes.is_empty(), "a second --fix changed {:?}", again.changes.keys().collect::<Vec<_>>());
        prop_assert_eq!(s.tree(), once);
        prop_assert_eq!(findings(&root), left);
    }
}

/// The bank's lesson files (not `_index.md`), sorted.
fn lesson_files(root: &Path) -> Vec<std::path::PathBuf> {
    let mut lessons: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md") && !p.ends_with("_index.md"))
        .collect();
    lessons.sort();
    lessons
}

/// The first line where `a` and `b` differ, for a failure message.
fn similar_lines(a: &str, b: &str) -> String {
    a.lines()
        .zip(b.lines())
        .enumerate()
        .find(|(_, (x, y))| x != y)
        .map_or_else(
            || format!("lengths {} and {}", a.len(), b.len()),
            |(i, (x, y))| format!("line {}: {x:?} vs {y:?}", i + 1),
        )
}
