//! `secret` (D005).

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::lint::{Check, FileContext};

declare_rule! {
    /// The file holds what looks like a credential.
    ///
    /// ## What it does
    /// Scans the whole file (frontmatter, evidence refs and notes, body) for AWS access key IDs
    /// and secret access keys, GitHub tokens, private key blocks, bearer tokens, Slack tokens,
    /// OpenAI and Anthropic API keys, and Google API keys. The finding names the kind of secret
    /// and points at it; it never repeats the value.
    ///
    /// ## Why is this bad?
    /// A lesson bank is shared through git and injected into prompts: a credential in a lesson
    /// leaks to every clone, every runtime and every model that reads it, and git history keeps
    /// it after the line is deleted. Revoke the credential, then remove it.
    ///
    /// ## Example
    /// ```text
    /// evidence:
    ///   - kind: run
    ///     ref: r_2026-04-22_8c1d4f
    ///     note: Retried with token ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx and it worked.
    /// ```
    pub static RULE = {
        code: "D005",
        name: "secret",
        level: Error,
        fixable: false,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let doc = ctx.doc;
    for (range, kind) in find_secrets(&doc.source.text) {
        out.push(
            Diagnostic::new(&RULE, &doc.source, range, format!("possible {kind}"))
                .with_help(
                    "revoke the credential, then remove it: git history keeps every version of a lesson",
                ),
        );
    }
}

/// One kind of secret: its name, a pattern (capture group 1, if any, is the secret itself) and
/// an optional check on the matched value.
struct Pattern {
    kind: &'static str,
    regex: Regex,
    plausible: fn(&str) -> bool,
}

fn pattern(kind: &'static str, regex: &str, plausible: fn(&str) -> bool) -> Pattern {
    Pattern {
        kind,
        regex: Regex::new(regex).expect("secret patterns compile"),
        plausible,
    }
}

fn any(_: &str) -> bool {
    true
}

/// Random-looking: a digit, or both upper- and lowercase letters, and not a placeholder. Prose
/// in kebab-case and placeholders such as `YOUR_TOKEN_HERE` or
/// `PERSONAL_ACCESS_TOKEN_FROM_STEP_1` are not.
fn random_looking(s: &str) -> bool {
    !placeholder(s)
        && (s.bytes().any(|b| b.is_ascii_digit())
            || (s.bytes().any(|b| b.is_ascii_uppercase())
                && s.bytes().any(|b| b.is_ascii_lowercase())))
}

/// Upper-case words joined by `_` or `-`, with at most a short number among them.
fn placeholder(s: &str) -> bool {
    let parts: Vec<&str> = s.split(['_', '-']).collect();
    parts.len() >= 2
        && parts.iter().all(|p| {
            (!p.is_empty() && p.bytes().all(|b| b.is_ascii_uppercase()))
                || (!p.is_empty() && p.len() <= 2 && p.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// Most specific first: where two patterns match overlapping text, the first one names it.
/// `(?-u:\b)` is an ASCII word boundary; a trailing `(?:[^...]|$)` stands in for a lookahead.
static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    vec![
        pattern(
            "AWS access key ID",
            r"(?-u:\b)((?:AKIA|ASIA)[0-9A-Z]{16})(?:[^0-9A-Za-z]|$)",
            any,
        ),
        pattern(
            "AWS secret access key",
            r#"(?i)aws_?secret_?access_?key["']?[ \t]*[:=][ \t]*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
            any,
        ),
        pattern(
            "GitHub personal access token",
            r"(?-u:\b)(ghp_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?:[^A-Za-z0-9_]|$)",
            any,
        ),
        pattern(
            "GitHub OAuth token",
            r"(?-u:\b)(gho_[A-Za-z0-9]{36,255})(?:[^A-Za-z0-9_]|$)",
            any,
        ),
        pattern(
            "GitHub App token",
            r"(?-u:\b)(gh[us]_[A-Za-z0-9]{36,255})(?:[^A-Za-z0-9_]|$)",
            any,
        ),
        pattern(
            "GitHub refresh token",
            r"(?-u:\b)(ghr_[A-Za-z0-9]{36,255})(?:[^A-Za-z0-9_]|$)",
            any,
        ),
        pattern(
            "Slack token",
            r"(?-u:\b)(xox[abposr]-[A-Za-z0-9-]{10,250})",
            random_looking,
        ),
        pattern(
            "Anthropic API key",
            r"(?-u:\b)(sk-ant-[A-Za-z0-9_-]{32,})",
            random_looking,
        ),
        pattern(
            "OpenAI API key",
            r"(?-u:\b)(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,})",
            random_looking,
        ),
        pattern(
            "Google API key",
            r"(?-u:\b)(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)",
            any,
        ),
        pattern(
            "bearer token",
            r"(?-u:\b)(?i:bearer)[ \t]+([A-Za-z0-9._~+/-]{20,}=*)",
            random_looking,
        ),
    ]
});

/// A private key's armour line.
static PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
        .expect("private key pattern compiles")
});

static PRIVATE_KEY_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
        .expect("private key end pattern compiles")
});

/// A PEM header line (`Proc-Type: 4,ENCRYPTED`) between the armour and the body.
static PEM_HEADER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z-]+: ").expect("PEM header pattern compiles"));

/// What the body of a private key block holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyBody {
    /// Anything but a placeholder: a key, or part of one (a truncated key still leaks).
    Material,
    /// Only an explicit placeholder: `...`, `REDACTED`, `<your key here>`.
    Placeholder,
}

/// Every private key block of `text` with a body (the armour named in prose, or a block with
/// an empty body, is none): its byte range, from `-----BEGIN` to the end of its `-----END`
/// line or, without one, of its body, and what the body holds. The body follows the armour
/// on the next lines (after PEM headers and a blank line), or after `\n` escapes in a quoted
/// string (a service account's JSON).
pub(crate) fn private_key_blocks(text: &str) -> Vec<(Range<usize>, KeyBody)> {
    let mut out: Vec<(Range<usize>, KeyBody)> = Vec::new();
    if !text.contains("-----BEGIN") {
        return out;
    }
    for m in PRIVATE_KEY.find_iter(text) {
        if out.last().is_some_and(|(r, _)| r.end > m.start()) {
            continue;
        }
        let line_start = text[..m.start()].rfind('\n').map_or(0, |i| i + 1);
        let before = text[line_start..m.start()].trim_end();
        let starts_a_line = before.chars().all(|c| !c.is_alphanumeric())
            || before.ends_with(['"', '\'', '=', ':', '|']);
        if !starts_a_line {
            continue;
        }
        let rest = &text[m.end()..];
        let after = rest.trim_start_matches([' ', '\t']);
        let skipped = rest.len() - after.len();
        let (lines, len) = if after.starts_with("\\n") || after.starts_with("\\r\\n") {
            escaped_body(after)
        } else if after.starts_with('\n') || after.starts_with("\r\n") {
            body_lines(after)
        } else {
            continue;
        };
        if let Some(kind) = classify(&lines) {
            out.push((m.start()..m.end() + skipped + len, kind));
        }
    }
    out
}

/// The body lines of a block whose armour ends its line (`text` starts with the line ending),
/// and the length of the block from there (through the `-----END` armour when there is one).
fn body_lines(text: &str) -> (Vec<&str>, usize) {
    let mut lines = Vec::new();
    let mut len = 0;
    let mut blank_skipped = false;
    let mut pos = text.find('\n').map_or(text.len(), |i| i + 1);
    while pos < text.len() {
        let end = text[pos..].find('\n').map_or(text.len(), |i| pos + i + 1);
        let raw = &text[pos..end];
        let line = raw
            .trim_end_matches(['\n', '\r'])
            .trim_start_matches([' ', '\t', '>']);
        if let Some(e) = PRIVATE_KEY_END.find(line) {
            lines.push(&line[..e.start()]);
            let armour_end = pos + (raw.len() - raw.trim_start_matches([' ', '\t', '>']).len());
            return (lines, armour_end + e.end());
        }
        let blank = line.trim().is_empty();
        if blank && lines.is_empty() && !blank_skipped {
            blank_skipped = true;
        } else if blank
            || line.starts_with("```")
            || line.starts_with("~~~")
            || line.contains("-----BEGIN")
        {
            break;
        } else if lines.is_empty() && !blank_skipped && PEM_HEADER.is_match(line) {
            // a header: the body follows, after a blank line
        } else {
            lines.push(line);
            len = end - usize::from(raw.ends_with('\n'));
        }
        pos = end;
    }
    (lines, len)
}

/// The body of a block inside a quoted string, its lines separated by `\n` escapes: up to the
/// `-----END` armour, else the end of the string or of the line.
fn escaped_body(text: &str) -> (Vec<&str>, usize) {
    let stop = text.find(['"', '\'', '\n']).unwrap_or(text.len());
    let (body, len) = match PRIVATE_KEY_END.find(&text[..stop]) {
        Some(e) => (&text[..e.start()], e.end()),
        None => (&text[..stop], stop),
    };
    let lines = body
        .split("\\n")
        .map(|l| l.trim_end_matches("\\r"))
        .collect();
    (lines, len)
}

/// Words a placeholder body is made of (`<your key here>`, `[REDACTED]`, `... snip ...`).
const PLACEHOLDER_WORDS: &[&str] = &[
    "redacted",
    "redact",
    "snip",
    "snipped",
    "omitted",
    "elided",
    "removed",
    "truncated",
    "placeholder",
    "your",
    "private",
    "key",
    "here",
    "goes",
    "paste",
    "contents",
    "content",
    "material",
    "base64",
    "encoded",
    "data",
    "etc",
];

/// What a block's body holds; `None` when it holds nothing visible.
fn classify(lines: &[&str]) -> Option<KeyBody> {
    let words = lines
        .iter()
        .flat_map(|l| l.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty());
    if lines.iter().all(|l| {
        l.trim_matches(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
            .is_empty()
    }) {
        return None;
    }
    let placeholder = words.clone().all(|w| {
        let w = w.to_ascii_lowercase();
        PLACEHOLDER_WORDS.contains(&w.as_str()) || (w.len() >= 3 && w.bytes().all(|b| b == b'x'))
    });
    Some(if placeholder {
        KeyBody::Placeholder
    } else {
        KeyBody::Material
    })
}

/// Every secret in `text`: its byte range and kind, in order, without overlaps.
/// Literals every pattern's match contains: one pass over a clean file finds none of them and
/// skips the patterns (almost every lesson is clean).
static PREFILTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i:aws_?secret|bearer)|AKIA|ASIA|gh[pousr]_|github_pat_|xox[abposr]-|sk-|AIza|-----BEGIN")
        .expect("secret prefilter compiles")
});

fn find_secrets(text: &str) -> Vec<(Range<usize>, &'static str)> {
    if !PREFILTER.is_match(text) {
        return Vec::new();
    }
    let mut found: Vec<(Range<usize>, &'static str)> = Vec::new();
    for (range, body) in private_key_blocks(text) {
        if body == KeyBody::Material {
            found.push((range, "private key"));
        }
    }
    for p in PATTERNS.iter() {
        for caps in p.regex.captures_iter(text) {
            let Some(m) = caps.get(1).or_else(|| caps.get(0)) else {
                continue;
            };
            let range = m.range();
            if !(p.plausible)(m.as_str()) || found.iter().any(|(r, _)| overlaps(r, &range)) {
                continue;
            }
            found.push((range, p.kind));
        }
    }
    found.sort_by_key(|(r, _)| r.start);
    found
}

/// `text` with each secret the rule finds replaced by `[redacted: KIND]`, and the kinds
/// replaced, in order (none: `text` is clean). The caller scans the result again: what this
/// misses, the rule still refuses.
pub fn redact(text: &str) -> (String, Vec<&'static str>) {
    let found = find_secrets(text);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (range, kind) in &found {
        out.push_str(&text[at..range.start]);
        out.push_str(&format!("[redacted: {kind}]"));
        at = range.end;
    }
    out.push_str(&text[at..]);
    (out, found.into_iter().map(|(_, k)| k).collect())
}

fn overlaps(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_replaces_each_secret_by_its_kind() {
        let token = format!("ghp_{}", "a1".repeat(18));
        let text = format!("used {token} and AKIAIOSFODNN7EXAMPLE, then stopped");
        let (out, kinds) = redact(&text);
        assert_eq!(
            out,
            "used [redacted: GitHub personal access token] and [redacted: AWS access key ID], then stopped"
        );
        assert_eq!(kinds, ["GitHub personal access token", "AWS access key ID"]);
        assert!(find_secrets(&out).is_empty());
        assert_eq!(redact("clean"), ("clean".to_string(), vec![]));
    }

    fn kinds(text: &str) -> Vec<&'static str> {
        find_secrets(text).into_iter().map(|(_, k)| k).collect()
    }

    #[test]
    fn finds_each_kind_at_its_span() {
        let x36 = "x".repeat(36);
        let cases = [
            ("key AKIAIOSFODNN7EXAMPLE here", "AWS access key ID", "AKIAIOSFODNN7EXAMPLE"),
            ("ASIAY34FZKBOKMUTVV7A,", "AWS access key ID", "ASIAY34FZKBOKMUTVV7A"),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
                "AWS secret access key",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            ),
            (
                "AWS_SECRET_ACCESS_KEY: \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"",
                "AWS secret access key",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            ),
            (&format!("token ghp_{x36}."), "GitHub personal access token", &format!("ghp_{x36}")),
            (&format!("gho_{x36}"), "GitHub OAuth token", &format!("gho_{x36}")),
            (&format!("(ghs_{x36})"), "GitHub App token", &format!("ghs_{x36}")),
            (&format!("ghr_{x36}"), "GitHub refresh token", &format!("ghr_{x36}")),
            (
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU",
                "GitHub personal access token",
                "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU",
            ),
            (
                "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
                "Slack token",
                "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
            ),
            (
                "key=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdefgh",
                "Anthropic API key",
                "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdefgh",
            ),
            (
                "OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
                "OpenAI API key",
                "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
            ),
            (
                "sk-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijkl",
                "OpenAI API key",
                "sk-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijkl",
            ),
            (
                "AIzaSyA-1234567890abcdefghijklmnopqrstu ",
                "Google API key",
                "AIzaSyA-1234567890abcdefghijklmnopqrstu",
            ),
            (
                "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc123",
                "bearer token",
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc123",
            ),
        ];
        for (text, kind, secret) in cases {
            let found = find_secrets(text);
            assert_eq!(found.len(), 1, "{text}: {found:?}");
            assert_eq!(found[0].1, kind, "{text}");
            assert_eq!(&text[found[0].0.clone()], secret, "{text}");
        }
    }

    #[test]
    fn private_key_block_spans_begin_to_end() {
        let body = "MIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF0qQ3RHdh6Zy1PrUqHc0ZKeUmcQb";
        let text = format!(
            "x\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n{body}\n-----END RSA PRIVATE KEY-----\ny"
        );
        let found = find_secrets(&text);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1, "private key");
        let span = &text[found[0].0.clone()];
        assert!(span.starts_with("-----BEGIN RSA") && span.ends_with("KEY-----"));
        let openssh = format!("-----BEGIN OPENSSH PRIVATE KEY-----\r\n{body}");
        assert_eq!(kinds(&openssh), ["private key"]);
    }

    #[test]
    fn a_private_key_block_leaks_whatever_the_length_of_its_body() {
        fn blocks(text: &str) -> Vec<(&str, KeyBody)> {
            private_key_blocks(text)
                .into_iter()
                .map(|(r, k)| (&text[r], k))
                .collect()
        }
        let short =
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----";
        assert_eq!(blocks(short), [(short, KeyBody::Material)]);
        assert_eq!(kinds(short), ["private key"]);
        // no END line: the block ends with its body
        let cut = "x\n-----BEGIN PRIVATE KEY-----\nMIIE\n\nprose";
        assert_eq!(
            blocks(cut),
            [("-----BEGIN PRIVATE KEY-----\nMIIE", KeyBody::Material)]
        );
        // PEM headers, a blank line, then the body; in a blockquote
        let pem = "> -----BEGIN RSA PRIVATE KEY-----\n> Proc-Type: 4,ENCRYPTED\n>\n> abc\n> -----END RSA PRIVATE KEY-----\n";
        assert_eq!(kinds(pem), ["private key"]);
        // a service account's JSON: `\n` escapes in a string
        let json = r#"{"private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n"}"#;
        assert_eq!(
            blocks(json),
            [(
                r"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----",
                KeyBody::Material
            )]
        );
        // a key being redacted still shows its start
        let partial =
            "-----BEGIN EC PRIVATE KEY-----\nMIIE...REDACTED\n-----END EC PRIVATE KEY-----";
        assert_eq!(kinds(partial), ["private key"]);
    }

    #[test]
    fn only_an_explicit_placeholder_body_is_not_a_leak() {
        for body in [
            "...",
            "REDACTED",
            "<redacted>",
            "[...]",
            "… snip …",
            "<your private key here>",
            "XXXXXXXX",
        ] {
            let text = format!(
                "-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----\n"
            );
            assert!(kinds(&text).is_empty(), "{body}");
            let found = private_key_blocks(&text);
            assert_eq!(found.len(), 1, "{body}");
            assert_eq!(found[0].1, KeyBody::Placeholder, "{body}");
            assert_eq!(&text[found[0].0.clone()], text.trim_end(), "{body}");
        }
        // the armour named in prose, or a block with nothing in it, is no block
        for text in [
            "Never paste a -----BEGIN RSA PRIVATE KEY----- block into a lesson.",
            "A key file starts with -----BEGIN RSA PRIVATE KEY-----\nand then base64.",
            "-----BEGIN RSA PRIVATE KEY-----\n-----END RSA PRIVATE KEY-----",
            "`-----BEGIN RSA PRIVATE KEY-----`",
        ] {
            assert!(private_key_blocks(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn the_most_specific_kind_wins() {
        let text = format!("Authorization: Bearer ghp_{}", "a1".repeat(18));
        assert_eq!(kinds(&text), ["GitHub personal access token"]);
    }

    #[test]
    fn ordinary_prose_is_not_a_secret() {
        let prose = [
            "Build the skeleton first, then wire the task-runner.",
            "The Bearer of bad news was the CI dashboard.",
            "Send the header `Authorization: Bearer <token>` with the request.",
            "Authorization: Bearer YOUR_ACCESS_TOKEN_HERE",
            // from zola's Netlify docs, found by the corpus test
            "-H \"Authorization: Bearer PERSONAL_ACCESS_TOKEN_FROM_STEP_1\"",
            "Authorization: Bearer $GITHUB_TOKEN",
            "bearer authentication-is-deprecated-here",
            "Never paste a -----BEGIN RSA PRIVATE KEY----- block into a lesson.",
            "-----BEGIN OPENSSH PRIVATE KEY-----\n<redacted>\n-----END OPENSSH PRIVATE KEY-----",
            "Use sk-learn, risk-averse plans and a desk-booking-system-for-the-whole-office.",
            "sk-this-is-a-very-long-kebab-case-identifier-name",
            "AKIA is the prefix of AWS access key ids; AKIAEXAMPLE is too short.",
            "ghp_ tokens are 40 characters: ghp_short.",
            "xoxb-your-slack-token-here",
            "aws_secret_access_key = <your secret key>",
            "AIza is how Google API keys start.",
            "The slug is cite-source-url-in-research-summaries.",
        ];
        for text in prose {
            assert!(kinds(text).is_empty(), "{text}: {:?}", kinds(text));
        }
    }

    #[test]
    fn official_examples_are_clean() {
        let examples = [
            "ref: r_2026-04-22_8c1d4f\nref: aud_2026-04-22_8c1d4f_ok\nref: wiki/research/numerical-claims-policy",
            "supersedes: [retry-aggressively-on-embedding-rate-limit]",
            "tags: [tool-calls, prompting, context]\nexpires_at: 2026-10-01T00:00:00Z",
        ];
        for text in examples {
            assert!(kinds(text).is_empty(), "{text}");
        }
    }
}
