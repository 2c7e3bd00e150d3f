//! `lesson-rewritten` (G006), reported by `lesson lint --base` (`crate::pr`).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// An existing lesson's body or trigger was rewritten.
    ///
    /// ## What it does
    /// With `lesson lint --base REV`, compares each lesson that exists in both versions: a
    /// change to its body (everything after the frontmatter) or to its `trigger` (description,
    /// tags, targets) is reported for review, at the first changed body line or at the
    /// trigger in the head version. Counts, evidence, `supersedes` and `expires_at` change
    /// through `lesson record`, `lesson supersede` and `lesson add` and are not rewrites.
    ///
    /// ## Why is this bad?
    /// A lesson's counts were earned by the advice it gave when they were recorded. Rewriting
    /// that advice in place keeps the counts but changes what they vouch for; AIP-11 asks for an
    /// explicit supersession instead: a new lesson with `supersedes: [old-slug]`. A typo fix is
    /// fine: suppress the warning in the lesson (`metadata.lesson.allow: [G006]`) or let the
    /// reviewer accept it.
    ///
    /// ## Example
    /// ```diff
    /// -Retry with exponential backoff and jitter.
    /// +Retry immediately, three times.
    /// ```
    pub static RULE = {
        code: "G006",
        name: "lesson-rewritten",
        level: Warning,
        fixable: false,
        check: Check::Base,
    }
}
