//! The bank's git repository, read and written in process with `git2` (vendored libgit2): the
//! repository around the bank, the status and commits of bank files, and history (provenance).
//! The network (fetch, push) is the system `git`'s (`repo`), as cargo's `net.git-fetch-with-cli`.

pub mod driver;
pub mod log;
pub mod provenance;
pub mod repo;
