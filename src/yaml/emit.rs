//! Writing YAML: strings as scalars that read back as exactly themselves, for the templates
//! (`lesson new`, `lesson add`) and the span edits of `edit::frontmatter`.

use super::{resolve_plain, Scalar};

/// A string as a YAML scalar in block context: plain when that is unambiguous for YAML 1.2 and
/// 1.1 readers alike, else single-quoted, else double-quoted with escapes.
pub fn yaml_scalar(s: &str) -> String {
    if plain_is_safe(s, false) {
        s.to_string()
    } else {
        quoted(s)
    }
}

/// A string as a YAML scalar inside a flow collection (`[a, b]`).
pub fn yaml_flow_scalar(s: &str) -> String {
    if plain_is_safe(s, true) {
        s.to_string()
    } else {
        quoted(s)
    }
}

/// Words YAML 1.1 readers (PyYAML and friends) take as booleans or null.
const YAML11_WORDS: [&str; 11] = [
    "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nil", "none",
];

fn plain_is_safe(s: &str, flow: bool) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    let last = s.chars().next_back().unwrap_or(first);
    // a letter first rules out every indicator (`-?:,[]{}#&*!|>'"%@` and the backtick)
    first.is_alphabetic()
        && !last.is_whitespace()
        && last != ':'
        && !s.contains(": ")
        && !s.contains(" #")
        && s.chars().all(is_plain_char)
        && !(flow && s.contains([',', '[', ']', '{', '}', ':', '#']))
        // saphyr refuses `[a -]`: a plain scalar ending in ` -` before a flow indicator
        && !(flow && s.ends_with(" -"))
        && matches!(resolve_plain(s), Scalar::Str(_))
        && !YAML11_WORDS.contains(&s.to_ascii_lowercase().as_str())
}

/// Printable, not a line break or tab, not a BOM.
fn is_plain_char(c: char) -> bool {
    matches!(c, ' '..='~' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fffd}' | '\u{10000}'..)
        && !matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}')
}

fn quoted(s: &str) -> String {
    if s.chars().all(is_plain_char) {
        format!("'{}'", s.replace('\'', "''"))
    } else {
        double_quoted(s)
    }
}

fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if is_plain_char(c) => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::Yaml;
    use proptest::prelude::*;

    fn read_back(scalar: &str) -> Option<String> {
        let text = format!("k: {scalar}\n");
        let (yaml, errors) = Yaml::parse(&text, 0);
        let yaml = yaml?;
        if !errors.is_empty() {
            return None;
        }
        crate::lesson::string(&yaml, yaml.root?, "k").map(|s| s.value)
    }

    fn read_back_flow(scalar: &str) -> Option<String> {
        let text = format!("k: [{scalar}, x]\n");
        let (yaml, _) = Yaml::parse(&text, 0);
        let yaml = yaml?;
        let (_, seq) = yaml.get(yaml.root?, "k")?;
        let items = yaml.seq(seq)?;
        if items.len() != 2 {
            return None;
        }
        match yaml.scalar(items[0])? {
            Scalar::Str(s) => Some(s.to_string()),
            _ => None,
        }
    }

    #[test]
    fn scalars_are_plain_when_unambiguous() {
        assert_eq!(
            yaml_scalar("Write files atomically"),
            "Write files atomically"
        );
        assert_eq!(yaml_scalar("Use a, b and c"), "Use a, b and c");
        assert_eq!(yaml_scalar("Note: this"), "'Note: this'");
        assert_eq!(yaml_scalar("*bold* start"), "'*bold* start'");
        assert_eq!(yaml_scalar("it's"), "it's");
        assert_eq!(yaml_scalar("'quoted'"), "'''quoted'''");
        assert_eq!(yaml_scalar("yes"), "'yes'");
        assert_eq!(yaml_scalar("0.5"), "'0.5'");
        assert_eq!(yaml_scalar("a #b"), "'a #b'");
        assert_eq!(yaml_scalar("two\nlines"), "\"two\\nlines\"");
        assert_eq!(yaml_scalar(""), "''");
        assert_eq!(yaml_flow_scalar("a,b"), "'a,b'");
        assert_eq!(yaml_flow_scalar("rust"), "rust");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(crate::test_cases(2000)))]

        #[test]
        fn any_string_round_trips(s in any::<String>()) {
            prop_assert_eq!(read_back(&yaml_scalar(&s)), Some(s.clone()));
            prop_assert_eq!(read_back_flow(&yaml_flow_scalar(&s)), Some(s));
        }

        #[test]
        fn yaml_ish_strings_round_trip(s in r#"[ a-zA-Z0-9:#'"\-?,\[\]{}&*!|>%@`\\.\t\n]{0,12}"#) {
            prop_assert_eq!(read_back(&yaml_scalar(&s)), Some(s.clone()));
            prop_assert_eq!(read_back_flow(&yaml_flow_scalar(&s)), Some(s));
        }
    }
}
