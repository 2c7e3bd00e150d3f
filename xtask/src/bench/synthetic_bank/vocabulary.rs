//! The words and sentence templates synthetic lessons are made of. Changing anything here
//! changes the banks: bump `GENERATOR_VERSION`.
//!
//! Nothing here may start a YAML indicator or contain `: ` or ` #`, so that values can be
//! written as plain scalars (the generator quotes the globs that start with `*`).

pub const VERBS: &[&str] = &[
    "Verify", "Prefer", "Avoid", "Cache", "Retry", "Check", "Pin", "Batch", "Quote", "Validate",
    "Log", "Escape", "Normalise", "Split", "Summarise", "Cite", "Confirm", "Re-read", "Lock",
    "Stream", "Debounce", "Deduplicate", "Snapshot", "Throttle", "Compare", "Record", "Reuse",
    "Skip", "Flush", "Archive",
];
pub const ADJECTIVES: &[&str] = &[
    "stale", "cached", "remote", "nested", "pending", "partial", "large", "flaky", "shared",
    "generated", "empty", "duplicate", "unsigned", "expired", "legacy", "draft", "quoted",
    "binary", "localised", "paginated",
];
pub const NOUNS: &[&str] = &[
    "page identifier", "subject line", "lockfile", "API token", "retry budget", "rate limit",
    "schema version", "config file", "migration", "test fixture", "query plan", "search index",
    "commit message", "pull request", "changelog entry", "dependency", "timeout", "cursor",
    "webhook", "payload", "embedding batch", "CSV export", "build cache", "feature flag",
    "release tag", "error message", "stack trace", "database row", "file handle", "unit test",
    "tool call", "prompt template", "citation", "spreadsheet", "calendar invite", "invoice",
    "log line", "environment variable", "container image", "shell script",
];
pub const CONNECTIVES: &[&str] = &["when", "before", "after", "whenever", "unless", "until"];
pub const STATES: &[&str] = &[
    "is stale", "changes", "returns 429", "is missing", "looks empty", "times out",
    "is shared across runs", "comes from a user", "is larger than 1 MB", "was generated",
    "fails twice", "has no owner", "is rate-limited", "is behind a proxy",
    "moves to a new region", "is in review", "spans many pages", "is retried",
    "contains non-ASCII text", "is written concurrently",
];
pub const ROLES: &[&str] = &[
    "researcher", "indexer", "orchestrator", "reviewer", "release manager", "support agent",
    "data engineer", "copywriter", "triage bot", "planner",
];
pub const CONTEXTS: &[&str] = &[
    "browser automation", "CI pipelines", "data migrations", "research summaries",
    "customer support", "release management", "code review", "incident response",
    "email campaigns", "spreadsheet cleanup",
];
pub const SOURCES: &[&str] = &[
    "a cache", "the network", "a shared drive", "the previous run", "an upstream API",
    "user input",
];
pub const TAGS: &[&str] = &[
    "research", "citations", "pagination", "ui-automation", "browser", "email", "copywriting",
    "embeddings", "rate-limit", "batch", "tool-calls", "prompting", "context", "git", "ci",
    "testing", "migrations", "sql", "caching", "retries", "timeouts", "security", "secrets",
    "logging", "i18n", "unicode", "csv", "json", "yaml", "docker", "shell", "deploy", "review",
    "support", "billing", "calendar", "search", "indexing", "performance", "concurrency",
];
/// Target keys and the names or globs they take.
pub const TARGETS: &[(&str, &[&str])] = &[
    ("operator", &["marketing-lead", "marketing-*", "sales-*", "ops-oncall", "support-tier-?", "*-lead"]),
    ("role", &["researcher", "indexer", "orchestrator", "reviewer", "release-*", "data-*"]),
    ("skill", &["web-search", "pdf-*", "sql-query", "git-*", "email-draft", "**/deploy"]),
];
/// Evidence kinds, weighted: runs are the most common provenance.
pub const EVIDENCE_KINDS: &[&str] = &[
    "run", "run", "run", "conversation", "work-item", "audit", "wiki-page",
];
pub const PROJECTS: &[&str] = &["q2-newsletter", "billing-v3", "infra", "onboarding", "search-revamp"];

// Sentence templates. `{verb}`, `{adj}`, `{noun}`, `{noun2}`, `{state}`, `{role}`,
// `{context}`, `{source}`, `{n}` and `{ref}` are filled in from the lesson's theme.

pub const DESCRIPTIONS: &[&str] = &[
    "The agent is working with a {adj} {noun} and the {noun2} {state}.",
    "A {role} task touches the {noun} while the {noun2} {state}.",
    "Any run that reads the {noun} from {source} and then updates the {noun2}.",
    "The user asks for a change to the {noun} and the {noun2} {state}.",
    "The agent must decide whether to trust a {adj} {noun} during {context}.",
];
pub const DESCRIPTION_TAILS: &[&str] = &[
    "This is common in {context}.",
    "It matters most for {role} work.",
    "Seen repeatedly when the {noun2} comes from {source}.",
];
pub const WHEN_SENTENCES: &[&str] = &[
    "Any {role} task in {context} where the {noun} is read from {source} and reused later.",
    "The {noun2} {state} and the agent is about to act on a {adj} {noun}.",
    "It does not apply when the {noun} is only a scratch copy that nobody reads.",
    "Other roles may follow different norms and should not have this lesson injected.",
    "The signal that matters is the {noun2}, not how the {noun} looks on screen.",
];
pub const BULLETS: &[&str] = &[
    "Before you act on the {noun}, check that the {noun2} has not changed since the last read.",
    "Read the {noun} again after any write; do not trust a {adj} copy.",
    "If the {noun2} {state}, stop and report it instead of guessing.",
    "Record the {noun} in the run log so the next run can compare it.",
    "Keep the change to the {noun} small and reversible, one {noun2} per step.",
    "Ask the user before touching a {adj} {noun}.",
    "{verb} the {noun} first, then move on to the {noun2}.",
    "Avoid relying on visual cues; they can fire while the {noun} is still {adj}.",
];
pub const COUNTER_EXAMPLES: &[&str] = &[
    "In `{ref}` the agent skipped this step. The {noun} was {adj}, the {noun2} {state}, and the run had to be repeated by hand.",
    "An earlier run ignored the {noun} and shipped a {adj} {noun2}. The user noticed {n} days later and asked for the same work again.",
    "During `{ref}` the agent trusted a {adj} {noun} from {source}. The result looked right but was {n} versions behind.",
];
pub const NOTES: &[&str] = &[
    "Retried {n} times; the {noun} was {adj} each time.",
    "User confirmed the {noun} was correct after the fix.",
    "Took {n} minutes longer because the {noun2} {state}.",
    "Audit recorded zero issues with the {noun}.",
    "The {noun} from {source} was {adj}; caught before release.",
];
