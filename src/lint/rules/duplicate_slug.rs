//! `duplicate-slug` (B002).

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::document::Document;
use crate::lesson::Lesson;
use crate::lint::Check;

declare_rule! {
    /// Two lessons share a slug.
    ///
    /// ## What it does
    /// Reports the slug of every lesson whose slug another file already holds, naming that file.
    /// The file named after the slug (`<slug>.md`) holds it; when none or several are, the first
    /// in path order does. So a copy (`cite-sources-copy.md`) is reported, not the original,
    /// wherever the copy sorts.
    ///
    /// ## Why is this bad?
    /// A slug is a lesson's identity: `supersedes`, ledgers and retrieval resolve it to one
    /// lesson, so all but one of the lessons sharing it are unreachable, and which one wins
    /// depends on the tool (AIP-11 `slug_collision`).
    ///
    /// ## Example
    /// ```text
    /// # file: research/cite-sources.md
    /// slug: cite-sources
    /// # file: writing/cite-sources.md
    /// slug: cite-sources
    /// ```
    pub static RULE = {
        code: "B002",
        name: "duplicate-slug",
        level: Error,
        fixable: false,
        check: Check::Bank(check),
    }
}

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    // the lessons by the hash of their slug (kept in each document), then by position: equal
    // slugs have equal hashes, so only lessons that share a hash have their slugs compared
    let mut keyed: Vec<(u64, u32)> = bank
        .documents
        .iter()
        .enumerate()
        .filter(|(_, doc)| doc.lesson.is_some())
        .map(|(i, doc)| (doc.keys().slug, i as u32))
        .collect();
    keyed.sort_unstable();
    for group in keyed.chunk_by(|a, b| a.0 == b.0).filter(|g| g.len() > 1) {
        // one hash may hold several slugs: each slug's files, in path order
        let mut slugs: Vec<(&str, Vec<(&Document, &Lesson)>)> = Vec::new();
        for &(_, i) in group {
            let doc = &bank.documents[i as usize];
            let Some(lesson) = doc.lesson.as_deref() else {
                continue;
            };
            let slug = lesson.slug.value.as_str();
            match slugs.iter_mut().find(|(s, _)| *s == slug) {
                None => slugs.push((slug, vec![(doc, lesson)])),
                Some((_, files)) => files.push((doc, lesson)),
            }
        }
        for (slug, files) in slugs.iter().filter(|(_, files)| files.len() > 1) {
            // the file named after the slug holds it, when exactly one is; else the first
            let named: Vec<usize> = (0..files.len())
                .filter(|&j| files[j].0.stem() == Some(slug))
                .collect();
            let owner = if named.len() == 1 { named[0] } else { 0 };
            for (j, &(doc, lesson)) in files.iter().enumerate() {
                if j != owner {
                    report(out, doc, lesson, files[owner].0);
                }
            }
        }
    }
}

fn report(out: &mut Vec<Diagnostic>, doc: &Document, lesson: &Lesson, original: &Document) {
    let slug = lesson.slug.value.as_str();
    out.push(
        Diagnostic::new(
            &RULE,
            &doc.source,
            lesson.slug.span.clone(),
            format!("slug `{slug}` is already used"),
        )
        .with_help(format!(
            "`{}` holds it; give one of the two lessons another slug and file name",
            original.source.path.display()
        )),
    );
}
