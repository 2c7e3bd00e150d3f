//! The MCP handler: tools, resources and the `lessons_for` prompt, each a translation of an
//! MCP request into the library call the matching command makes.
//!
//! Every failure is a tool result with `isError` and AIP-11's error envelope as its structured
//! content (`{ok: false, error: {code, message, retryable?, cause?}}`, see
//! [`lesson::report::envelope`]); resources and prompts answer a JSON-RPC error with the same
//! envelope as `data`. A panic in a handler becomes the error `internal`, never a dead server.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    ListPromptsResult, ListResourcesResult, PaginatedRequestParams, Prompt, PromptArgument,
    PromptMessage, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{tool, tool_handler, tool_router, ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::{json, Value};

use lesson::curate::add;
use lesson::curate::record;
use lesson::curate::show::{self, Found};
use lesson::curate::stack;
use lesson::layout::bank_relative;
use lesson::lint::{self, Selection, Summary};
use lesson::report::envelope::{self, Envelope, ErrorCode};
use lesson::report::lessons::LessonJson;
use lesson::report::writes::{self, LedgerSummary};
use lesson::retrieve::{index::Listed, Retriever};
use lesson::watch::follow::Follower;

use super::params;

/// Resources per `resources/list` page.
const PAGE: usize = 100;
/// The URI scheme of a lesson resource: `lesson://SLUG`.
const SCHEME: &str = "lesson://";

type Outcome = Result<Value, Envelope>;

/// The server: one bank, its retrieval index kept open between calls.
#[derive(Clone)]
pub struct Lessons {
    state: Arc<State>,
}

struct State {
    root: PathBuf,
    /// Opened on the first call that needs it, then kept current (the warm path).
    retriever: Mutex<Option<Follower>>,
    /// The client, once initialized: where `notifications/resources/list_changed` goes.
    peer: Mutex<Option<Peer<RoleServer>>>,
    /// The live slugs last seen, sorted: a change is a `list_changed` notification.
    slugs: Mutex<Option<Vec<String>>>,
}

fn internal(what: &str, e: impl std::fmt::Display) -> Envelope {
    Envelope::new(ErrorCode::Internal, format!("{what}: {e}"))
}

fn invalid(message: impl Into<String>) -> Envelope {
    Envelope::new(ErrorCode::InvalidRequest, message)
}

/// A tool's answer: the value as structured content, or the envelope with `isError`.
fn tool_result(name: &str, outcome: Outcome) -> Result<CallToolResult, ErrorData> {
    Ok(match outcome {
        Ok(value) => CallToolResult::structured(value),
        Err(env) => {
            eprintln!(
                "lesson mcp: {name}: {}: {}",
                env.error.code.as_str(),
                env.error.message
            );
            CallToolResult::structured_error(env.to_value())
        }
    })
}

/// A JSON-RPC error carrying the envelope as `data`.
fn rpc_error(env: Envelope) -> ErrorData {
    let message = format!("{}: {}", env.error.code.as_str(), env.error.message);
    match env.error.code {
        ErrorCode::NotFound => ErrorData::resource_not_found(message, Some(env.to_value())),
        ErrorCode::InvalidRequest | ErrorCode::Expired => {
            ErrorData::invalid_params(message, Some(env.to_value()))
        }
        _ => ErrorData::internal_error(message, Some(env.to_value())),
    }
}

/// Run `f`, turning a panic into the error `internal`.
fn guarded<T>(f: impl FnOnce() -> Result<T, Envelope>) -> Result<T, Envelope> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Err(internal(
                "the server hit a bug (nothing half-written: writes are atomic)",
                what,
            ))
        }
    }
}

/// An error of the command line's helpers (clock, recorder id): a bad argument or environment.
fn from_anyhow(e: anyhow::Error) -> Envelope {
    invalid(format!("{e:#}"))
}

impl Lessons {
    /// A server for the bank at `root`.
    pub fn new(root: PathBuf) -> Lessons {
        Lessons {
            state: Arc::new(State {
                root,
                retriever: Mutex::new(None),
                peer: Mutex::new(None),
                slugs: Mutex::new(None),
            }),
        }
    }

    fn root(&self) -> &Path {
        &self.state.root
    }

    /// Run `f` on the retriever, opened (once) and made as current as a new `lesson search`
    /// would find the bank: the server follows the bank's changes with its own watcher
    /// ([`Follower`]), else checks the files as `lesson search` does.
    fn with_retriever<T>(&self, f: impl FnOnce(&mut Retriever) -> Outcome2<T>) -> Outcome2<T> {
        let mut held = self
            .state
            .retriever
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match held.as_mut() {
            Some(follower) => {
                if let Err(e) = follower.sync() {
                    *held = None;
                    return Err(Envelope::of_retrieve(&e));
                }
            }
            None => {
                let follower =
                    Follower::open(self.root()).map_err(|e| Envelope::of_retrieve(&e))?;
                if let Err(why) = follower.following() {
                    eprintln!("lesson mcp: not following the bank's changes ({why}); each search checks the files");
                }
                *held = Some(follower);
                let r = held.as_mut().expect("just set").retriever();
                if let Some(problem) = r.semantic_problem() {
                    eprintln!(
                        "lesson mcp: warning: [retrieve] model: {problem}; searches are lexical"
                    );
                }
            }
        }
        let r = held.as_mut().expect("opened above").retriever();
        let out = f(r);
        if out.is_err() {
            // a damaged state is not kept: the next call opens the index again
            *held = None;
        }
        out
    }

    /// The live lessons as the index lists them (`_index.md`'s set), sorted by slug.
    fn listed(&self) -> Outcome2<Vec<Listed>> {
        self.with_retriever(|r| {
            let mut all = r.index().listed().map_err(|e| internal("the index", e))?;
            // a quarantined lesson (and one with errors) is never served
            let held: std::collections::HashSet<&str> = r
                .index()
                .held_back()
                .iter()
                .map(|h| h.path.as_str())
                .collect();
            all.retain(|l| !held.contains(l.path.as_str()));
            all.sort_by(|a, b| (&a.slug, &a.path).cmp(&(&b.slug, &b.path)));
            Ok(all)
        })
    }

    /// Note the set of live lessons, when none was noted yet.
    fn remember_slugs(&self) {
        let unset = self
            .state
            .slugs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .is_none();
        if unset {
            self.notice_changes();
        }
    }

    /// Tell the client when the set of live lessons changed since last seen.
    fn notice_changes(&self) {
        let Ok(listed) = self.listed() else {
            return;
        };
        let slugs: Vec<String> = listed.into_iter().map(|l| l.slug).collect();
        let changed = {
            let mut seen = self
                .state
                .slugs
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let changed = seen.as_ref().is_some_and(|old| *old != slugs);
            *seen = Some(slugs);
            changed
        };
        if changed {
            let peer = self
                .state
                .peer
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .clone();
            if let Some(peer) = peer {
                // a client that went away needs no notice
                tokio::spawn(async move {
                    let _ = peer.notify_resource_list_changed().await;
                });
            }
        }
    }

    /// Poll the bank every `every` for changes made by others (a watcher, an editor, another
    /// server) and tell the client when the set of lessons changed.
    pub fn watch_for_changes(&self, every: Duration) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut last = lesson::retrieve::Identity::on_disk(me.root());
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let now = lesson::retrieve::Identity::on_disk(me.root());
                if now != last {
                    last = now;
                    me.notice_changes();
                }
            }
        });
    }

    fn do_search(&self, p: params::Search) -> Outcome {
        let now = super::super::now().map_err(from_anyhow)?;
        let (request, run_id) = p.request(now);
        let root = self.root().to_path_buf();
        let logger = match &run_id {
            Some(run) => {
                lesson::usage::check_run(run).map_err(|e| invalid(e.to_string()))?;
                Some(super::super::stamp(&root, None).map_err(from_anyhow)?.by)
            }
            None => None,
        };
        self.with_retriever(|r| {
            let answer = r.answer(&request).map_err(|e| Envelope::of_retrieve(&e))?;
            if let (Some(run), Some(by)) = (&run_id, &logger) {
                r.log_shown(&answer, run, by)
                    .map_err(|e| Envelope::of_retrieve(&e))?;
            }
            let text = lesson::report::hits::json(&answer, &root)
                .map_err(|e| internal("the answer", e))?;
            let mut value: Value =
                serde_json::from_str(&text).map_err(|e| internal("the answer", e))?;
            value["prompt"] = Value::String(answer.prompt.text.clone());
            Ok(value)
        })
    }

    fn do_get(&self, p: params::Get) -> Outcome {
        check_slug(&p.slug)?;
        let root = self.root();
        let now = super::super::now().map_err(from_anyhow)?;
        // the one file, through the index; anything else (archived, unknown, not a lesson)
        // is what `lesson show` finds in the loaded bank
        let (indexed, provenance) = self.with_retriever(|r| {
            let found = show::find_indexed(r, &p.slug, now).map_err(|e| Envelope::of_curate(&e))?;
            Ok((found, r.provenance().cloned()))
        })?;
        let mut layer: Option<(String, std::path::PathBuf)> = None;
        let (doc, status, archived) = match indexed {
            Some(one) => (one.doc, one.status, false),
            None => {
                let bank = super::super::load_lessons(root)
                    .map_err(|e| Envelope::new(ErrorCode::BankUnavailable, format!("{e:#}")))?;
                let stack = stack::load(bank, super::super::load_lessons)
                    .map_err(|e| Envelope::new(ErrorCode::BankUnavailable, format!("{e:#}")))?;
                let (found_in, found) = match show::find_in_stack(&stack, &p.slug) {
                    Ok(found) => found,
                    Err(e) => return Err(Envelope::of_curate(&e)),
                };
                let bank = &found_in.bank;
                if stack::is_layered(&stack) {
                    layer = Some((found_in.name.clone(), bank.root.clone()));
                }
                let (doc, archived) = match Ok::<_, lesson::curate::CurateError>(found) {
                    Ok(Found::Live(doc)) => (doc.clone(), false),
                    Ok(Found::Archived(doc)) => (*doc, true),
                    Ok(Found::NotALesson(doc)) => {
                        return Err(Envelope::new(
                            ErrorCode::LessonInvalid,
                            format!(
                                "{} is not a valid lesson; the lint tool says why",
                                doc.source.path.display()
                            ),
                        ))
                    }
                    Err(e) => return Err(Envelope::of_curate(&e)),
                };
                let Some(lesson) = &doc.lesson else {
                    return Err(Envelope::new(ErrorCode::LessonInvalid, "not a lesson"));
                };
                let status = bank.status(lesson);
                (doc, status, archived)
            }
        };
        let Some(lesson) = &doc.lesson else {
            return Err(Envelope::new(ErrorCode::LessonInvalid, "not a lesson"));
        };
        if let lesson::bank::Status::Quarantined(rules) = &status {
            return Err(Envelope::new(
                ErrorCode::NotFound,
                format!(
                    "lesson `{}` is in quarantine ({}): it is served once a human runs `lesson review --approve {}`",
                    p.slug,
                    rules.join(", "),
                    p.slug
                ),
            ));
        }
        if status.label() == "expired" && !p.include_expired {
            return Err(Envelope::new(
                ErrorCode::Expired,
                format!(
                    "lesson `{}` is expired; pass include_expired for an archival read",
                    p.slug
                ),
            ));
        }
        // a lesson of an included bank: its own bank's provenance and ledger
        let included = layer
            .as_ref()
            .filter(|(name, _)| name != lesson::layers::FRONT);
        let provenance = match included {
            Some((_, bank_root)) => lesson::git::provenance::Provenance::of_bank(bank_root)
                .ok()
                .flatten()
                .map(std::sync::Arc::new),
            None => provenance,
        };
        let root = included.map_or(root, |(_, bank_root)| bank_root.as_path());
        let stamps = provenance
            .as_ref()
            .and_then(|prov| prov.get(&bank_relative(root, &doc.source.path)));
        let mut view = LessonJson::new(&doc, lesson, status)
            .with_body(&doc)
            .with_provenance(stamps);
        if archived {
            view = view.with_status("archived");
        }
        if let Some((name, _)) = &layer {
            view = view.with_bank(name);
        }
        let ledger = show::ledger(root, &lesson.slug.value).map_err(|e| Envelope::of_curate(&e))?;
        let log = lesson::usage::ShownLog::read(root)
            .map_err(|e| Envelope::new(ErrorCode::BankUnavailable, e.to_string()))?;
        view = view.with_usage(&log.usage(&lesson.slug.value, &ledger));
        let summary = LedgerSummary::of(root, &ledger);
        let counts = lesson.counts();
        let counts_match = summary.counts.as_ref().is_none_or(|c| {
            c["success_count"] == counts.success_count && c["failure_count"] == counts.failure_count
        });
        Ok(json!({
            "lesson": view,
            "status": view.status,
            "counts": {
                "success_count": counts.success_count,
                "failure_count": counts.failure_count,
                "backed_by_ledger": counts_match,
            },
            "ledger": summary,
            "text": doc.source.text,
        }))
    }

    fn do_list(&self, p: params::List) -> Outcome {
        let bank = super::super::load_lessons(self.root())
            .map_err(|e| Envelope::new(ErrorCode::BankUnavailable, format!("{e:#}")))?;
        let query = p
            .query(bank.now)
            .map_err(|e| Envelope::new(ErrorCode::InvalidRequest, e.to_string()))?;
        let stack = stack::load(bank, super::super::load_lessons)
            .map_err(|e| Envelope::new(ErrorCode::BankUnavailable, format!("{e:#}")))?;
        let layered = stack::is_layered(&stack);
        let mut lessons = Vec::new();
        let mut left_out = Vec::new();
        for s in &stack {
            let provenance = lesson::git::provenance::Provenance::of_bank(&s.bank.root)
                .ok()
                .flatten();
            let (figures, _) = lesson::usage::figures(&s.bank.root)
                .map_err(|e| Envelope::new(ErrorCode::BankUnavailable, e.to_string()))?;
            let rows = lesson::listing::list(&s.bank, provenance.as_ref(), &figures, &query);
            let list = lesson::report::lessons::json_list(&rows);
            let values = list.into_iter().map(|j| match layered {
                true => j.with_bank(&s.name),
                false => j,
            });
            for j in values {
                lessons.push(serde_json::to_value(&j).map_err(|e| internal("the list", e))?);
            }
            left_out.extend(lesson::index_md::left_out(&s.bank));
        }
        Ok(json!({"lessons": lessons, "left_out": left_out}))
    }

    fn do_review(&self) -> Outcome {
        let bank = super::super::load(self.root())
            .map_err(|e| Envelope::new(ErrorCode::BankUnavailable, format!("{e:#}")))?;
        let stack = stack::load(bank, super::super::load)
            .map_err(|e| Envelope::new(ErrorCode::BankUnavailable, format!("{e:#}")))?;
        // near-duplicates by meaning too in the front bank, as `lesson dedup` finds them
        let embeddings = match lesson::dedup::embeddings_of(self.root(), &stack[0].bank.config) {
            Ok(embeddings) => embeddings,
            Err(problem) => {
                eprintln!(
                    "lesson mcp: warning: [retrieve] model: {problem}; review compares words alone"
                );
                None
            }
        };
        let mut banks = Vec::new();
        for (i, s) in stack.iter().enumerate() {
            let embeddings = embeddings.as_ref().filter(|_| i == 0);
            let found = lesson::curate::review::review_with(&s.bank, embeddings)
                .map_err(|e| internal("review", e))?;
            banks.push((s.name.as_str(), found));
        }
        let findings = match stack::is_layered(&stack) {
            true => lesson::report::review::json_with_banks(&banks),
            false => serde_json::to_value(&banks[0].1),
        }
        .map_err(|e| internal("review", e))?;
        Ok(json!({"findings": findings}))
    }

    fn do_record(&self, p: params::Record) -> Outcome {
        check_slug(&p.slug)?;
        let (req, by) = p.request().map_err(invalid)?;
        let root = self.root();
        let stamp = super::super::stamp(root, by).map_err(from_anyhow)?;
        let done = record::record(root, &req, &stamp).map_err(|e| Envelope::of_curate(&e))?;
        Ok(writes::recorded(root, &req.slug, &done))
    }

    fn do_propose(&self, mut p: params::Propose) -> Outcome {
        const LABEL: &str = "propose";
        let (bytes, intake) = p.input().map_err(invalid)?;
        let candidates = add::read_candidates(LABEL, bytes).map_err(|e| Envelope::of_add(&e))?;
        let root = self.root();
        let stamp = super::super::stamp(root, p.by).map_err(from_anyhow)?;
        let added = add::add(root, &candidates, &intake, &stamp, p.dry_run)
            .map_err(|e| Envelope::of_add(&e))?;
        if let Some(problem) = &added.semantic_problem {
            eprintln!(
                "lesson mcp: warning: [retrieve] model: {problem}; candidates were compared by words alone"
            );
        }
        let mut value = writes::added(root, &added);
        value["dry_run"] = Value::Bool(p.dry_run);
        Ok(value)
    }

    fn do_lint(&self, p: params::Lint) -> Outcome {
        let root = self.root();
        let paths = inside_bank(root, &p.paths)?;
        for s in &p.select {
            lint::check_selector(s).map_err(|e| invalid(e.to_string()))?;
        }
        let selection = Selection {
            paths,
            rules: p.select,
        };
        let now = super::super::now().map_err(from_anyhow)?;
        let (bank, diagnostics) = lint::lint_report(root, now, &selection)
            .map_err(|e| Envelope::new(ErrorCode::BankUnavailable, e.to_string()))?;
        let sources = bank
            .sources_for(&diagnostics)
            .collect::<lesson::report::Sources>();
        let s = Summary::of(&diagnostics);
        Ok(json!({
            "diagnostics": envelope::diagnostics_json(&diagnostics, &sources),
            "files": bank.documents.len(),
            "errors": s.errors,
            "warnings": s.warnings,
            "infos": s.infos,
        }))
    }
}

type Outcome2<T> = Result<T, Envelope>;

/// A slug as a request gives it: it must be a valid slug (so it names no path).
fn check_slug(slug: &str) -> Result<(), Envelope> {
    match lesson::lesson::slug_problem(slug) {
        None => Ok(()),
        Some(problem) => Err(invalid(format!("`{slug}` is not a slug: {problem}"))),
    }
}

/// Paths a request names, each inside the bank (after symlinks): relative ones are taken from
/// the bank's root. Anything else is refused.
fn inside_bank(root: &Path, paths: &[String]) -> Result<Vec<PathBuf>, Envelope> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let bank = root.canonicalize().map_err(|e| {
        Envelope::new(
            ErrorCode::BankUnavailable,
            format!("{}: {e}", root.display()),
        )
    })?;
    let mut out = Vec::new();
    for p in paths {
        let path = root.join(p);
        let real = path
            .canonicalize()
            .map_err(|e| invalid(format!("{p}: {e} (paths are relative to the bank)")))?;
        if !real.starts_with(&bank) {
            return Err(invalid(format!(
                "{p} is outside the bank at {}: the server reads the bank's files only",
                bank.display()
            )));
        }
        out.push(path);
    }
    Ok(out)
}

#[tool_router]
impl Lessons {
    /// `search`.
    #[tool(
        description = "The lessons that apply to a request (AIP-11 retrieve contract): hits best first with their score parts and the gates they passed, and `prompt`, the block to put before the agent's turn. Call before each turn."
    )]
    async fn search(
        &self,
        Parameters(p): Parameters<params::Search>,
    ) -> Result<CallToolResult, ErrorData> {
        tool_result("search", guarded(|| self.do_search(p)))
    }

    /// `get`.
    #[tool(
        description = "One lesson by slug: its fields and body, status, counts, a summary of its ledger, its file's text and, when the bank is in git, the commits that created and last changed it (`created`, `changed`)."
    )]
    async fn get(
        &self,
        Parameters(p): Parameters<params::Get>,
    ) -> Result<CallToolResult, ErrorData> {
        tool_result("get", guarded(|| self.do_get(p)))
    }

    /// `list`.
    #[tool(
        description = "The bank's lessons (as `lesson list --format json`), selected by status, dates (since, until), tags, outcomes, origins and author (by), sorted (name, created, updated, tags, shown, utility) and cut (limit)."
    )]
    async fn list(
        &self,
        Parameters(p): Parameters<params::List>,
    ) -> Result<CallToolResult, ErrorData> {
        tool_result("list", guarded(|| self.do_list(p)))
    }

    /// `review`.
    #[tool(
        description = "The lessons that need a human (as `lesson review`): quarantined, failure-dominant, expired, mixed, never applied, imported counts, near-duplicates."
    )]
    async fn review(
        &self,
        Parameters(_): Parameters<params::Nothing>,
    ) -> Result<CallToolResult, ErrorData> {
        tool_result("review", guarded(|| self.do_review()))
    }

    /// `record`.
    #[tool(
        description = "Record an observed outcome of a lesson after a run (as `lesson record`): appends a ledger event and updates the lesson's counts and evidence. Recording the same evidence twice changes nothing."
    )]
    async fn record(
        &self,
        Parameters(p): Parameters<params::Record>,
    ) -> Result<CallToolResult, ErrorData> {
        let out = guarded(|| self.do_record(p));
        tool_result("record", out)
    }

    /// `propose`.
    #[tool(
        description = "Propose candidate lessons through the write gate of `lesson add`: validation, secret scan, deduplication (a duplicate appends its evidence to the existing lesson); all or nothing."
    )]
    async fn propose(
        &self,
        Parameters(p): Parameters<params::Propose>,
    ) -> Result<CallToolResult, ErrorData> {
        // the set before the write is the baseline of the change notice
        self.remember_slugs();
        let out = guarded(|| self.do_propose(p));
        if out.is_ok() {
            self.notice_changes();
        }
        tool_result("propose", out)
    }

    /// `lint`.
    #[tool(
        description = "Check the bank against AIP-11 and its rules: diagnostics as `lesson lint --output-format json` objects, with counts by severity."
    )]
    async fn lint(
        &self,
        Parameters(p): Parameters<params::Lint>,
    ) -> Result<CallToolResult, ErrorData> {
        tool_result("lint", guarded(|| self.do_lint(p)))
    }
}

impl Lessons {
    fn resources_page(&self, cursor: Option<&str>) -> Outcome2<ListResourcesResult> {
        let start = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .map_err(|_| invalid(format!("`{c}` is not a cursor this server gave")))?,
        };
        let listed = self.listed()?;
        // the first listing is the baseline of change notices
        {
            let mut seen = self
                .state
                .slugs
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if seen.is_none() {
                *seen = Some(listed.iter().map(|l| l.slug.clone()).collect());
            }
        }
        let end = (start + PAGE).min(listed.len());
        let resources: Vec<Resource> = listed
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .map(|l| {
                Resource::new(format!("{SCHEME}{}", l.slug), l.slug.clone())
                    .with_title(l.title.clone())
                    .with_description(format!("{} ({})", l.path, l.outcome.as_str()))
                    .with_mime_type("text/markdown")
            })
            .collect();
        let mut page = ListResourcesResult::with_all_items(resources);
        page.next_cursor = (end < listed.len()).then(|| end.to_string());
        Ok(page)
    }

    fn read_lesson(&self, uri: &str) -> Outcome2<ReadResourceResult> {
        let Some(slug) = uri.strip_prefix(SCHEME) else {
            return Err(invalid(format!("`{uri}` is not a lesson:// URI")));
        };
        check_slug(slug)?;
        let listed = self.listed()?;
        let Some(found) = listed.iter().find(|l| l.slug == slug) else {
            return Err(Envelope::new(
                ErrorCode::NotFound,
                format!("no live lesson `{slug}`; resources/list shows them"),
            ));
        };
        // the index's paths are the walk's: relative, inside the bank, no link followed out
        let text = std::fs::read_to_string(self.root().join(&found.path))
            .map_err(|e| internal(&found.path, e))?;
        let contents = ResourceContents::text(text, uri).with_mime_type("text/markdown");
        Ok(ReadResourceResult::new(vec![contents]))
    }

    fn lessons_for(&self, args: params::LessonsFor) -> Outcome2<GetPromptResult> {
        let request = args.request.unwrap_or_default();
        if request.trim().is_empty() {
            return Err(invalid("the prompt `lessons_for` needs `request`"));
        }
        let tags = args
            .tags
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect();
        let value = self.do_search(params::Search {
            request,
            tags,
            operator: None,
            role: args.role,
            skill: None,
            k: None,
            budget: None,
            include_expired: false,
            run_id: None,
        })?;
        let block = value["prompt"].as_str().unwrap_or_default().to_string();
        let shown = value["hits"].as_array().map_or(0, Vec::len);
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, block)]);
        result.description = Some(format!("{shown} lessons for this request"));
        Ok(result)
    }
}

/// How the server introduces itself.
const INSTRUCTIONS: &str = "Lessons learned by earlier runs (AIP-11). Before a turn, call \
`search` with the request and put its `prompt` block before the turn (or get the `lessons_for` \
prompt). After a run, call `record` for each lesson that applied, with the run as evidence. \
`propose` admits new lessons through the bank's gate. Errors carry AIP-11 codes in \
{ok: false, error: {code, message}}.";

#[tool_handler]
impl ServerHandler for Lessons {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_list_changed()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new("lesson", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        *self
            .state
            .peer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(context.peer.clone());
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        guarded(|| self.resources_page(cursor.as_deref())).map_err(rpc_error)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        guarded(|| self.read_lesson(&request.uri))
            .map(Into::into)
            .map_err(rpc_error)
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let arg = |name: &str, what: &str, required: bool| {
            PromptArgument::new(name)
                .with_description(what)
                .with_required(required)
        };
        Ok(ListPromptsResult::with_all_items(vec![Prompt::new(
            "lessons_for",
            Some("The lessons that apply to a request, as the block to insert before a turn"),
            Some(vec![
                arg("request", "The request (a user message, a task)", true),
                arg("role", "The caller's role", false),
                arg("tags", "Tags of the request, comma-separated", false),
            ]),
        )]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != "lessons_for" {
            return Err(rpc_error(invalid(format!(
                "no prompt `{}`; the prompt is `lessons_for`",
                request.name
            ))));
        }
        let args: params::LessonsFor = match request.arguments {
            Some(map) => serde_json::from_value(Value::Object(map))
                .map_err(|e| rpc_error(invalid(format!("lessons_for: {e}"))))?,
            None => params::LessonsFor::default(),
        };
        guarded(|| self.lessons_for(args))
            .map(Into::into)
            .map_err(rpc_error)
    }
}
