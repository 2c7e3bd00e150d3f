//! The injection-carrier rules (D004, D007..D010) on the real markdown of `../shared/corpora`:
//! how many files each corpus has flagged, by rule, printed as a table (the README quotes it).
//! Documentation corpora are text written for people, so every finding there is a false
//! positive, and their rate must stay low; the prompt corpora (cursor rules, agent
//! definitions, skills) are instructions to a model by design, and are measured, not bounded.

use std::collections::BTreeMap;

use lesson::config::Config;
use lesson::document::Document;
use lesson::lint::rules::carrier;
use lesson::lint::FileContext;
use lesson::source::Source;

use crate::corpora::{corpora_dir, markdown_files};

/// Corpora whose files are prompts for a model: the rules are meant to fire there.
const PROMPT_CORPORA: [&str; 4] = [
    "anthropic-skills",
    "awesome-cursorrules",
    "claude-code-subagents",
    "cursor-rules-mdc",
];

/// At most this share of the documentation corpora's files may be flagged (per mille).
const MAX_DOC_FLAGGED_PER_MILLE: usize = 2;

#[derive(Default)]
struct Tally {
    scanned: usize,
    flagged: usize,
    by_rule: BTreeMap<String, usize>,
    samples: Vec<String>,
}

#[test]
fn carrier_rules_rarely_fire_on_documentation() {
    let root = corpora_dir();
    if !root.is_dir() {
        eprintln!("skipped: no corpora at {}", root.display());
        return;
    }
    let config = Config::default();
    let now = "2026-11-22T12:00:00Z".parse().unwrap();
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for path in markdown_files(&root) {
        let rel = path.strip_prefix(&root).unwrap();
        let corpus = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .to_string();
        let (source, problem) = Source::read(&path, path.clone(), 64 << 20);
        let doc = Document::parse(source, problem);
        let found = carrier::scan(&FileContext::new(&doc, &config, now));
        let tally = tallies.entry(corpus).or_default();
        tally.scanned += 1;
        if found.is_empty() {
            continue;
        }
        tally.flagged += 1;
        for code in carrier::codes(&found) {
            *tally.by_rule.entry(code).or_default() += 1;
        }
        for d in found.iter().take(2) {
            tally.samples.push(format!(
                "{}:{}:{}: {} {}",
                rel.display(),
                d.line,
                d.column,
                d.code,
                d.message
            ));
        }
    }
    let (mut doc_scanned, mut doc_flagged) = (0, 0);
    let mut table = String::from("corpus | kind | flagged / scanned | by rule (files)\n");
    for (corpus, t) in &tallies {
        let prompt = PROMPT_CORPORA.contains(&corpus.as_str());
        if !prompt {
            doc_scanned += t.scanned;
            doc_flagged += t.flagged;
        }
        let rules: Vec<String> = t.by_rule.iter().map(|(c, n)| format!("{c} {n}")).collect();
        table.push_str(&format!(
            "{corpus} | {} | {} / {} | {}\n",
            if prompt { "prompts" } else { "docs" },
            t.flagged,
            t.scanned,
            rules.join(", ")
        ));
    }
    table.push_str(&format!(
        "documentation corpora: {doc_flagged} / {doc_scanned} files flagged\n"
    ));
    eprintln!("{table}");
    for (corpus, t) in &tallies {
        for s in &t.samples {
            eprintln!("  [{corpus}] {s}");
        }
    }
    assert!(doc_scanned > 1000, "only {doc_scanned} documentation files");
    assert!(
        doc_flagged * 1000 <= doc_scanned * MAX_DOC_FLAGGED_PER_MILLE,
        "{doc_flagged} of {doc_scanned} documentation files flagged"
    );
}
