//! `private-key-placeholder` (D006).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::rules::secret::{private_key_blocks, KeyBody};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// A private key block whose body is only a placeholder.
    ///
    /// ## What it does
    /// Reports a `-----BEGIN ... PRIVATE KEY-----` block whose body is an explicit placeholder
    /// and nothing else: `...`, `REDACTED`, `<your key here>`, `[snip]`. A block with anything
    /// else in its body, however short, is a leaked key (D005, an error): a truncated key
    /// still leaks, and `MIIE...REDACTED` still shows its start.
    ///
    /// ## Why is this bad?
    /// A placeholder block is how a lesson shows where a key goes, and how a real key looks
    /// right after someone started redacting it: check that no key material is left in the
    /// file, or in its git history. Writing the armour lines in prose, without a block, says
    /// the same without the finding.
    ///
    /// ## Example
    /// ```text
    /// -----BEGIN OPENSSH PRIVATE KEY-----
    /// REDACTED
    /// -----END OPENSSH PRIVATE KEY-----
    /// ```
    pub static RULE = {
        code: "D006",
        name: "private-key-placeholder",
        level: Warning,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let doc = ctx.doc;
    for (range, body) in private_key_blocks(&doc.source.text) {
        if body == KeyBody::Placeholder {
            out.push(
                Diagnostic::new(
                    &RULE,
                    &doc.source,
                    range,
                    "private key block with a placeholder body",
                )
                .with_help("check that no key material is left in the file or its git history"),
            );
        }
    }
}
