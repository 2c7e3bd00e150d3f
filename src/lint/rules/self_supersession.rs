//! `self-supersession` (B004).

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::Check;

declare_rule! {
    /// A lesson supersedes itself.
    ///
    /// ## What it does
    /// Reports an entry of `supersedes` that is the lesson's own slug.
    ///
    /// ## Why is this bad?
    /// `supersedes` names older lessons that this one replaces. A lesson cannot replace itself;
    /// the entry is usually a copy-paste slip for the slug of the lesson it was meant to retire,
    /// which therefore stays active.
    ///
    /// ## Example
    /// ```text
    /// slug: prefer-batch-embed
    /// supersedes: [prefer-batch-embed]
    /// ```
    pub static RULE = {
        code: "B004",
        name: "self-supersession",
        level: Error,
        fixable: false,
        check: Check::Bank(check),
    }
}

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    for (doc, lesson) in bank.lessons() {
        for entry in lesson
            .supersedes
            .iter()
            .filter(|e| e.value == lesson.slug.value)
        {
            out.push(
                Diagnostic::new(
                    &RULE,
                    &doc.source,
                    entry.span.clone(),
                    format!("lesson `{}` supersedes itself", entry.value),
                )
                .with_help("name the older lesson this one replaces, or remove the entry"),
            );
        }
    }
}
