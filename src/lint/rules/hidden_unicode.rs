//! `hidden-unicode` (D004).

use std::fmt::Write;
use std::ops::Range;

use crate::declare_rule;
use crate::diagnostic::{Diagnostic, Edit, Fix};
use crate::lint::{Check, FileContext};

declare_rule! {
    /// The file holds invisible or text-direction control characters.
    ///
    /// ## What it does
    /// Reports each run of bidirectional controls (U+202A..U+202E, U+2066..U+2069, U+200E,
    /// U+200F, U+061C) and invisible characters (U+200B..U+200D, U+2060, U+00AD, and U+FEFF
    /// anywhere but a byte order mark at the start), in the frontmatter or the body, naming
    /// them. A zero-width joiner between two emoji is part of the emoji (👩‍👧) and is not reported.
    /// The unsafe fix deletes them.
    ///
    /// ## Why is this bad?
    /// A lesson is text injected into an agent's prompt. Direction overrides make a line display
    /// in another order than the model reads it, and invisible characters hide words from a
    /// reviewer (or split a keyword so that a filter misses it): both are ways to smuggle
    /// instructions past review. The fix is unsafe because joiners and non-joiners are part of
    /// the spelling of some words in Persian and Indic scripts.
    ///
    /// ## Example
    /// ```text
    /// note: Approved by the on-call engineer<U+202E>lanoitaler ton<U+202C>.
    /// ```
    pub static RULE = {
        code: "D004",
        name: "hidden-unicode",
        level: Warning,
        fixable: true,
        check: Check::File(check),
    }
}

fn check(ctx: &FileContext<'_>, out: &mut Vec<Diagnostic>) {
    let doc = ctx.doc;
    if doc.read_problem.is_some() {
        return;
    }
    for run in runs(&doc.source.text) {
        let help = if run.chars.iter().any(|&c| is_bidi(c)) {
            "direction controls make text display in another order than tools and models read it"
        } else {
            "invisible characters make the text differ from what a reviewer sees"
        };
        let message = describe(&run.chars);
        out.push(
            Diagnostic::new(&RULE, &doc.source, run.range.clone(), message)
                .with_help(help)
                .with_fix(Fix::unsafe_(
                    if run.chars.len() == 1 {
                        "delete the hidden character"
                    } else {
                        "delete the hidden characters"
                    },
                    vec![Edit::delete(run.range)],
                )),
        );
    }
}

/// Adjacent hidden characters.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Run {
    range: Range<usize>,
    chars: Vec<char>,
}

/// The runs of hidden characters in `text`. A BOM at offset 0 is not one, nor is a zero-width
/// joiner inside an emoji sequence (👩‍👧 is two emoji and a joiner).
pub(crate) fn runs(text: &str) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    if text.is_ascii() {
        return out;
    }
    for (i, c) in text.char_indices() {
        if name(c).is_none() || (i == 0 && c == '\u{feff}') {
            continue;
        }
        if c == '\u{200d}' && joins_emoji(text, i) {
            continue;
        }
        let end = i + c.len_utf8();
        match out.last_mut() {
            Some(run) if run.range.end == i => {
                run.range.end = end;
                run.chars.push(c);
            }
            _ => out.push(Run {
                range: i..end,
                chars: vec![c],
            }),
        }
    }
    out
}

/// `hidden character U+202E RIGHT-TO-LEFT OVERRIDE`, or for a run, each distinct character
/// with its count.
fn describe(chars: &[char]) -> String {
    let mut distinct: Vec<(char, usize)> = Vec::new();
    for &c in chars {
        match distinct.iter_mut().find(|(d, _)| *d == c) {
            Some((_, n)) => *n += 1,
            None => distinct.push((c, 1)),
        }
    }
    let mut out = if chars.len() == 1 {
        "hidden character ".to_string()
    } else {
        format!("{} hidden characters: ", chars.len())
    };
    for (i, (c, n)) in distinct.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "U+{:04X} {}", u32::from(*c), name(*c).unwrap_or("?"));
        if *n > 1 {
            let _ = write!(out, " (x{n})");
        }
    }
    out
}

/// Whether the joiner at `at` stands between an emoji (or its variation selector) and an emoji.
fn joins_emoji(text: &str, at: usize) -> bool {
    let before = text[..at].chars().next_back();
    let after = text[at + '\u{200d}'.len_utf8()..].chars().next();
    before.is_some_and(|c| is_emoji(c) || c == '\u{fe0f}') && after.is_some_and(is_emoji)
}

/// Pictographic blocks: enough to recognise emoji ZWJ sequences, not a full Unicode property.
fn is_emoji(c: char) -> bool {
    matches!(c, '\u{1f000}'..='\u{1faff}' | '\u{2300}'..='\u{23ff}' | '\u{2600}'..='\u{27bf}' | '\u{2b00}'..='\u{2bff}')
}

fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// The Unicode name of a character this rule reports.
fn name(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{00ad}' => "SOFT HYPHEN",
        '\u{061c}' => "ARABIC LETTER MARK",
        '\u{200b}' => "ZERO WIDTH SPACE",
        '\u{200c}' => "ZERO WIDTH NON-JOINER",
        '\u{200d}' => "ZERO WIDTH JOINER",
        '\u{200e}' => "LEFT-TO-RIGHT MARK",
        '\u{200f}' => "RIGHT-TO-LEFT MARK",
        '\u{202a}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202b}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202c}' => "POP DIRECTIONAL FORMATTING",
        '\u{202d}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202e}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2060}' => "WORD JOINER",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        '\u{feff}' => "ZERO WIDTH NO-BREAK SPACE",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_group_adjacent_characters_and_skip_a_leading_bom() {
        let text = "\u{feff}a\u{202e}\u{202e}\u{2066}b\u{feff}c é\u{200d}";
        let runs = runs(text);
        assert_eq!(runs.len(), 3);
        assert_eq!(&text[runs[0].range.clone()], "\u{202e}\u{202e}\u{2066}");
        assert_eq!(
            describe(&runs[0].chars),
            "3 hidden characters: U+202E RIGHT-TO-LEFT OVERRIDE (x2), U+2066 LEFT-TO-RIGHT ISOLATE"
        );
        assert_eq!(&text[runs[1].range.clone()], "\u{feff}");
        assert_eq!(
            describe(&runs[2].chars),
            "hidden character U+200D ZERO WIDTH JOINER"
        );
        assert!(super::runs("plain ascii").is_empty());
        assert!(
            super::runs("family 👩\u{200d}👩\u{200d}👧, heart on fire ❤\u{fe0f}\u{200d}🔥")
                .is_empty()
        );
        assert_eq!(super::runs("a\u{200d}👧 👧\u{200d}").len(), 2);
        assert!(super::runs("naïve café — “quoted” 日本語").is_empty());
    }

    #[test]
    fn every_listed_character_has_a_name() {
        for c in ('\u{202a}'..='\u{202e}')
            .chain('\u{2066}'..='\u{2069}')
            .chain('\u{200b}'..='\u{200f}')
            .chain(['\u{061c}', '\u{2060}', '\u{feff}', '\u{00ad}'])
        {
            assert!(name(c).is_some(), "U+{:04X}", u32::from(c));
        }
    }
}
