//! `lesson mcp` from outside: a JSON-RPC line client (the bench row and the load test speak
//! the protocol themselves), `cargo xtask mcp-check` (the official Python SDK's stdio client,
//! in a temporary virtualenv) and `cargo xtask mcp-load` (8 servers × 100 `record` calls on one
//! bank, a watcher running, searches in between).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::bench::{tools, Paths};

/// The Python script of `mcp-check`, written into the virtualenv.
const CHECK_SCRIPT: &str = include_str!("../mcp_check.py");
/// "Now" for every server run (ledger events carry it).
const NOW: &str = "2026-11-22T12:00:00Z";
/// How long one answer may take before the client gives up.
const ANSWER_BOUND: Duration = Duration::from_secs(120);

/// A running `lesson mcp`, spoken to in JSON-RPC lines; killed when dropped.
pub struct McpClient {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl McpClient {
    /// Start `LESSON mcp --dir BANK --poll-ms 0` and perform the initialize handshake.
    pub fn start(lesson: &Path, bank: &Path, by: &str) -> anyhow::Result<McpClient> {
        let mut child = Command::new(lesson)
            .args(["mcp", "--poll-ms", "0", "--dir"])
            .arg(bank)
            .env("LESSON_NOW", NOW)
            .env("LESSON_BY", by)
            .env_remove("LESSON_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start {} mcp", lesson.display()))?;
        let stdin = child.stdin.take().context("no stdin")?;
        let stdout = child.stdout.take().context("no stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = McpClient {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        let init = client.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "xtask", "version": "0"}}),
        )?;
        if init["result"]["serverInfo"]["name"] != "lesson" {
            bail!("unexpected initialize answer: {init}");
        }
        client.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(client)
    }

    fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.flush()?;
        Ok(())
    }

    /// Send a request, wait for its answer (notifications are skipped).
    pub fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let start = Instant::now();
        loop {
            let left = ANSWER_BOUND.saturating_sub(start.elapsed());
            let line = self
                .lines
                .recv_timeout(left)
                .with_context(|| format!("no answer to {method}"))?;
            let message: Value = serde_json::from_str(&line)
                .with_context(|| format!("a line of the server's stdout is not JSON: {line}"))?;
            if message["id"] == json!(id) {
                return Ok(message);
            }
        }
    }

    /// Call a tool; its structured content, or an error with the server's envelope.
    pub fn call(&mut self, tool: &str, arguments: Value) -> anyhow::Result<Value> {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        let result = &answer["result"];
        if !result.is_object() {
            bail!("{tool}: {answer}");
        }
        if result["isError"] == true {
            bail!("{tool}: {}", result["structuredContent"]);
        }
        Ok(result["structuredContent"].clone())
    }
}

impl McpClient {
    /// The server's peak resident set size so far, in KiB (`VmHWM`; 0 where unknown).
    pub fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Copy a bank (without its `.lesson/` cache) to `to`.
fn copy_bank(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let name = entry.file_name();
        if name == ".lesson" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type()?.is_dir() {
            copy_bank(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)
                .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        }
    }
    Ok(())
}

/// A fresh scratch directory under `target/mcp/NAME`.
fn scratch(paths: &Paths, name: &str) -> anyhow::Result<PathBuf> {
    let dir = paths.target.join("mcp").join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// `cargo xtask mcp-check`.
pub fn check() -> anyhow::Result<()> {
    let paths = Paths::discover();
    let lesson = tools::build_lesson(&paths)?;
    let dir = scratch(&paths, "check")?;
    let bank = dir.join("lessons");
    copy_bank(&paths.root.join("lessons"), &bank)?;
    let venv = dir.join("venv");
    eprintln!("creating a virtualenv: python3 -m venv {}", venv.display());
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .context("cannot run python3")?;
    if !status.success() {
        bail!("python3 -m venv failed ({status})");
    }
    let python = venv.join("bin").join("python");
    eprintln!("installing the official MCP Python SDK: pip install mcp");
    let status = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "mcp",
        ])
        .status()
        .context("cannot run pip")?;
    if !status.success() {
        bail!("pip install mcp failed ({status})");
    }
    let script = dir.join("mcp_check.py");
    std::fs::write(&script, CHECK_SCRIPT)?;
    let status = Command::new(&python)
        .arg(&script)
        .arg(&lesson)
        .arg(&bank)
        // the SDK's default (it probes server/discover, 2026-07-28) and the initialize
        // handshake of earlier clients
        .args(["auto", "legacy"])
        .env("LESSON_NOW", NOW)
        .status()
        .context("cannot run the check script")?;
    if !status.success() {
        bail!("mcp-check failed ({status})");
    }
    let lint = Command::new(&lesson)
        .args(["lint", "--dir"])
        .arg(&bank)
        .env("LESSON_NOW", NOW)
        .output()?;
    if !lint.status.success() {
        bail!(
            "the bank does not lint clean after the check:\n{}",
            String::from_utf8_lossy(&lint.stdout)
        );
    }
    let text = String::from_utf8_lossy(&lint.stdout);
    println!(
        "lesson lint after the check: exit 0: {}",
        text.lines().last().unwrap_or("")
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// The options of `cargo xtask mcp-load`.
pub struct LoadOptions {
    /// Server processes.
    pub servers: usize,
    /// `record` calls per server.
    pub calls: usize,
}

/// Latencies of one kind of call.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// Outcome events in every ledger of the bank.
fn outcome_events(bank: &Path) -> anyhow::Result<usize> {
    let mut n = 0;
    let dir = bank.join("_log");
    for entry in
        std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?
    {
        let text = std::fs::read_to_string(entry?.path())?;
        n += text
            .lines()
            .filter(|l| l.contains("\"event\":\"outcome\""))
            .count();
    }
    Ok(n)
}

/// `cargo xtask mcp-load`.
pub fn load(options: &LoadOptions) -> anyhow::Result<()> {
    let paths = Paths::discover();
    let lesson = tools::build_lesson(&paths)?;
    let dir = scratch(&paths, "load")?;
    let bank = dir.join("lessons");
    copy_bank(&paths.root.join("lessons"), &bank)?;
    let slugs: Vec<String> = {
        let out = Command::new(&lesson)
            .args(["list", "--format", "json", "--status", "active", "--dir"])
            .arg(&bank)
            .env("LESSON_NOW", NOW)
            .output()?;
        let v: Vec<Value> = serde_json::from_slice(&out.stdout).context("lesson list")?;
        v.iter()
            .filter_map(|l| l["slug"].as_str().map(str::to_string))
            .collect()
    };
    if slugs.is_empty() {
        bail!("the bundled bank has no active lesson");
    }
    let before = outcome_events(&bank)?;
    let mut watcher = Command::new(&lesson)
        .args(["watch", "--debounce", "50", "--dir"])
        .arg(&bank)
        .env("LESSON_NOW", NOW)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start lesson watch")?;
    std::thread::sleep(Duration::from_millis(500));
    eprintln!(
        "{} servers x {} record calls (a search after each), lesson watch running, bank {}",
        options.servers,
        options.calls,
        bank.display()
    );
    let start = Instant::now();
    let workers: Vec<_> = (0..options.servers)
        .map(|p| {
            let lesson = lesson.clone();
            let bank = bank.clone();
            let slugs = slugs.clone();
            let calls = options.calls;
            std::thread::spawn(move || -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
                let mut client = McpClient::start(&lesson, &bank, &format!("agent-{p}"))?;
                let mut records = Vec::with_capacity(calls);
                let mut searches = Vec::with_capacity(calls);
                for i in 0..calls {
                    let slug = &slugs[(p * 7 + i) % slugs.len()];
                    let (applied, run) = match i % 3 {
                        0 => ("followed", "success"),
                        1 => ("contradicted", "success"),
                        _ => ("followed", "failure"),
                    };
                    let t = Instant::now();
                    let r = client.call(
                        "record",
                        json!({"slug": slug, "applied": applied, "run_outcome": run,
                               "evidence": {"kind": "run", "ref": format!("load-{p}-{i}")}}),
                    )?;
                    records.push(t.elapsed());
                    if r["appended"] != true {
                        bail!("record {slug} load-{p}-{i} appended nothing: {r}");
                    }
                    let t = Instant::now();
                    let found = client.call(
                        "search",
                        json!({"request": "review the evidence of a lesson", "role": "reviewer"}),
                    )?;
                    if found["hits"].as_array().is_none_or(Vec::is_empty) {
                        bail!("a search found nothing: {found}");
                    }
                    searches.push(t.elapsed());
                }
                Ok((records, searches))
            })
        })
        .collect();
    let mut records = Vec::new();
    let mut searches = Vec::new();
    let mut errors = Vec::new();
    for w in workers {
        match w.join() {
            Ok(Ok((r, s))) => {
                records.extend(r);
                searches.extend(s);
            }
            Ok(Err(e)) => errors.push(format!("{e:#}")),
            Err(_) => errors.push("a worker panicked".into()),
        }
    }
    let elapsed = start.elapsed();
    let _ = watcher.kill();
    let _ = watcher.wait();
    records.sort();
    searches.sort();
    let expected = options.servers * options.calls;
    let written = outcome_events(&bank)? - before;
    let lint = Command::new(&lesson)
        .args(["lint", "--dir"])
        .arg(&bank)
        .env("LESSON_NOW", NOW)
        .output()?;
    let calls = records.len() + searches.len();
    println!(
        "mcp-load: {} servers x {} records + {} searches on the bundled bank ({} lessons), lesson watch running",
        options.servers,
        options.calls,
        options.calls,
        slugs.len()
    );
    println!(
        "  {calls} calls in {:.2} s: {:.0} calls/s ({:.0} records/s)",
        elapsed.as_secs_f64(),
        calls as f64 / elapsed.as_secs_f64(),
        records.len() as f64 / elapsed.as_secs_f64()
    );
    println!(
        "  record: p50 {}, p99 {}, max {}",
        ms(percentile(&records, 0.5)),
        ms(percentile(&records, 0.99)),
        ms(records.last().copied().unwrap_or_default())
    );
    println!(
        "  search: p50 {}, p99 {}, max {}",
        ms(percentile(&searches, 0.5)),
        ms(percentile(&searches, 0.99)),
        ms(searches.last().copied().unwrap_or_default())
    );
    println!(
        "  outcome events written: {written} of {expected}; errors: {}",
        errors.len()
    );
    println!(
        "  lesson lint: exit {}: {}",
        lint.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&lint.stdout)
            .lines()
            .last()
            .unwrap_or("")
    );
    for e in &errors {
        println!("  error: {e}");
    }
    if !errors.is_empty() || written != expected || !lint.status.success() {
        bail!("mcp-load failed: lost writes, errors or a bank that does not lint clean");
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
