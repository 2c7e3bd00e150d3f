//! `invalid-slug` (S006).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lesson::slug_problem;
use crate::lint::schema_walk::{excerpt, slug_help, FrontmatterView};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// `slug` does not match the slug pattern.
    ///
    /// ## What it does
    /// Reports a `slug` that does not match `^[a-z][a-z0-9-]*[a-z0-9]$` or is not 2 to 80
    /// characters long, and says what is wrong: an uppercase letter and its column, an
    /// underscore, a leading digit, a trailing dash, the length.
    ///
    /// ## Why is this bad?
    /// The slug is the lesson's id and its file name; `supersedes` cites it. A slug such as
    /// `../x` or `Fix-Login` breaks file names, lookups and links across runtimes.
    ///
    /// ## Example
    /// ```yaml
    /// slug: Verify_Page_ID   # verify-page-id
    /// ```
    pub static RULE = {
        code: "S006",
        name: "invalid-slug",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some((fm, key, value, slug)) = FrontmatterView::string_field(ctx, "slug") else {
        return;
    };
    let Some(problem) = slug_problem(slug) else {
        return;
    };
    let help = slug_help(slug);
    out.push(
        Diagnostic::new(
            &RULE,
            fm.source(),
            fm.value_span(key, value),
            format!("invalid slug `{}`: {problem}", excerpt(slug)),
        )
        .with_help(help),
    );
}
