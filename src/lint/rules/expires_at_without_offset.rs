//! `expires-at-without-offset` (S017).

use crate::declare_rule;
use crate::diagnostic::{Diagnostic, Edit, Fix};
use crate::lesson::Expiry;
use crate::lint::schema_walk::FrontmatterView;
use crate::lint::{Check, FileContext};

/// What a bare date is read as: midnight UTC.
const MIDNIGHT_UTC: &str = "T00:00:00Z";

declare_rule! {
    /// `expires_at` is a date without a time.
    ///
    /// ## What it does
    /// Reports an `expires_at` written as a plain date (`2026-10-01`). lesson reads it as
    /// midnight UTC; the fix writes that instant out (`2026-10-01T00:00:00Z`), keeping any quotes.
    ///
    /// ## Why is this bad?
    /// The schema's format is an RFC 3339 date-time. Other runtimes may reject a bare date or
    /// read it in their local time zone, so the lesson expires at a different instant on each.
    ///
    /// ## Example
    /// ```yaml
    /// expires_at: 2026-10-01   # 2026-10-01T00:00:00Z
    /// ```
    pub static RULE = {
        code: "S017",
        name: "expires-at-without-offset",
        level: Warning,
        fixable: true,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some((fm, key, value, date)) = FrontmatterView::string_field(ctx, "expires_at") else {
        return;
    };
    if !Expiry::parse(date).is_some_and(|e| e.date_only) {
        return;
    }
    let mut d = Diagnostic::new(
        &RULE,
        fm.source(),
        fm.value_span(key, value),
        format!("`expires_at` `{date}` has no time, read as {date}{MIDNIGHT_UTC}, midnight UTC"),
    );
    if let Some(range) = fm.literal_range(value, date) {
        d = d.with_fix(Fix::safe(
            format!("write `{date}{MIDNIGHT_UTC}`"),
            vec![Edit::insert(range.end, MIDNIGHT_UTC)],
        ));
    }
    out.push(d);
}
