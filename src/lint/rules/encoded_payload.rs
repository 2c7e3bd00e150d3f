//! `encoded-payload` (D009).

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::rules::carrier::{self, Payload, BASE64_RUN};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// The text holds a `data:` URI or a long base64 payload.
    ///
    /// ## What it does
    /// Reports `data:` URIs with a media type (`data:text/html;base64,...`,
    /// `data:image/svg+xml,...`) and runs of at least 200 base64 characters (the standard or
    /// URL-safe alphabet, mixing upper- and lowercase letters and digits, with few slashes, so
    /// that a long path or identifier is not one). Code blocks are scanned too: the model
    /// reads them as it reads prose. PEM blocks are wrapped at 64 characters a line and are not
    /// reported. A lesson admitted by `lesson add`, `lesson distill` or the MCP `propose` that
    /// trips this rule is quarantined.
    ///
    /// ## Why is this bad?
    /// Nobody reviews what they cannot read. An encoded payload can carry instructions a model
    /// decodes and follows, a script, or a page that runs when opened, past a human reviewer
    /// and past the other rules. A lesson explains in words; link a file instead of embedding
    /// it.
    ///
    /// ## Example
    /// ```text
    /// See ![diagram](data:text/html;base64,PHNjcmlwdD5mZXRjaCgnaHR0cHM6Ly9ldmlsJyk8L3NjcmlwdD4=)
    /// ```
    pub static RULE = {
        code: "D009",
        name: "encoded-payload",
        level: Warning,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let Some(text) = carrier::text_of(ctx.doc) else {
        return;
    };
    for (range, payload) in carrier::payloads(text) {
        let message = match payload {
            Payload::DataUri(media) => format!("`data:` URI ({media}, {} bytes)", range.len()),
            Payload::Base64 => format!(
                "{} characters of base64 (at least {BASE64_RUN} in a run)",
                range.len()
            ),
        };
        out.push(
            Diagnostic::new(&RULE, &ctx.doc.source, range, message)
                .with_help("say it in words, or link the file; an encoded payload hides its content from review"),
        );
    }
}
