//! `duplicate-slug` (B002).

use foldhash::{HashMap, HashMapExt};

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::document::Document;
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
    let mut first: HashMap<&str, &Document> = HashMap::with_capacity(bank.documents.len());
    for (doc, lesson) in bank.lessons() {
        let slug = lesson.slug.value.as_str();
        let Some(original) = first.get(slug) else {
            first.insert(slug, doc);
            continue;
        };
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
}
