//! `misspelled-field` (S019).

use crate::declare_rule;
use crate::diagnostic::{Diagnostic, Edit, Fix};
use crate::lint::schema_walk::FrontmatterView;
use crate::lint::{Check, FileContext};

declare_rule! {
    /// An unknown field looks like a misspelling of a standard one.
    ///
    /// ## What it does
    /// Reports a key that the schema does not allow but that is close to a key allowed at the
    /// same place (`supercedes`, `expire_at`, `sucess_count`, `tag`, `descripton`, `successCount`)
    /// when that key is not already set. The fix renames the key. When the intended key is
    /// already set, the stray key is an `unknown-field` instead.
    ///
    /// ## Why is this bad?
    /// A misspelled field is silently ignored: the lesson supersedes nothing, never expires, or
    /// has no tags, and nothing says so.
    ///
    /// ## Example
    /// ```yaml
    /// supercedes: [retry-aggressively-on-embedding-rate-limit]   # supersedes
    /// ```
    pub static RULE = {
        code: "S019",
        name: "misspelled-field",
        level: Warning,
        fixable: true,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(fm) = FrontmatterView::of(ctx) else {
        return;
    };
    for object in fm.objects() {
        for unknown in fm.unknown_keys(object) {
            let (Some(name), Some(correct)) = (unknown.name, unknown.correction) else {
                continue;
            };
            let span = fm.span(unknown.key);
            let mut d = Diagnostic::new(
                &RULE,
                fm.source(),
                span.clone(),
                format!(
                    "unknown field `{}`, probably a misspelling of `{correct}`",
                    object.field(&name)
                ),
            );
            if fm.yaml.resolve(unknown.key) == unknown.key {
                d = d.with_fix(Fix::safe(
                    format!("rename `{name}` to `{correct}`"),
                    vec![Edit::replace(span, correct)],
                ));
            }
            out.push(d);
        }
    }
}
