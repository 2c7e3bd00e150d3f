//! A retriever a long-lived process keeps open (`lesson mcp`, an embedding runtime): before
//! each search it is made as fresh as `lesson search` would find the bank, through the same
//! two checks, without loading the index again when nothing changed.

use super::{marker, RetrieveError, Retriever};

/// How [`Retriever::keep_fresh`] made sure the index is current.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// A live watcher vouches for the very index held: nothing was checked.
    Vouched,
    /// A live watcher vouches for another index (it applied changes since): that index was
    /// loaded, as [`Retriever::open_fast`] loads it.
    Reloaded,
    /// No watcher: the files were stat-checked against the index held, as
    /// [`Retriever::open`] checks them, and what changed was patched.
    Checked,
}

impl Retriever {
    /// Make the index held as current as a fresh [`Retriever::open_fast`] would: when a live
    /// `lesson watch` vouches for it, nothing is read; when the watcher vouches for a newer
    /// index, that one is loaded; without a watcher, the files are stat-checked. A search
    /// after this sees every change a new `lesson search` process would see.
    pub fn keep_fresh(&mut self) -> Result<Freshness, RetrieveError> {
        match marker::vouched(self.root()) {
            Some(v) if v == self.identity() => Ok(Freshness::Vouched),
            Some(_) => {
                let root = self.root().to_path_buf();
                *self = Retriever::open_fast(&root)?;
                Ok(Freshness::Reloaded)
            }
            None => {
                self.refresh()?;
                Ok(Freshness::Checked)
            }
        }
    }

    /// Read the ranking's recency input (each lesson's last commit) again, for a process that
    /// keeps its index current by other means (a watcher of its own, see
    /// `lesson::watch::follow`) and saw the repository's `HEAD` move.
    pub fn refresh_provenance(&mut self) {
        self.apply_provenance();
    }
}
