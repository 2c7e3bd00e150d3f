//! The integration tests, in one binary (one link, one harness): each module tests one command
//! or one part of the library from outside, the way a user or an embedder meets it.
//!
//! `sandbox` is the harness (a temp bank, the `lesson` binary run in it, its bytes before and
//! after); `diagnostic_positions` is the invariant every diagnostic keeps. Fixtures stay in
//! `tests/fixtures/`, snapshots in `snapshots/` beside this file (named `it__MODULE__TEST.snap`),
//! proptest regressions beside each module (`MODULE.proptest-regressions`).

mod add;
mod carriers;
mod cli;
mod conventions;
mod corpora;
mod counts;
mod dedup;
mod defects;
mod diagnostic_positions;
mod distill;
mod edits;
mod embed;
mod fast_paths;
mod faults;
mod fuzz;
mod fuzz_checks;
mod hostile;
mod index_md;
mod layers;
mod ledger;
mod left_out;
mod lint_defects;
mod listing;
mod man;
#[cfg(feature = "mcp")]
mod mcp;
/// The MCP tools' argument types, for the `mcp` fuzz check.
#[cfg(feature = "mcp")]
#[path = "../../src/cli/mcp/params.rs"]
#[allow(dead_code)]
mod mcp_params;
mod parse_props;
mod plain_git;
mod pr;
mod project_bank;
mod provenance;
mod quarantine;
mod report;
mod retrieve;
mod rules;
mod sandbox;
mod schema;
mod semantic;
mod spec_examples;
mod sync;
mod usage;
mod watch;
mod writer_props;

/// A property test's case count: `n`, times `LESSON_STRESS` when set (`cargo xtask stress`
/// runs the suite with more cases).
pub fn cases(n: u32) -> u32 {
    n * std::env::var("LESSON_STRESS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}
