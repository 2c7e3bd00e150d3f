//! The checks of the fuzz targets: `tests/it/fuzz_checks.rs`, shared with `cargo test` (which
//! replays the saved inputs under `tests/fuzz/`), and the invariant every diagnostic keeps.

#[path = "../../tests/it/diagnostic_positions.rs"]
pub mod diagnostic_positions;

#[path = "../../tests/it/fuzz_checks.rs"]
pub mod checks;

/// The MCP tools' argument types (`lesson mcp`, compiled into the binary only), for the `mcp`
/// target.
#[cfg(feature = "mcp")]
#[path = "../../src/cli/mcp/params.rs"]
pub mod mcp_params;
