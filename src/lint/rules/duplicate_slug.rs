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
    /// Reports the slug of every lesson whose slug an earlier file (in path order) already uses,
    /// naming that first file.
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
        // in path order: the first file with a slug has it, the later ones are reported
        let mut first: Vec<(&str, &Document)> = Vec::new();
        for &(_, i) in group {
            let doc = &bank.documents[i as usize];
            let Some(lesson) = doc.lesson.as_deref() else {
                continue;
            };
            let slug = lesson.slug.value.as_str();
            match first.iter().find(|(s, _)| *s == slug) {
                None => first.push((slug, doc)),
                Some(&(_, original)) => report(out, doc, lesson, original),
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
            "`{}` has it first; give one of the two lessons another slug and file name",
            original.source.path.display()
        )),
    );
}
