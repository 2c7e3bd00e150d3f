//! `ledger-merge-rule-missing` (L006).

use crate::bank::Bank;
use crate::declare_rule;
use crate::diagnostic::Diagnostic;
use crate::git::driver::merge_attribute;
use crate::git::repo::BankRepo;
use crate::layout::{GITATTRIBUTES, LOG_DIR};
use crate::ledger::ledger_files;
use crate::lint::Check;
use crate::source::Source;

declare_rule! {
    /// The bank is in git and has ledgers, but git does not merge them by union.
    ///
    /// ## What it does
    /// When the bank lies in a git repository and has a `_log/` directory, asks git which
    /// `merge` attribute its ledgers (`_log/*.jsonl`) have, as `git check-attr merge` would
    /// (every `.gitattributes` from the repository's root down to the bank, and
    /// `.git/info/attributes`). Reports the bank when it is neither `union` (git's built-in
    /// driver) nor `lesson` (the bank's own driver, which merges ledgers by union too). A bank
    /// outside git is not checked. `lesson init` on the bank adds the missing lines to its
    /// `.gitattributes` and changes nothing else.
    ///
    /// ## Why is this bad?
    /// Ledgers are append-only. Two clones that each record an outcome append a line at the end
    /// of the same ledger, and git's default merge reports that as a conflict, so every `git
    /// pull` after concurrent records stops on a ledger. A `.gitattributes` line anchored at the
    /// repository's root (`_log/*.jsonl merge=union` in the root when the bank is `lessons/`)
    /// matches nothing in the bank: the rule has to name the bank's own `_log/`.
    ///
    /// ## Example
    /// A repository whose root `.gitattributes` holds `_log/*.jsonl merge=union`, with the
    /// bank in `lessons/` and no `lessons/.gitattributes`: `lessons/_log/*.jsonl` merge by
    /// git's default text merge.
    pub static RULE = {
        code: "L006",
        name: "ledger-merge-rule-missing",
        level: Warning,
        fixable: false,
        check: Check::Bank(check),
    }
}

fn check(bank: &Bank, out: &mut Vec<Diagnostic>) {
    if !bank.root.join(LOG_DIR).is_dir() {
        return;
    }
    let Ok(repo) = BankRepo::open(&bank.root) else {
        return; // outside git (or no work tree): nothing merges the ledgers
    };
    let probe = ledger_files(&bank.root)
        .first()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "lesson.jsonl".to_string());
    let probe = format!("{LOG_DIR}/{probe}");
    let Ok(attr) = merge_attribute(&repo, &probe) else {
        return;
    };
    if matches!(attr.as_deref(), Some("union" | "lesson")) {
        return;
    }
    let path = bank.root.join(GITATTRIBUTES);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let source = Source::new(path, text);
    let what = match attr.as_deref() {
        None => "no `merge` attribute".to_string(),
        Some(other) => format!("`merge={other}`, not `merge=union`"),
    };
    out.push(
        Diagnostic::new(
            &RULE,
            &source,
            0..0,
            format!(
                "the ledgers have {what} in git (`{}`): records made on two clones conflict in `{LOG_DIR}/`",
                repo.repo_path(&probe)
            ),
        )
        .with_help("run `lesson init` on the bank: it adds `_log/*.jsonl merge=union` to the bank's `.gitattributes`"),
    );
}
