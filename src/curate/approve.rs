//! `lesson review --approve SLUG`: a human releases a lesson from quarantine. The key
//! `metadata.lesson.quarantine` is deleted (a span edit: nothing else of the file changes) and
//! the lesson's ledger gains an `approved` event naming who approved it and the rules it had
//! tripped: ledger first, then the file, replaced atomically, then `_index.md`, all under the
//! bank's lock.

use std::path::{Path, PathBuf};

use super::{edited, find, frontmatter, json_without, lesson_of, locked};
use super::{with_import, CurateError, Stamp};
use crate::bank::Overlay;
use crate::ledger::{EventKind, Ledger};

/// What an approval did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    /// The lesson's slug.
    pub slug: String,
    /// Its file.
    pub path: PathBuf,
    /// The rules it had been quarantined for.
    pub rules: Vec<String>,
}

/// Release the lesson `slug` of the bank at `root` from quarantine, holding the bank's lock.
/// Refused (nothing written) when it is not in quarantine.
pub fn approve(root: &Path, slug: &str, stamp: &Stamp) -> Result<Approved, CurateError> {
    locked(root, || approve_locked(root, slug, stamp))
}

fn approve_locked(root: &Path, slug: &str, stamp: &Stamp) -> Result<Approved, CurateError> {
    let bank = crate::lint::load_with(root, &Overlay::new(), stamp.at)?;
    let i = find(&bank, slug)?;
    let doc = &bank.documents[i];
    let Some(rules) = lesson_of(doc).quarantine.clone() else {
        return Err(CurateError::Refused(format!(
            "lesson `{slug}` is not in quarantine; `lesson review` lists the lessons that are"
        )));
    };
    let edit = frontmatter(doc)?
        .remove_quarantine()
        .map_err(|e| super::uneditable(doc, e))?
        .ok_or_else(|| {
            CurateError::Refused(format!(
                "lesson `{slug}`: `metadata.lesson.quarantine` could not be found to remove"
            ))
        })?;
    let new_doc = edited(doc, std::slice::from_ref(&edit), |before, after| {
        if after.quarantine.is_some() {
            return Some("the lesson is still in quarantine".into());
        }
        (json_without(before, &["quarantine"]) != json_without(after, &["quarantine"]))
            .then(|| "a field other than `metadata.lesson.quarantine` changed".into())
    })?;
    // the bank as it will be: `_index.md` is rendered before the first write, so a broken
    // template stops the approval with nothing written
    let mut after = bank;
    let path = after.documents[i].source.path.clone();
    let before = std::mem::replace(&mut after.documents[i], new_doc);
    let index = crate::index_md::render_parts(&after)?;
    let log = crate::ledger::path(root, slug);
    crate::edit::check_targets(
        root,
        [log.as_path(), path.as_path(), after.index_path().as_path()],
    )?;
    let mut ledger = Ledger::read(root, slug)?;
    let kind = EventKind::Approved {
        rules: rules.clone(),
    };
    let events = with_import(&ledger, lesson_of(&before), stamp, kind);
    ledger.append(root, &events)?;
    crate::edit::write_atomic(root, &path, after.documents[i].source.text.as_bytes())?;
    crate::index_md::write_if_changed(&after, &index)?;
    Ok(Approved {
        slug: slug.to_string(),
        path,
        rules,
    })
}
