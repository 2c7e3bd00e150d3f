//! `lesson supersede OLD… --by NEW`: NEW's `supersedes` gains the OLD slugs; each OLD's ledger
//! gains a `superseded` event. Idempotent: what is already recorded is not recorded again.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;

use super::{edited, find, frontmatter, json_without, lesson_of, locked};
use super::{with_import, CurateError, Stamp};
use crate::bank::{Bank, Overlay};
use crate::ledger::{EventKind, Ledger};

/// What `supersede` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superseded {
    /// NEW's file.
    pub path: PathBuf,
    /// The slugs added to NEW's `supersedes`.
    pub added: Vec<String>,
    /// The OLD slugs whose ledger gained a `superseded` event.
    pub logged: Vec<String>,
}

impl Superseded {
    /// Whether anything changed.
    pub fn changed(&self) -> bool {
        !self.added.is_empty() || !self.logged.is_empty()
    }
}

/// Mark `old` lessons as superseded by `new`, holding the bank's lock.
pub fn supersede(
    root: &std::path::Path,
    old: &[String],
    new: &str,
    stamp: &Stamp,
) -> Result<Superseded, CurateError> {
    locked(root, || supersede_locked(root, old, new, stamp))
}

fn supersede_locked(
    root: &std::path::Path,
    old: &[String],
    new: &str,
    stamp: &Stamp,
) -> Result<Superseded, CurateError> {
    let bank = crate::lint::load_with(root, &Overlay::new(), stamp.at)?;
    let mut olds: Vec<&str> = Vec::new();
    for slug in old {
        if !olds.contains(&slug.as_str()) {
            olds.push(slug);
        }
    }
    if olds.contains(&new) {
        return Err(CurateError::Refused(format!(
            "a lesson cannot supersede itself: `{new}` is both OLD and --by"
        )));
    }
    let new_index = find(&bank, new)?;
    let old_indexes = olds
        .iter()
        .map(|slug| find(&bank, slug))
        .collect::<Result<Vec<_>, _>>()?;
    let graph = graph(&bank);
    for slug in &olds {
        if let Some(path) = path_between(&graph, slug, new) {
            return Err(CurateError::Refused(format!(
                "`{new}` cannot supersede `{slug}`: `{slug}` already supersedes `{new}` ({}), so that would make a cycle",
                path.join(" -> ")
            )));
        }
    }

    let doc = &bank.documents[new_index];
    let listed: Vec<&str> = lesson_of(doc)
        .supersedes
        .iter()
        .map(|s| s.value.as_str())
        .collect();
    let added: Vec<String> = olds
        .iter()
        .filter(|s| !listed.contains(s))
        .map(|s| s.to_string())
        .collect();
    let added_refs: Vec<&str> = added.iter().map(String::as_str).collect();
    let fm = frontmatter(doc)?;
    let edit = fm
        .add_supersedes(&added_refs)
        .map_err(|e| super::uneditable(doc, e))?;
    let new_doc = match &edit {
        Some(edit) => Some(edited(doc, std::slice::from_ref(edit), |before, after| {
            let mut expected: Vec<&str> =
                before.supersedes.iter().map(|s| s.value.as_str()).collect();
            expected.extend(&added_refs);
            let got: Vec<&str> = after.supersedes.iter().map(|s| s.value.as_str()).collect();
            if got != expected {
                return Some(format!("`supersedes` reads {got:?}, not {expected:?}"));
            }
            (json_without(before, &["supersedes"]) != json_without(after, &["supersedes"]))
                .then(|| "a field other than `supersedes` changed".into())
        })?),
        None => None,
    };

    // a broken index template stops here, before anything is written
    crate::index_md::render(&bank)?;
    // every target is checked before the first write: a refused one writes nothing
    let logs: Vec<std::path::PathBuf> = olds
        .iter()
        .map(|slug| crate::ledger::path(root, slug))
        .collect();
    let index_path = bank.index_path();
    crate::edit::check_targets(
        root,
        logs.iter()
            .map(|p| p.as_path())
            .chain([doc.source.path.as_path(), index_path.as_path()]),
    )?;
    let mut logged = Vec::new();
    for (slug, &i) in olds.iter().zip(&old_indexes) {
        let mut ledger = Ledger::read(root, slug)?;
        let recorded = ledger.entries.iter().any(|e| {
            matches!(&e.event.kind, EventKind::Superseded { superseded_by } if superseded_by == new)
        });
        if recorded {
            continue;
        }
        let kind = EventKind::Superseded {
            superseded_by: new.to_string(),
        };
        let events = with_import(&ledger, lesson_of(&bank.documents[i]), stamp, kind);
        ledger.append(root, &events)?;
        logged.push(slug.to_string());
    }
    let path = doc.source.path.clone();
    if let Some(new_doc) = new_doc {
        crate::edit::write_atomic(root, &path, new_doc.source.text.as_bytes())?;
    }
    if !added.is_empty() {
        // supersession changed: statuses in `_index.md` come from a fresh load
        let bank = crate::lint::load_with(root, &Overlay::new(), stamp.at)?;
        crate::index_md::refresh(&bank)?;
    } else {
        crate::index_md::refresh(&bank)?;
    }
    Ok(Superseded {
        path,
        added,
        logged,
    })
}

/// slug -> the slugs it supersedes (self-references left out).
fn graph(bank: &Bank) -> HashMap<&str, Vec<&str>> {
    bank.lessons()
        .map(|(_, l)| {
            let targets = l
                .supersedes
                .iter()
                .map(|s| s.value.as_str())
                .filter(|s| *s != l.slug.value)
                .collect();
            (l.slug.value.as_str(), targets)
        })
        .collect()
}

/// A shortest chain of `supersedes` from `from` to `to`, both included.
fn path_between(graph: &HashMap<&str, Vec<&str>>, from: &str, to: &str) -> Option<Vec<String>> {
    let mut parent: HashMap<&str, &str> = HashMap::new();
    let mut seen: HashSet<&str> = HashSet::from([from]);
    let mut queue = VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        for &w in graph.get(v).map_or(&[][..], Vec::as_slice) {
            if !seen.insert(w) {
                continue;
            }
            parent.insert(w, v);
            if w == to {
                let mut path = vec![w.to_string()];
                let mut at = w;
                while let Some(&p) = parent.get(at) {
                    path.push(p.to_string());
                    at = p;
                }
                path.reverse();
                return Some(path);
            }
            queue.push_back(w);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_chain_that_would_close_a_cycle() {
        let graph = HashMap::from([("a", vec!["b"]), ("b", vec!["c"]), ("c", vec![])]);
        assert_eq!(
            path_between(&graph, "a", "c"),
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        assert_eq!(path_between(&graph, "c", "a"), None);
    }
}
