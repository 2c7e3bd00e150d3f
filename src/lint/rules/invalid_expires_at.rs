//! `invalid-expires-at` (S016).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lesson::Expiry;
use crate::lint::schema_walk::{excerpt, FrontmatterView};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// `expires_at` is not an RFC 3339 date-time.
    ///
    /// ## What it does
    /// Reports an `expires_at` that is neither an RFC 3339 date-time with an offset
    /// (`2026-10-01T00:00:00Z`) nor a plain date (`2026-10-01`, see
    /// `expires-at-without-offset`). A date-time without an offset (`2026-10-01T00:00:00`) is
    /// reported too: it names a different instant in every time zone.
    ///
    /// ## Why is this bad?
    /// Past `expires_at` retrieval treats the lesson as absent. A value no runtime can read
    /// means the lesson never expires, or expires at a different time on each host.
    ///
    /// ## Example
    /// ```yaml
    /// expires_at: 2026-10-01T00:00:00   # 2026-10-01T00:00:00Z
    /// ```
    pub static RULE = {
        code: "S016",
        name: "invalid-expires-at",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some((fm, key, value, text)) = FrontmatterView::string_field(ctx, "expires_at") else {
        return;
    };
    if Expiry::parse(text).is_some() {
        return;
    }
    let span = fm.value_span(key, value);
    let d = if text.parse::<jiff::civil::DateTime>().is_ok() {
        Diagnostic::new(
            &RULE,
            fm.source(),
            span,
            format!(
                "`expires_at` `{}` has no UTC offset, so its instant is ambiguous",
                excerpt(text)
            ),
        )
        .with_help(format!(
            "append `Z` for UTC (`{}Z`) or an offset such as `+02:00`",
            text.trim()
        ))
    } else {
        Diagnostic::new(
            &RULE,
            fm.source(),
            span,
            format!(
                "invalid `expires_at` `{}`, expected an RFC 3339 date-time such as `2026-10-01T00:00:00Z`",
                excerpt(text)
            ),
        )
    };
    out.push(d);
}
