//! The bank's merge rules under plain git: the merge driver `lesson git install` registers in
//! the clone's configuration, and the attributes that route bank files to it.
//!
//! `.gitattributes` in the bank (written by `lesson init`) says which files use which rule:
//! `_log/*.jsonl merge=union` (built into git, no configuration needed) and `*.md merge=lesson`
//! (this driver). git looks a driver up by name in the repository's configuration, so each
//! clone registers it once, as `git lfs install` does: `merge.lesson.driver = lesson merge-file
//! %O %A %B %P`. The driver is run as `lesson`, found on PATH.

use super::repo::{BankRepo, GitError};

/// The driver's name in `.gitattributes` (`merge=lesson`).
pub const DRIVER: &str = "lesson";
/// `merge.lesson.name`: what git shows for the driver.
pub const DRIVER_NAME: &str =
    "lesson bank files: ledgers by union, counts and evidence of lessons, _index.md rows";
/// `merge.lesson.driver`: the command git runs (`lesson` must be on PATH).
pub const DRIVER_COMMAND: &str = "lesson merge-file %O %A %B %P";

/// What `install` did to one configuration key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting {
    /// The key was absent and is now set.
    Set,
    /// The key already had this value.
    Unchanged,
    /// The key has another value, which was kept (a user's choice, such as an absolute path).
    Kept(String),
}

/// What `install` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The configuration file written (`.git/config` of the clone).
    pub config: std::path::PathBuf,
    /// `merge.lesson.name`.
    pub name: Setting,
    /// `merge.lesson.driver`.
    pub driver: Setting,
}

impl Installed {
    /// Whether anything was written.
    pub fn changed(&self) -> bool {
        self.name == Setting::Set || self.driver == Setting::Set
    }
}

/// Register the merge driver in the configuration of the repository around the bank (its
/// local `.git/config`, never the user's global one). Idempotent: a key already set is left as
/// it is.
pub fn install(repo: &BankRepo) -> Result<Installed, GitError> {
    let mut config = repo.repo.config()?.open_level(git2::ConfigLevel::Local)?;
    let mut set = |key: &str, value: &str| -> Result<Setting, GitError> {
        match config.get_string(key) {
            Ok(v) if v == value => Ok(Setting::Unchanged),
            Ok(v) => Ok(Setting::Kept(v)),
            Err(e) if e.code() == git2::ErrorCode::NotFound => {
                config.set_str(key, value)?;
                Ok(Setting::Set)
            }
            Err(e) => Err(e.into()),
        }
    };
    let name = set(&format!("merge.{DRIVER}.name"), DRIVER_NAME)?;
    let driver = set(&format!("merge.{DRIVER}.driver"), DRIVER_COMMAND)?;
    Ok(Installed {
        config: repo.repo.path().join("config"),
        name,
        driver,
    })
}

/// The `merge` attribute git gives a file of the bank (`bank_rel`, `/`-separated), as the
/// repository's `.gitattributes` files and `info/attributes` say.
pub fn merge_attribute(repo: &BankRepo, bank_rel: &str) -> Result<Option<String>, GitError> {
    let path = repo.repo_path(bank_rel);
    let value = repo.repo.get_attr(
        std::path::Path::new(&path),
        "merge",
        git2::AttrCheckFlags::FILE_THEN_INDEX,
    )?;
    Ok(value.map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::repo::run_git;

    #[test]
    fn install_sets_the_driver_once_and_keeps_a_users_value() {
        let tmp = tempfile::tempdir().unwrap();
        run_git(tmp.path(), &["init", "-q"]).unwrap();
        let bank = tmp.path().join("docs/lessons");
        std::fs::create_dir_all(&bank).unwrap();
        let repo = BankRepo::open(&bank).unwrap();
        let first = install(&repo).unwrap();
        assert!(first.changed());
        assert_eq!((first.name, first.driver), (Setting::Set, Setting::Set));
        let again = install(&repo).unwrap();
        assert!(!again.changed());
        let out = run_git(tmp.path(), &["config", "--local", "merge.lesson.driver"]).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{DRIVER_COMMAND}\n")
        );
        run_git(
            tmp.path(),
            &[
                "config",
                "merge.lesson.driver",
                "/opt/lesson merge-file %O %A %B %P",
            ],
        )
        .unwrap();
        let kept = install(&repo).unwrap();
        assert_eq!(
            kept.driver,
            Setting::Kept("/opt/lesson merge-file %O %A %B %P".into())
        );
    }

    #[test]
    fn the_merge_attribute_of_a_bank_folder() {
        let tmp = tempfile::tempdir().unwrap();
        run_git(tmp.path(), &["init", "-q"]).unwrap();
        let bank = tmp.path().join("lessons");
        std::fs::create_dir_all(bank.join("_log")).unwrap();
        // anchored at the repository's root: does not reach lessons/_log/
        std::fs::write(
            tmp.path().join(".gitattributes"),
            "_log/*.jsonl merge=union\n",
        )
        .unwrap();
        let repo = BankRepo::open(&bank).unwrap();
        assert_eq!(merge_attribute(&repo, "_log/a.jsonl").unwrap(), None);
        std::fs::write(
            bank.join(".gitattributes"),
            "_log/*.jsonl merge=union\n*.md merge=lesson\n",
        )
        .unwrap();
        let repo = BankRepo::open(&bank).unwrap();
        assert_eq!(
            merge_attribute(&repo, "_log/a.jsonl").unwrap().as_deref(),
            Some("union")
        );
        assert_eq!(
            merge_attribute(&repo, "_archive/x.md").unwrap().as_deref(),
            Some("lesson")
        );
    }
}
