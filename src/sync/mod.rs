//! `lesson sync`: commit the bank's pending files, fetch, merge by the bank's rules, re-derive,
//! push; retry on a non-fast-forward race.
