//! What a change does to the bank, between two revisions: the pull-request checks of
//! `lesson lint --base` and the review summary of `lesson diff`.
