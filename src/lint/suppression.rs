//! Suppressions: `metadata.lesson.allow: [CODE, ...]` in the frontmatter and
//! `<!-- lesson-allow CODE[, CODE]: reason -->` in the body. Both apply to the whole file.

use std::ops::Range;

use crate::diagnostic::Diagnostic;
use crate::document::Document;
use crate::lint::{find_rule, rules};
use crate::yaml::Scalar;

/// One suppressed code and where it was written.
pub(crate) struct Allow {
    /// The code or name as written.
    written: String,
    /// The rule code it resolves to, if any.
    code: Option<&'static str>,
    range: Range<usize>,
    used: bool,
}

/// The suppressions a document declares (read from its tree and body, so taken before a lint
/// pass drops those).
pub(crate) fn allows(doc: &Document) -> Vec<Allow> {
    let mut out = Vec::new();
    let mut push = |written: &str, range: Range<usize>| {
        out.push(Allow {
            written: written.to_string(),
            code: find_rule(written).map(|r| r.code),
            range,
            used: false,
        });
    };
    if let (Some(yaml), Some(root)) = (doc.yaml.as_ref(), doc.root_map()) {
        let items = yaml
            .get(root, "metadata")
            .and_then(|(_, m)| yaml.get(m, "lesson"))
            .and_then(|(_, l)| yaml.get(l, "allow"))
            .and_then(|(_, a)| yaml.seq(a));
        for &item in items.unwrap_or_default() {
            if let Some(Scalar::Str(code)) = yaml.scalar(item) {
                push(code, yaml.node(item).span.clone());
            }
        }
    }
    if let Some(body) = &doc.body {
        let text = &doc.source.text;
        for comment in &body.comments {
            // `<!-->` and `<!--->` are comments too, with no room for an inner text
            let Some(inner) = text.get(comment.start + 4..comment.end - 3) else {
                continue;
            };
            let Some(rest) = inner.trim_start().strip_prefix("lesson-allow") else {
                continue;
            };
            let codes = rest.split_once(':').map_or(rest, |(codes, _reason)| codes);
            let codes_start =
                comment.start + 4 + (inner.len() - inner.trim_start().len()) + "lesson-allow".len();
            let mut offset = codes_start;
            for part in codes.split(',') {
                let code = part.trim();
                let lead = part.len() - part.trim_start().len();
                if !code.is_empty() {
                    push(code, offset + lead..offset + lead + code.len());
                }
                offset += part.len() + 1;
            }
        }
    }
    out
}

/// Whether `allows` suppresses `code`.
pub(crate) fn suppresses(allows: &[Allow], code: &str) -> bool {
    allows.iter().any(|a| a.code == Some(code))
}

/// Drop suppressed diagnostics and report unused or unknown suppressions.
pub(crate) fn apply(
    doc: &Document,
    mut allows: Vec<Allow>,
    diagnostics: Vec<Diagnostic>,
) -> Vec<Diagnostic> {
    if allows.is_empty() {
        return diagnostics;
    }
    let mut kept: Vec<Diagnostic> = diagnostics
        .into_iter()
        .filter(|d| {
            let mut suppressed = false;
            for a in allows.iter_mut().filter(|a| a.code == Some(d.code)) {
                a.used = true;
                suppressed = true;
            }
            !suppressed
        })
        .collect();
    let unused_allowed = allows
        .iter()
        .any(|a| a.code == Some(rules::unused_suppression::RULE.code));
    if !unused_allowed {
        // a rule only `lint --base` runs is never found by a plain lint: its suppression waits
        let base_only = |a: &Allow| {
            a.code
                .and_then(find_rule)
                .is_some_and(|r| matches!(r.check, crate::lint::Check::Base))
        };
        for a in allows.iter().filter(|a| !a.used && !base_only(a)) {
            let message = match a.code {
                Some(code) => {
                    format!("suppression of {code} is unused: no {code} finding in this file")
                }
                None => format!("`{}` is not a rule code or name", a.written),
            };
            kept.push(
                Diagnostic::new(
                    &rules::unused_suppression::RULE,
                    &doc.source,
                    a.range.clone(),
                    message,
                )
                .with_help("remove it; `lesson rule --all` lists the rules"),
            );
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Source;

    #[test]
    fn empty_comments_are_not_suppressions() {
        for body in ["<!-->\n", "<!--->\n", "x <!--> y\n"] {
            let text = format!("---\nslug: a\n---\n{body}");
            let doc = Document::parse(Source::new("a.md", text), None);
            assert!(allows(&doc).is_empty(), "{body:?}");
        }
    }
}
