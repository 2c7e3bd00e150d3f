//! Provenance: when each lesson was created and last changed, by which commit and author, read from history in one pass for the whole bank.
