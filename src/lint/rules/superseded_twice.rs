//! `superseded-twice` (B006).

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::Check;

declare_rule! {
    /// Two or more lessons supersede the same lesson.
    ///
    /// ## What it does
    /// Reports, at its slug, a lesson named in the `supersedes` of two or more other lessons,
    /// and names them.
    ///
    /// ## Why is this bad?
    /// Each superseding lesson claims to be the replacement. Two replacements of one lesson
    /// usually overlap each other: a duplicate that dedup missed, or a newer lesson that should
    /// supersede the older replacement rather than the lesson both replaced.
    ///
    /// ## Example
    /// ```text
    /// # file: batch-embeddings.md
    /// supersedes: [retry-on-429]
    /// # file: backoff-embeddings.md
    /// supersedes: [retry-on-429]
    /// ```
    pub static RULE = {
        code: "B006",
        name: "superseded-twice",
        level: Warning,
        fixable: false,
        check: Check::Bank(check),
    }
}

/// At most this many superseding slugs are spelled out.
const SHOWN: usize = 5;

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    if !bank.has_lesson_superseded_twice() {
        return;
    }
    for (doc, lesson) in bank.lessons() {
        let by = bank.superseded_by(&lesson.slug.value);
        if by.len() < 2 {
            continue;
        }
        let mut names = by
            .iter()
            .take(SHOWN)
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(", ");
        if by.len() > SHOWN {
            names.push_str(&format!(" and {} more", by.len() - SHOWN));
        }
        out.push(
            Diagnostic::new(
                &RULE,
                &doc.source,
                lesson.slug.span.clone(),
                format!("superseded by {} lessons: {names}", by.len()),
            )
            .with_help(
                "merge the replacements, or chain them: the newer replacement supersedes the older one instead of this lesson",
            ),
        );
    }
}
