//! `lesson mcp`: the bank as a Model Context Protocol server over standard input and output
//! (the official Rust SDK, `rmcp`). A second front end beside the command line: it translates
//! MCP requests into the library calls the commands make, and the library's answers into tool
//! results, resources and a prompt. Logs go to standard error; standard output carries the
//! protocol only.

mod params;
mod server;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use rmcp::ServiceExt;

/// Flags of `lesson mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// How often to look for changes to the bank made by others (a watcher, an editor, another
    /// server), to tell the client when the list of lessons changed; 0 turns it off
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    poll_ms: u64,
}

/// Run `lesson mcp` until the client closes standard input.
pub fn run(root: &Path, args: McpArgs) -> anyhow::Result<ExitCode> {
    // the clock is checked once, so a bad LESSON_NOW is a usage error at start, not a tool error
    super::now()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    runtime.block_on(async move {
        let server = server::Lessons::new(root.to_path_buf());
        let poll = (args.poll_ms > 0).then(|| Duration::from_millis(args.poll_ms));
        let running = server
            .clone()
            .serve(rmcp::transport::stdio())
            .await
            .context("the MCP handshake failed")?;
        if let Some(every) = poll {
            server.watch_for_changes(every);
        }
        running.waiting().await.context("the MCP server stopped")?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
