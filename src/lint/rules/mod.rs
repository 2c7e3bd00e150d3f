//! The rule registry. One rule per file; `RULES` is sorted by code (a test enforces it).

use crate::diagnostic::Diagnostic;
use crate::document::{Document, Split};
use crate::lint::Rule;
use crate::source::{ReadProblem, Source};
use crate::yaml::YamlErrorKind;

pub mod carrier;
pub mod comment_instruction;
pub mod confidence_out_of_range;
pub mod counts_without_outcomes;
pub mod duplicate_key;
pub mod duplicate_path;
pub mod duplicate_slug;
pub mod empty_evidence;
pub mod empty_target;
pub mod encoded_payload;
pub mod executable_link;
pub mod expired;
pub mod expires_at_without_offset;
pub mod file_too_large;
pub mod frontmatter_not_mapping;
pub mod hidden_unicode;
pub mod index_stale;
pub mod invalid_count;
pub mod invalid_evidence_kind;
pub mod invalid_expires_at;
pub mod invalid_length;
pub mod invalid_outcome;
pub mod invalid_schema_id;
pub mod invalid_slug;
pub mod invalid_supersedes_slug;
pub mod invalid_tag;
pub mod invalid_target_glob;
pub mod invalid_utf8;
pub mod ledger_count_mismatch;
pub mod ledger_merge_rule_missing;
pub mod ledger_rewritten;
pub mod ledger_torn_line;
pub mod legacy_schema_id;
pub mod lesson_deleted;
pub mod lesson_rewritten;
pub mod merge_conflict;
pub mod missing_counter_example;
pub mod missing_frontmatter;
pub mod missing_required_field;
pub mod missing_section;
pub mod misspelled_field;
pub mod model_instruction;
pub mod non_yaml_frontmatter;
pub mod nul_byte;
pub mod opposite_verdicts;
pub mod outcome_mixed_band;
pub mod overbroad_trigger;
pub mod private_key_placeholder;
pub mod secret;
pub mod self_supersession;
pub mod slug_changed;
pub mod slug_mismatch;
pub mod superseded_twice;
pub mod supersedes_dropped;
pub mod supersedes_missing;
pub mod supersession_cycle;
pub mod symlink_outside_bank;
pub mod title_mismatch;
pub mod unknown_field;
pub mod unledgered_counts;
pub mod unreadable_file;
pub mod unterminated_frontmatter;
pub mod unused_suppression;
pub mod vendor_redefines_standard_field;
pub mod walk_error;
pub mod wrong_type;
pub mod yaml_syntax;
pub mod yaml_too_complex;

/// Every rule, sorted by code.
pub static RULES: &[&Rule] = &[
    &slug_mismatch::RULE,
    &duplicate_slug::RULE,
    &supersedes_missing::RULE,
    &self_supersession::RULE,
    &supersession_cycle::RULE,
    &superseded_twice::RULE,
    &expired::RULE,
    &index_stale::RULE,
    &title_mismatch::RULE,
    &missing_section::RULE,
    &missing_counter_example::RULE,
    &hidden_unicode::RULE,
    &secret::RULE,
    &private_key_placeholder::RULE,
    &model_instruction::RULE,
    &comment_instruction::RULE,
    &encoded_payload::RULE,
    &executable_link::RULE,
    &ledger_rewritten::RULE,
    &counts_without_outcomes::RULE,
    &lesson_deleted::RULE,
    &slug_changed::RULE,
    &supersedes_dropped::RULE,
    &lesson_rewritten::RULE,
    &ledger_count_mismatch::RULE,
    &ledger_torn_line::RULE,
    &outcome_mixed_band::RULE,
    &unledgered_counts::RULE,
    &opposite_verdicts::RULE,
    &ledger_merge_rule_missing::RULE,
    &unreadable_file::RULE,
    &file_too_large::RULE,
    &invalid_utf8::RULE,
    &nul_byte::RULE,
    &missing_frontmatter::RULE,
    &unterminated_frontmatter::RULE,
    &non_yaml_frontmatter::RULE,
    &yaml_syntax::RULE,
    &duplicate_key::RULE,
    &yaml_too_complex::RULE,
    &frontmatter_not_mapping::RULE,
    &walk_error::RULE,
    &symlink_outside_bank::RULE,
    &duplicate_path::RULE,
    &merge_conflict::RULE,
    &missing_required_field::RULE,
    &unknown_field::RULE,
    &wrong_type::RULE,
    &invalid_schema_id::RULE,
    &legacy_schema_id::RULE,
    &invalid_slug::RULE,
    &invalid_length::RULE,
    &invalid_tag::RULE,
    &invalid_outcome::RULE,
    &invalid_evidence_kind::RULE,
    &empty_evidence::RULE,
    &empty_target::RULE,
    &confidence_out_of_range::RULE,
    &invalid_count::RULE,
    &invalid_supersedes_slug::RULE,
    &invalid_expires_at::RULE,
    &expires_at_without_offset::RULE,
    &vendor_redefines_standard_field::RULE,
    &misspelled_field::RULE,
    &overbroad_trigger::RULE,
    &invalid_target_glob::RULE,
    &unused_suppression::RULE,
];

/// Diagnostics of reading and parsing one file (the `Check::Emitted` rules P001..P011).
pub fn parse_diagnostics(doc: &Document, out: &mut Vec<Diagnostic>) {
    let src = &doc.source;
    if let Some(problem) = &doc.read_problem {
        out.push(match problem {
            ReadProblem::Io { message } => Diagnostic::new(
                &unreadable_file::RULE,
                src,
                0..0,
                format!("cannot read file: {message}"),
            ),
            ReadProblem::TooLarge { size, limit } => Diagnostic::new(
                &file_too_large::RULE,
                src,
                0..0,
                format!("file is {size} bytes, over the {limit}-byte limit; not read"),
            )
            .with_help("raise `[lint] size-limit` in lesson.toml if this file really is a lesson"),
            ReadProblem::InvalidUtf8 { offset } => Diagnostic::new(
                &invalid_utf8::RULE,
                src,
                *offset..*offset,
                format!("invalid UTF-8 at byte {offset}"),
            )
            .with_help("re-save the file as UTF-8"),
            ReadProblem::NulByte { offset } => Diagnostic::new(
                &nul_byte::RULE,
                src,
                *offset..*offset + 1,
                format!("NUL byte at byte {offset}"),
            ),
        });
        return;
    }
    match &doc.split {
        Some(Split::Missing) => out.push(
            Diagnostic::new(&missing_frontmatter::RULE, src, 0..0, "no YAML frontmatter")
                .with_help(
                    "a lesson starts with a `---` line, its YAML fields, and a closing `---` line",
                ),
        ),
        Some(Split::Unterminated { open }) => out.push(
            Diagnostic::new(
                &unterminated_frontmatter::RULE,
                src,
                open.clone(),
                "frontmatter opened here is never closed",
            )
            .with_help("add a `---` line after the last YAML field"),
        ),
        Some(Split::Foreign { open, language }) => out.push(
            Diagnostic::new(
                &non_yaml_frontmatter::RULE,
                src,
                open.clone(),
                format!(
                    "{language} frontmatter: a lesson's frontmatter is YAML between `---` fences"
                ),
            )
            .with_help("rewrite the fields as YAML between `---` lines"),
        ),
        Some(Split::Yaml(fences)) => {
            for err in &doc.yaml_errors {
                let rule = match err.kind {
                    YamlErrorKind::Syntax => &yaml_syntax::RULE,
                    YamlErrorKind::DuplicateKey => &duplicate_key::RULE,
                    YamlErrorKind::TooComplex => &yaml_too_complex::RULE,
                };
                let mut d = Diagnostic::new(rule, src, err.span.clone(), err.message.clone());
                if err.kind == YamlErrorKind::Syntax {
                    d = d.with_help(
                        "quote a value that starts with `*`, `&`, `!`, `@`, `%` or a backtick, or that contains `: ` or ` #`",
                    );
                }
                if let Some(first) = &err.first {
                    let (line, col) = src.line_col(first.start);
                    d = d.with_help(format!("first defined at {line}:{col}; remove one of them"));
                }
                out.push(d);
            }
            if let Some(yaml) = &doc.yaml {
                if doc.root_map().is_none() {
                    let (range, what) = match yaml.root {
                        None => (fences.open.clone(), "frontmatter is empty".to_string()),
                        Some(root) => (
                            yaml.node(root).span.clone(),
                            format!(
                                "frontmatter is a {}, not a mapping of fields",
                                yaml.type_name(root)
                            ),
                        ),
                    };
                    out.push(
                        Diagnostic::new(&frontmatter_not_mapping::RULE, src, range, what)
                            .with_help("a lesson needs at least schema, slug, title, trigger, outcome and evidence"),
                    );
                }
            }
        }
        None => {}
    }
}

/// Diagnostics for paths the bank walk could not enter (P012) and symlinks it did not follow
/// (P013, P014), of the rules `enabled` keeps. The link's target is never read: the finding
/// has no text.
pub fn walk_diagnostics(
    bank: &crate::bank::Bank,
    enabled: impl Fn(&Rule) -> bool,
    out: &mut Vec<Diagnostic>,
) {
    use crate::bank::WalkProblemKind;
    for p in &bank.walk_problems {
        let rule = match p.kind {
            WalkProblemKind::Unreadable => &walk_error::RULE,
            WalkProblemKind::OutsideBank => &symlink_outside_bank::RULE,
            WalkProblemKind::Duplicate => &duplicate_path::RULE,
        };
        if !enabled(rule) {
            continue;
        }
        let src = Source::new(p.path.clone(), String::new());
        let d = Diagnostic::new(rule, &src, 0..0, p.message.clone());
        out.push(match p.kind {
            WalkProblemKind::Unreadable => d,
            WalkProblemKind::OutsideBank => {
                d.with_help("replace the link with the lesson itself, or remove it")
            }
            WalkProblemKind::Duplicate => {
                d.with_help("remove the link: its target is in the bank already")
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn registry_is_sorted_unique_and_documented() {
        let codes: Vec<_> = RULES.iter().map(|r| r.code).collect();
        let mut sorted = codes.clone();
        sorted.sort_by_key(|c| (c.chars().next(), c[1..].parse::<u32>().unwrap_or(0)));
        assert_eq!(codes, sorted, "RULES must be sorted by code");
        let names: HashSet<_> = RULES.iter().map(|r| r.name).collect();
        assert_eq!(names.len(), RULES.len(), "rule names must be unique");
        let unique: HashSet<_> = codes.iter().collect();
        assert_eq!(unique.len(), codes.len(), "rule codes must be unique");
        for rule in RULES {
            assert!(
                rule.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{} is not kebab-case",
                rule.name
            );
            for section in ["## What it does", "## Why is this bad?", "## Example"] {
                assert!(
                    rule.docs.contains(section),
                    "{} docs lack {section}",
                    rule.code
                );
            }
            assert!(
                !rule.summary().starts_with('#'),
                "{} docs must open with a summary line",
                rule.code
            );
        }
    }
}
