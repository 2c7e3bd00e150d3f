//! `slug-changed` (G004), reported by `lesson lint --base` (`crate::pr`).

use crate::declare_rule;
use crate::lint::Check;

declare_rule! {
    /// A lesson was renamed to a new slug without superseding the old one.
    ///
    /// ## What it does
    /// With `lesson lint --base REV`, compares the slug of each lesson that exists in both
    /// versions (at the same path, or moved: git's rename detection pairs them). A moved file
    /// keeps its slug (a move to `_archive/` or to a folder does); a new slug is allowed only
    /// when the head lesson lists the old slug in `supersedes`. The finding is at the head's
    /// `slug`.
    ///
    /// ## Why is this bad?
    /// The slug is the lesson's identity: its ledger (`_log/<slug>.jsonl`), the `supersedes`
    /// lists of other lessons and the runtimes that recorded outcomes against it all name it.
    /// A silent rename orphans all of them; a supersession says what replaced what.
    ///
    /// ## Example
    /// `retry-with-jitter.md` moved to `retry-with-backoff.md`, with
    /// ```yaml
    /// slug: retry-with-backoff   # no `supersedes: [retry-with-jitter]`
    /// ```
    pub static RULE = {
        code: "G004",
        name: "slug-changed",
        level: Error,
        fixable: false,
        check: Check::Base,
    }
}
