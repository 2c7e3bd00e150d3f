//! `invalid-tag` (S008).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::schema_walk::{excerpt, tag_problem, FrontmatterView};
use crate::lint::{Check, FileContext};

use crate::lesson::MAX_TAGS;

declare_rule! {
    /// A trigger tag does not match the tag pattern, or there are too many tags.
    ///
    /// ## What it does
    /// Reports each entry of `trigger.tags` that does not match `^[a-z][a-z0-9-]*$` (saying what
    /// is wrong), and a `tags` list longer than 12.
    ///
    /// ## Why is this bad?
    /// Tags are matched literally against a request's keywords: `Research` and `research` are
    /// different tags, so a mis-cased tag never matches. A long tag list over-broadens the
    /// trigger; three tags are usually enough.
    ///
    /// ## Example
    /// ```yaml
    /// trigger:
    ///   description: Summarising external research.
    ///   tags: [Research, rate_limit]   # research, rate-limit
    /// ```
    pub static RULE = {
        code: "S008",
        name: "invalid-tag",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(fm) = FrontmatterView::of(ctx) else {
        return;
    };
    let Some((_, trigger)) = fm.trigger() else {
        return;
    };
    let tags = fm.items(trigger, "tags");
    for &(i, item) in &tags {
        let Some(tag) = fm.string(item) else {
            continue;
        };
        if let Some(problem) = tag_problem(tag) {
            out.push(
                Diagnostic::new(
                    &RULE,
                    fm.source(),
                    fm.span(item),
                    format!(
                        "invalid tag `{}` in `trigger.tags[{i}]`: {problem}",
                        excerpt(tag)
                    ),
                )
                .with_help("a tag is lowercase letters, digits and `-`, starting with a letter"),
            );
        }
    }
    if tags.len() > MAX_TAGS {
        if let Some((key, _)) = fm.get(trigger, "tags") {
            out.push(
                Diagnostic::new(
                    &RULE,
                    fm.source(),
                    fm.span(key),
                    format!("`trigger.tags` has {} tags, at most {MAX_TAGS}", tags.len()),
                )
                .with_help(
                    "keep the tags that a matching request would use; three are usually enough",
                ),
            );
        }
    }
}
