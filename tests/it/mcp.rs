//! `lesson mcp`: the server spawned on a copy of a bank and spoken to in JSON-RPC lines over
//! its stdin and stdout, as an MCP client does (no SDK here). Its writes must be the CLI's,
//! byte for byte; several servers and a watcher on one bank must lose nothing.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::sandbox::{diff, Sandbox, BIN, NOW};

/// The bundled bank (the repository's `lessons/`).
const BANK: &str = "lessons";
/// A request some lessons of the bundled bank apply to (with the role `reviewer`).
const QUERY: &str = "review the evidence of a lesson";
/// How long any one answer may take.
const BOUND: Duration = Duration::from_secs(60);

/// A running `lesson mcp`, killed when dropped.
pub struct Server {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
    /// Notifications received while waiting for answers.
    pub notifications: Vec<Value>,
}

impl Server {
    /// Start `lesson mcp --dir ROOT` with the sandbox's clock and recorder, and initialize.
    pub fn start(root: &Path) -> Server {
        let mut child = Command::new(BIN)
            .args(["mcp", "--poll-ms", "200", "--dir"])
            .arg(root)
            .env("LESSON_NOW", NOW)
            .env("LESSON_BY", "tester")
            .env_remove("LESSON_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut s = Server {
            child,
            stdin,
            lines,
            next_id: 0,
            notifications: Vec::new(),
        };
        let init = s.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "tests/it/mcp.rs", "version": "0"}
            }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "lesson", "{init}");
        assert!(
            init["result"]["capabilities"]["tools"].is_object(),
            "{init}"
        );
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Send a request and wait for its answer (notifications that come first are kept).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let start = Instant::now();
        loop {
            let left = BOUND.saturating_sub(start.elapsed());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to {method} ({e})"));
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout holds a line that is not JSON ({e}): {line}"));
            if message["id"] == json!(id) {
                return message;
            }
            assert!(
                message.get("id").is_none(),
                "an answer to another request: {message}"
            );
            self.notifications.push(message);
        }
    }

    /// Call a tool; its result (`structuredContent`, `isError`).
    pub fn call(&mut self, tool: &str, arguments: Value) -> (Value, bool) {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &answer["result"];
        assert!(result.is_object(), "tools/call {tool}: {answer}");
        let is_error = result["isError"].as_bool().unwrap_or(false);
        (result["structuredContent"].clone(), is_error)
    }

    /// Call a tool that must succeed.
    pub fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let (value, is_error) = self.call(tool, arguments.clone());
        assert!(!is_error, "{tool} {arguments}: {value}");
        value
    }

    /// Wait up to `within` for a notification named `method`.
    pub fn wait_for_notification(&mut self, method: &str, within: Duration) -> bool {
        let start = Instant::now();
        loop {
            if self.notifications.iter().any(|n| n["method"] == method) {
                return true;
            }
            let left = within.saturating_sub(start.elapsed());
            if left.is_zero() {
                return false;
            }
            if let Ok(line) = self.lines.recv_timeout(left) {
                self.notifications
                    .push(serde_json::from_str(&line).expect("a JSON line"));
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const CANDIDATE: &str = r#"{"slug": "close-the-stdin-of-a-server", "title": "Close a child server's stdin to stop it.",
  "trigger": {"description": "when a test spawns a stdio server and must stop it", "tags": ["testing"]},
  "outcome": "success",
  "evidence": [{"kind": "run", "ref": "run-mcp-1", "note": "the server exited on EOF"}],
  "body": "\n# Close a child server's stdin to stop it\n\n## Why\n\nA stdio server ends when its input ends.\n\n## How to apply\n\nDrop the pipe, then wait for the process.\n\n## Counter-example\n\nKilling it loses what it had not flushed.\n"}"#;

#[test]
fn tools_change_the_bank_as_the_cli_does() {
    let by_mcp = Sandbox::with_indexed_bank(BANK);
    let by_cli = Sandbox::with_indexed_bank(BANK);
    let before = by_mcp.tree();
    assert_eq!(before, by_cli.tree());

    let mut server = Server::start(&by_mcp.bank());
    let tools = server.request("tools/list", json!({}));
    let mut names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        ["get", "lint", "list", "propose", "record", "review", "search"]
    );
    for t in tools["result"]["tools"].as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }

    // search: the CLI's hits, with score parts, and its prompt block
    let found = server.ok(
        "search",
        json!({"request": QUERY, "role": "reviewer", "k": 3}),
    );
    let cli = by_cli.run(&[
        "search", QUERY, "--role", "reviewer", "-k", "3", "--format", "prompt",
    ]);
    assert_eq!(cli.code, 0, "{cli}");
    assert_eq!(found["prompt"].as_str().unwrap(), cli.stdout);
    let hits = found["hits"].as_array().unwrap();
    assert!(!hits.is_empty(), "{found}");
    assert!(
        hits[0]["score"]["similarity"].as_f64().unwrap() > 0.0,
        "{found}"
    );
    let slug = hits[0]["slug"].as_str().unwrap().to_string();

    // get: the lesson, status, counts and ledger
    let got = server.ok("get", json!({"slug": slug}));
    assert_eq!(got["lesson"]["slug"], slug.as_str());
    assert_eq!(got["status"], "active");
    assert_eq!(got["counts"]["backed_by_ledger"], true, "{got}");
    assert!(got["ledger"]["events"].as_u64().unwrap() >= 1, "{got}");

    // record: the same files as `lesson record`
    let recorded = server.ok(
        "record",
        json!({"slug": slug, "applied": "followed", "run_outcome": "success",
               "evidence": {"kind": "run", "ref": "run-42", "note": "worked"}}),
    );
    assert_eq!(recorded["appended"], true, "{recorded}");
    let cli = by_cli.run(&[
        "record",
        &slug,
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:run-42:worked",
    ]);
    assert_eq!(cli.code, 0, "{cli}");
    let after_record = by_mcp.tree();
    assert_ne!(after_record, before);
    assert_eq!(
        diff(&before, &after_record),
        diff(&before, &by_cli.tree()),
        "record through MCP and through the CLI differ"
    );
    assert_eq!(after_record, by_cli.tree());

    // a retry changes nothing
    let again = server.ok(
        "record",
        json!({"slug": slug, "applied": "followed", "run_outcome": "success",
               "evidence": {"kind": "run", "ref": "run-42", "note": "worked"}}),
    );
    assert_eq!(again["appended"], false, "{again}");
    assert_eq!(by_mcp.tree(), after_record);

    // propose: the same files as `lesson add` of the same candidate and origin
    let candidate: Value = serde_json::from_str(CANDIDATE).unwrap();
    let proposed = server.ok(
        "propose",
        json!({"candidates": candidate, "origin": "candidate.json"}),
    );
    assert_eq!(proposed["admitted"][0]["action"], "created", "{proposed}");
    by_cli.write("candidate.json", CANDIDATE);
    let cli = by_cli.run(&["add", "candidate.json"]);
    assert_eq!(cli.code, 0, "{cli}");
    assert_eq!(
        diff(&after_record, &by_mcp.tree()),
        diff(&after_record, &by_cli.tree()),
        "propose through MCP and add through the CLI differ"
    );
    assert_eq!(by_mcp.tree(), by_cli.tree());
    // the set of lessons changed: the client is told
    assert!(
        server.wait_for_notification("notifications/resources/list_changed", BOUND),
        "no list_changed after propose: {:?}",
        server.notifications
    );

    // the lint tool agrees with `lesson lint --output-format json`
    let lint = server.ok("lint", json!({}));
    let cli = by_cli.run(&["lint", "--output-format", "json"]);
    let cli_json: Value = serde_json::from_str(&cli.stdout).unwrap();
    // the server names files under the bank's root as given to it (absolute here), the CLI as
    // given on its command line
    let named_by_file = |v: &Value| -> Vec<Value> {
        let mut v = v.as_array().unwrap().clone();
        for d in &mut v {
            let path = d["path"].as_str().unwrap();
            d["path"] = Value::from(path.rsplit('/').next().unwrap());
        }
        v
    };
    assert_eq!(
        named_by_file(&lint["diagnostics"]),
        named_by_file(&cli_json)
    );
    assert_eq!(lint["errors"], 0, "{lint}");
}

#[test]
fn errors_carry_aip11_codes_and_write_nothing() {
    let s = Sandbox::with_indexed_bank(BANK);
    let before = s.tree();
    let mut server = Server::start(&s.bank());
    let code = |v: &Value| v["error"]["code"].as_str().unwrap_or_default().to_string();

    let (v, err) = server.call("get", json!({"slug": "no-such-lesson"}));
    assert!(err, "{v}");
    assert_eq!(code(&v), "not_found", "{v}");
    assert_eq!(v["ok"], false);

    let (v, err) = server.call("get", json!({"slug": "../etc/passwd"}));
    assert!(err && code(&v) == "invalid_request", "{v}");

    let (v, err) = server.call(
        "record",
        json!({"slug": "keep-triggers-narrow", "applied": "followed", "run_outcome": "success",
               "evidence": {"kind": "telepathy", "ref": "x"}}),
    );
    assert!(err && code(&v) == "invalid_request", "{v}");

    // a batch with one invalid candidate (its slug): refused as a whole, the findings as cause
    let bad = json!([
        serde_json::from_str::<Value>(CANDIDATE).unwrap(),
        {"slug": "Not A Slug", "title": "Name a lesson badly.",
         "trigger": {"description": "when a slug has spaces", "tags": ["testing"]},
         "outcome": "success", "evidence": [{"kind": "run", "ref": "run-9"}]}
    ]);
    let (v, err) = server.call("propose", json!({"candidates": bad}));
    assert!(err, "{v}");
    assert_eq!(code(&v), "lesson_invalid", "{v}");
    let findings = v["error"]["cause"]["diagnostics"].as_array().unwrap();
    assert!(findings.iter().any(|d| d["code"] == "S006"), "{v}");

    // an expired lesson is the error `expired` outside archival reads
    let (v, err) = server.call(
        "get",
        json!({"slug": "hold-rule-renames-until-the-registry-freezes"}),
    );
    assert!(err && code(&v) == "expired", "{v}");
    let got = server.ok(
        "get",
        json!({"slug": "hold-rule-renames-until-the-registry-freezes", "include_expired": true}),
    );
    assert_eq!(got["status"], "expired", "{got}");

    let (v, err) = server.call("propose", json!({"markdown": "not a lesson at all"}));
    assert!(err && code(&v) == "lesson_invalid", "{v}");

    let (v, err) = server.call("lint", json!({"paths": ["../../"]}));
    assert!(err && code(&v) == "invalid_request", "{v}");

    // an argument of the wrong shape is a JSON-RPC error, not a crash
    let answer = server.request(
        "tools/call",
        json!({"name": "record", "arguments": {"slug": 3}}),
    );
    assert!(
        answer["error"].is_object() || answer["result"]["isError"] == true,
        "{answer}"
    );
    // and the server still answers
    server.ok("search", json!({"request": QUERY}));
    assert_eq!(s.tree(), before, "a refused call wrote something");
}

#[test]
fn lessons_are_resources_and_the_prompt_is_the_block() {
    let s = Sandbox::with_indexed_bank(BANK);
    let mut server = Server::start(&s.bank());
    let list = server.request("resources/list", json!({}));
    let resources = list["result"]["resources"].as_array().unwrap();
    let live = s.run(&["list", "--format", "json"]);
    let live: Vec<Value> = serde_json::from_str(&live.stdout).unwrap();
    assert_eq!(resources.len(), live.len(), "{list}");
    let first = &resources[0];
    assert_eq!(first["mimeType"], "text/markdown");
    let uri = first["uri"].as_str().unwrap();
    assert!(uri.starts_with("lesson://"), "{uri}");
    let read = server.request("resources/read", json!({"uri": uri}));
    let text = read["result"]["contents"][0]["text"].as_str().unwrap();
    let slug = &uri["lesson://".len()..];
    let shown = s.run(&["show", slug]);
    assert!(shown.stdout.ends_with(text), "{read}");

    let missing = server.request("resources/read", json!({"uri": "lesson://no-such-lesson"}));
    assert_eq!(
        missing["error"]["data"]["error"]["code"], "not_found",
        "{missing}"
    );

    let prompts = server.request("prompts/list", json!({}));
    assert_eq!(
        prompts["result"]["prompts"][0]["name"], "lessons_for",
        "{prompts}"
    );
    let prompt = server.request(
        "prompts/get",
        json!({"name": "lessons_for", "arguments": {"request": QUERY, "role": "reviewer"}}),
    );
    let block = prompt["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    let cli = s.run(&["search", QUERY, "--role", "reviewer"]);
    assert!(!cli.stdout.is_empty(), "{cli}");
    assert_eq!(block, cli.stdout);
}

#[test]
fn resources_list_is_paginated() {
    let s = Sandbox::with_indexed_bank(BANK);
    // more lessons than a page: copies of one lesson under new slugs
    let source = std::fs::read_to_string(s.bank().join("keep-triggers-narrow.md")).unwrap();
    for i in 0..120 {
        let slug = format!("keep-triggers-narrow-{i:03}");
        let text = source.replace("slug: keep-triggers-narrow", &format!("slug: {slug}"));
        std::fs::write(s.bank().join(format!("{slug}.md")), text).unwrap();
    }
    let mut server = Server::start(&s.bank());
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = server.request("resources/list", params);
        for r in page["result"]["resources"].as_array().unwrap() {
            seen.push(r["uri"].as_str().unwrap().to_string());
        }
        match page["result"]["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len());
    assert!(seen.len() > 120, "{}", seen.len());
}

/// The headline: 8 servers × N `record` calls on one bank, a watcher running and searches in
/// between: no lost write, no error, counts = ledgers, lint clean.
#[test]
fn eight_servers_and_a_watcher_lose_no_write() {
    const SERVERS: usize = 8;
    const CALLS: usize = 10;
    let s = Sandbox::with_indexed_bank(BANK);
    let root = s.bank();
    let mut watcher = Command::new(BIN)
        .args(["watch", "--debounce", "50", "--dir"])
        .arg(&root)
        .env("LESSON_NOW", NOW)
        .env_remove("LESSON_DIR")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let slugs: Vec<String> = {
        let list = s.run(&["list", "--format", "json", "--status", "active"]);
        let v: Vec<Value> = serde_json::from_str(&list.stdout).unwrap();
        v.iter()
            .map(|l| l["slug"].as_str().unwrap().to_string())
            .collect()
    };
    let before: Vec<u64> = slugs.iter().map(|slug| outcomes(&root, slug)).collect();
    // how many lessons the searches match (counts change under the writes; the set does not)
    let matched = {
        let mut server = Server::start(&root);
        let found = server.ok("search", json!({"request": QUERY, "role": "reviewer"}));
        assert!(found["matched"].as_u64().unwrap() > 0, "{found}");
        found["matched"].clone()
    };
    let threads: Vec<_> = (0..SERVERS)
        .map(|p| {
            let root = root.clone();
            let slugs = slugs.clone();
            let matched = matched.clone();
            std::thread::spawn(move || {
                let mut server = Server::start(&root);
                for i in 0..CALLS {
                    let slug = &slugs[(p + i) % slugs.len()];
                    let (applied, run) = match i % 3 {
                        0 => ("followed", "success"),
                        1 => ("contradicted", "success"),
                        _ => ("followed", "failure"),
                    };
                    server.ok(
                        "record",
                        json!({"slug": slug, "applied": applied, "run_outcome": run,
                               "evidence": {"kind": "run", "ref": format!("run-{p}-{i}")},
                               "by": format!("agent-{p}")}),
                    );
                    if i % 2 == 0 {
                        // never an error, and never a hit dropped because the very lessons it
                        // finds are being written (their files are checked again, at last under
                        // the bank lock the writers take)
                        let found =
                            server.ok("search", json!({"request": QUERY, "role": "reviewer"}));
                        assert_eq!(found["matched"], matched, "{found}");
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a server thread failed");
    }
    // once the writes are over, the answer is whole again
    let mut server = Server::start(&root);
    let found = server.ok("search", json!({"request": QUERY, "role": "reviewer"}));
    assert!(!found["hits"].as_array().unwrap().is_empty(), "{found}");
    drop(server);
    let _ = watcher.kill();
    let _ = watcher.wait();
    let after: u64 = slugs.iter().map(|slug| outcomes(&root, slug)).sum();
    assert_eq!(
        after - before.iter().sum::<u64>(),
        (SERVERS * CALLS) as u64,
        "writes were lost"
    );
    // counts = ledgers, nothing torn, _index.md current
    let lint = s.run(&["lint"]);
    assert_eq!(lint.code, 0, "{lint}");
    // no ledger finding: counts = ledgers (L001), no torn line (L002), none unledgered (L004)
    for code in ["[L001]", "[L002]", "[L004]"] {
        assert!(!lint.stdout.contains(code), "{lint}");
    }
}

/// Outcome events in a lesson's ledger.
fn outcomes(root: &Path, slug: &str) -> u64 {
    let text = std::fs::read_to_string(root.join("_log").join(format!("{slug}.jsonl")))
        .unwrap_or_default();
    text.lines()
        .filter(|l| l.contains("\"event\":\"outcome\""))
        .count() as u64
}

/// A lesson an editor writes by hand, about `word`.
fn hand_written(slug: &str, word: &str) -> String {
    format!(
        "---\nschema: learning/v1\nslug: {slug}\ntitle: Grease the {word} before a long run.\ntrigger:\n  description: A run drives the {word} for hours.\n  tags: [maintenance]\noutcome: success\nevidence:\n  - kind: run\n    ref: r-hand-1\nsuccess_count: 0\nfailure_count: 0\n---\n\n# Grease the {word} before a long run.\n\n## What to do (or avoid)\n\n- Grease the {word} first.\n"
    )
}

/// The slugs and success counts of a search's hits.
fn hits_of(found: &Value) -> Vec<(String, u64)> {
    found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["slug"].as_str().unwrap().to_string(),
                h["success_count"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_search_sees_what_other_processes_wrote_just_before_it() {
    let s = Sandbox::with_indexed_bank(BANK);
    let root = s.bank();
    // no watcher runs: the server follows the bank itself
    let mut server = Server::start(&root);
    let ask = json!({"request": "grease the flywheel"});
    assert!(hits_of(&server.ok("search", ask.clone())).is_empty());

    // an editor writes a new lesson: the very next search finds it
    std::fs::write(
        root.join("grease-the-flywheel.md"),
        hand_written("grease-the-flywheel", "flywheel"),
    )
    .unwrap();
    let slug = "grease-the-flywheel".to_string();
    assert_eq!(
        hits_of(&server.ok("search", ask.clone())),
        [(slug.clone(), 0)]
    );

    // `lesson record` in another process: the count follows at once, in search and get
    let cli = s.run(&[
        "record",
        &slug,
        "--followed",
        "--run-outcome",
        "success",
        "--evidence",
        "run:r-cli-1",
    ]);
    assert_eq!(cli.code, 0, "{cli}");
    assert_eq!(
        hits_of(&server.ok("search", ask.clone())),
        [(slug.clone(), 1)]
    );
    let got = server.ok("get", json!({"slug": slug}));
    assert_eq!(got["counts"]["success_count"], 1, "{got}");

    // another server's record
    let mut other = Server::start(&root);
    other.ok(
        "record",
        json!({"slug": slug, "applied": "followed", "run_outcome": "success",
               "evidence": {"kind": "run", "ref": "r-other-1"}}),
    );
    assert_eq!(
        hits_of(&server.ok("search", ask.clone())),
        [(slug.clone(), 2)]
    );
    assert_eq!(
        server.ok("get", json!({"slug": slug}))["counts"]["success_count"],
        2
    );

    // a lesson moved into a new directory is still found there; a deleted one is gone
    std::fs::create_dir(root.join("machines")).unwrap();
    std::fs::rename(
        root.join("grease-the-flywheel.md"),
        root.join("machines/grease-the-flywheel.md"),
    )
    .unwrap();
    let found = server.ok("search", ask.clone());
    assert!(
        found["hits"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("machines/grease-the-flywheel.md"),
        "{found}"
    );
    std::fs::remove_file(root.join("machines/grease-the-flywheel.md")).unwrap();
    assert!(hits_of(&server.ok("search", ask)).is_empty());
}

#[test]
fn get_reads_one_lesson_with_its_status_and_provenance() {
    let s = Sandbox::with_indexed_bank(BANK);
    let root = s.bank();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&root)
            .env("GIT_AUTHOR_NAME", "Ada")
            .env("GIT_AUTHOR_EMAIL", "ada@example.org")
            .env("GIT_COMMITTER_NAME", "Ada")
            .env("GIT_COMMITTER_EMAIL", "ada@example.org")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "the bank"]);
    let first = git(&["rev-parse", "HEAD"]);

    let mut server = Server::start(&root);
    let slug = "keep-triggers-narrow";
    let got = server.ok("get", json!({"slug": slug}));
    assert_eq!(got["lesson"]["slug"], slug, "{got}");
    assert_eq!(got["status"], "active");
    assert_eq!(got["lesson"]["created"]["commit"], first.as_str(), "{got}");
    assert_eq!(got["lesson"]["changed"]["commit"], first.as_str(), "{got}");
    assert_eq!(got["lesson"]["changed"]["author"], "Ada", "{got}");
    // the view is `lesson show --format json`'s
    let shown = s.run(&["show", slug, "--format", "json"]);
    assert_eq!(shown.code, 0, "{shown}");
    let mut shown: Value = serde_json::from_str(&shown.stdout).unwrap();
    // paths as given: the server's bank root is absolute, the CLI's relative
    let mut view = got["lesson"].clone();
    assert!(view["path"]
        .as_str()
        .unwrap()
        .ends_with(&shown["path"].as_str().unwrap()[1..]));
    view["path"] = Value::Null;
    shown["path"] = Value::Null;
    assert_eq!(view, shown);

    // a commit that changes the lesson moves its `changed` stamp (HEAD moved, no file event
    // the server waits for)
    let path = root.join(format!("{slug}.md"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("{text}\n- Narrow it again after each false hit.\n"),
    )
    .unwrap();
    git(&["commit", "-q", "-am", "edit the lesson"]);
    let second = git(&["rev-parse", "HEAD"]);
    let got = server.ok("get", json!({"slug": slug}));
    assert_eq!(got["lesson"]["created"]["commit"], first.as_str(), "{got}");
    assert_eq!(got["lesson"]["changed"]["commit"], second.as_str(), "{got}");

    // a lesson another supersedes says so, as `lesson show` does
    let newer = hand_written("keep-triggers-narrower", "trigger").replace(
        "outcome: success",
        &format!("supersedes: [{slug}]\noutcome: success"),
    );
    std::fs::write(root.join("keep-triggers-narrower.md"), newer).unwrap();
    let got = server.ok("get", json!({"slug": slug}));
    assert_eq!(got["status"], "superseded", "{got}");
    let shown = s.run(&["show", slug, "--format", "json"]);
    let shown: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(got["lesson"]["status"], shown["status"]);
    assert_eq!(
        got["lesson"]["superseded_by"], shown["superseded_by"],
        "{got}"
    );

    // an unknown slug: not found, with the nearest one
    let (err, is_error) = server.call("get", json!({"slug": "keep-trigers-narrow"}));
    assert!(is_error, "{err}");
    assert_eq!(err["error"]["code"], "not_found", "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did you mean"),
        "{err}"
    );
}

#[test]
fn a_search_with_a_run_id_is_logged_and_a_record_with_it_counts_as_followed() {
    let s = Sandbox::with_indexed_bank(BANK);
    let root = s.bank();
    let mut server = Server::start(&root);
    let found = server.ok(
        "search",
        json!({"request": QUERY, "role": "reviewer", "k": 2, "run_id": "r_mcp"}),
    );
    let hits = found["hits"].as_array().unwrap();
    assert!(!hits.is_empty(), "{found}");
    let slug = hits[0]["slug"].as_str().unwrap().to_string();
    let log = std::fs::read_to_string(root.join("_log/_shown.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1, "one line for the search: {log}");
    assert!(log.contains("\"run\":\"r_mcp\""), "{log}");
    // an unusable run id is refused, and nothing is logged
    let (refused, is_error) = server.call("search", json!({"request": QUERY, "run_id": ""}));
    assert!(is_error, "{refused}");
    assert_eq!(refused["error"]["code"], "invalid_request", "{refused}");
    server.ok(
        "record",
        json!({"slug": slug, "applied": "followed", "run_outcome": "success",
               "evidence": {"kind": "work-item", "ref": "pr-1"}, "run_id": "r_mcp"}),
    );
    let got = server.ok("get", json!({"slug": slug}));
    let view = &got["lesson"];
    assert_eq!(
        (
            &view["shown"],
            &view["followed"],
            &view["helped"],
            &view["utility"]
        ),
        (&json!(1), &json!(1), &json!(1), &json!(1.0)),
        "{got}"
    );
    let listed = server.ok("list", json!({}));
    let row = listed["lessons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["slug"] == slug.as_str())
        .unwrap();
    assert_eq!(row["shown"], 1, "{row}");
    assert_eq!(
        std::fs::read_to_string(root.join("_log/_shown.jsonl")).unwrap(),
        log
    );
}
