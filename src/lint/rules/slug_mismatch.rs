//! `slug-mismatch` (B001).

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::Check;

declare_rule! {
    /// A lesson's `slug` differs from its file name.
    ///
    /// ## What it does
    /// Compares `slug` with the file name without `.md` and reports a difference at the slug.
    ///
    /// ## Why is this bad?
    /// AIP-11 makes the slug the file name: `supersedes`, ledgers (`_log/<slug>.jsonl`) and
    /// archives (`_archive/<slug>.md`) find a lesson by it. A lesson whose file is named otherwise
    /// is found by one tool and lost by the next.
    ///
    /// ## Example
    /// ```text
    /// # file: verify-page-id.md
    /// slug: verify-page-id-before-load-more
    /// ```
    pub static RULE = {
        code: "B001",
        name: "slug-mismatch",
        level: Error,
        fixable: false,
        check: Check::Bank(check),
    }
}

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    for doc in &bank.documents {
        // the comparison was made when the file was parsed
        if doc.keys().slug_is_stem {
            continue;
        }
        let Some(lesson) = doc.lesson.as_deref() else {
            continue;
        };
        let slug = &lesson.slug.value;
        let Some(stem) = doc.stem() else {
            // a name that is not UTF-8 is never a slug: still a mismatch
            let Some(name) = doc.source.path.file_name() else {
                continue;
            };
            out.push(
                Diagnostic::new(
                    &RULE,
                    &doc.source,
                    lesson.slug.span.clone(),
                    format!(
                        "slug `{slug}` differs from the file name `{}`, which is not valid UTF-8",
                        name.to_string_lossy()
                    ),
                )
                .with_help(format!("rename the file to `{slug}.md`")),
            );
            continue;
        };
        if slug == stem {
            continue;
        }
        out.push(
            Diagnostic::new(
                &RULE,
                &doc.source,
                lesson.slug.span.clone(),
                format!("slug `{slug}` differs from the file name `{stem}.md`"),
            )
            .with_help(format!(
                "rename the file to `{slug}.md`, or change the slug to `{stem}`"
            )),
        );
    }
}
