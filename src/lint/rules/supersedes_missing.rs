//! `supersedes-missing` (B003).

use foldhash::{HashSet, HashSetExt};

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::document::name_hash;
use crate::lint::Check;

declare_rule! {
    /// A `supersedes` entry names no lesson.
    ///
    /// ## What it does
    /// Reports an entry of `supersedes` that is neither the slug of a lesson in the bank nor the
    /// name of a file in it (a lesson file that does not parse still exists), and has no
    /// `_archive/<slug>.md`. A close slug is suggested.
    ///
    /// ## Why is this bad?
    /// Supersession retires the older lesson from retrieval. A misspelt slug retires nothing:
    /// the old advice stays active next to the new one (AIP-11 `supersedes_missing`).
    ///
    /// ## Example
    /// ```text
    /// supersedes: [retry-agressively-on-embedding-rate-limit]
    /// ```
    pub static RULE = {
        code: "B003",
        name: "supersedes-missing",
        level: Error,
        fixable: false,
        check: Check::Bank(check),
    }
}

/// At most this many slug comparisons for suggestions in one run, so that a bank of 100,000
/// lessons with many dangling entries stays linear.
const SUGGESTION_BUDGET: usize = 2_000_000;

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    // most banks supersede little: the sets are built only when an entry needs them
    // (each document's keys say whether its lesson supersedes anything)
    let superseding = || {
        bank.documents
            .iter()
            .filter(|doc| doc.keys().supersedes)
            .filter_map(|doc| doc.lesson.as_deref().map(|lesson| (doc, lesson)))
    };
    if superseding().next().is_none() {
        return;
    }
    // an entry may name a lesson's slug or, for a file that does not parse, its name: the
    // names entries ask for are few, so they are the set, and each file is looked up in it
    // (by the hashes of its names first, which its keys hold)
    let mut names: HashSet<&str> = superseding()
        .flat_map(|(_, lesson)| lesson.supersedes.iter().map(|e| e.value.as_str()))
        .collect();
    let hashes: HashSet<u64> = names.iter().map(|name| name_hash(name)).collect();
    let mut found: HashSet<&str> = HashSet::with_capacity(names.len());
    for doc in &bank.documents {
        let keys = doc.keys();
        if !hashes.contains(&keys.slug) && !hashes.contains(&keys.stem) {
            continue;
        }
        for name in doc
            .stem()
            .into_iter()
            .chain(doc.lesson.as_ref().map(|l| l.slug.value.as_str()))
        {
            if let Some(name) = names.take(name) {
                found.insert(name);
            }
        }
    }
    let names = found;
    // the slugs a misspelt entry is compared with, built at the first miss
    let mut slugs: Option<Vec<&str>> = None;
    let mut budget = SUGGESTION_BUDGET;
    for (doc, lesson) in superseding() {
        for entry in &lesson.supersedes {
            let slug = entry.value.as_str();
            if slug == lesson.slug.value || names.contains(slug) || archived(bank, slug) {
                continue;
            }
            if slug.trim().is_empty() {
                out.push(
                    Diagnostic::new(
                        &RULE,
                        &doc.source,
                        entry.span.clone(),
                        "`supersedes` entry is empty",
                    )
                    .with_help(
                        "write the slug of the lesson this one replaces, or remove the entry",
                    ),
                );
                continue;
            }
            let mut help = format!("no lesson has this slug and there is no `_archive/{slug}.md`");
            let slugs = slugs.get_or_insert_with(|| {
                let mut all: Vec<&str> =
                    bank.lessons().map(|(_, l)| l.slug.value.as_str()).collect();
                all.sort_unstable();
                all.dedup();
                all
            });
            if budget >= slugs.len() {
                budget -= slugs.len();
                if let Some(close) = closest(slug, slugs.iter().copied()) {
                    help = format!("no lesson has this slug; did you mean `{close}`?");
                }
            }
            out.push(
                Diagnostic::new(
                    &RULE,
                    &doc.source,
                    entry.span.clone(),
                    format!("supersedes `{slug}`, which is not in the bank"),
                )
                .with_help(help),
            );
        }
    }
}

/// Whether `_archive/<slug>.md` exists. A slug that could leave the directory is never looked up.
fn archived(bank: &Bank, slug: &str) -> bool {
    let safe = !slug.is_empty() && !slug.starts_with('.') && !slug.contains(['/', '\\', '\0', ':']);
    safe && crate::layout::archive_path(&bank.root, slug).is_file()
}

/// The most similar slug, when it is close enough to be a typo.
fn closest<'a>(slug: &str, slugs: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    slugs
        .map(|s| (strsim::normalized_damerau_levenshtein(slug, s), s))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_only_close_slugs() {
        let slugs = ["retry-aggressively-on-429", "cite-sources", "cite-source"];
        assert_eq!(
            closest("retry-agressively-on-429", slugs.into_iter()),
            Some("retry-aggressively-on-429")
        );
        assert_eq!(
            closest("cite-sourc", slugs.into_iter()),
            Some("cite-source")
        );
        assert_eq!(closest("paginate-lists", slugs.into_iter()), None);
    }
}
