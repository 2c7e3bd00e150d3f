//! `invalid-supersedes-slug` (S015).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lesson::slug_problem;
use crate::lint::schema_walk::{excerpt, slug_help, FrontmatterView};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// A `supersedes` entry is not a valid slug.
    ///
    /// ## What it does
    /// Reports each entry of `supersedes` that does not match the slug pattern
    /// `^[a-z][a-z0-9-]*[a-z0-9]$`, and says what is wrong with it.
    ///
    /// ## Why is this bad?
    /// `supersedes` cites other lessons by slug. An entry that cannot be a slug names no lesson,
    /// so the lesson it meant to retire stays in retrieval.
    ///
    /// ## Example
    /// ```yaml
    /// supersedes: [Retry_On_429]   # retry-on-429
    /// ```
    pub static RULE = {
        code: "S015",
        name: "invalid-supersedes-slug",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(fm) = FrontmatterView::of(ctx) else {
        return;
    };
    for (i, item) in fm.items(fm.root, "supersedes") {
        let Some(slug) = fm.string(item) else {
            continue;
        };
        let Some(problem) = slug_problem(slug) else {
            continue;
        };
        let help = slug_help(slug);
        out.push(
            Diagnostic::new(
                &RULE,
                fm.source(),
                fm.span(item),
                format!(
                    "invalid slug `{}` in `supersedes[{i}]`: {problem}",
                    excerpt(slug)
                ),
            )
            .with_help(help),
        );
    }
}
