//! Three-way merges of bank files by the bank's rules (ledgers by union, counts and evidence of lesson files, `_index.md` rows), shared by `lesson sync` and the git merge driver.
