//! A running watcher answers searches: `lesson search` (a new process) asks it over a Unix
//! socket in `.lesson/` instead of opening the index itself.
//!
//! **Why**: a watcher holds the index open and warm (its tables decoded, its norms cached, its
//! pages mapped), so its answer costs the warm query's time; a new process opening the index
//! pays again for all of that on every search.
//!
//! **The same answer**: the watcher answers from the index as of its last batch, which is the
//! index it vouches for ([`super::marker`]): what a search that opened the vouched index would
//! find. The watcher prints the answer with the [`Printer`] it is given (`report::hits::print`), the function a search in the
//! process prints with, with the client's root and clock, so the bytes are the same.
//!
//! **Only an answer or nothing**: the watcher declines, and the client searches by itself as
//! before, whenever it cannot stand behind its answer: its last batch failed, the bank includes
//! other banks (their watchers, not this one, follow their files), its version is not the
//! client's, the search itself failed (the client's own search then says why). A client that
//! cannot reach a watcher in time (none runs, one was killed and left its socket, one is busy
//! longer than [`ASK_TIMEOUT`]) searches by itself too. `--explain` and `--log` always search in
//! the process.
//!
//! **The protocol**: the client connects to [`SOCKET_FILE`], writes one [`Query`] as JSON and
//! shuts down its writing half; the watcher writes one [`Reply`] as JSON and closes. The socket
//! is made readable and writable by its owner alone. One query at a time: the watcher answers
//! between batches, on the thread that applies them, so an answer never sees half a batch.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::retrieve::{Answer, Request, Retriever};

/// The socket, in `.lesson/`.
pub const SOCKET_FILE: &str = "watch.sock";

/// How long a client waits for an answer before it searches by itself.
pub const ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The longest query read (a request read from stdin can be long, not this long).
const MAX_QUERY: u64 = 16 << 20;

/// How `lesson search` prints an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// The block to put in an agent's prompt.
    Prompt,
    /// Every hit with its score parts and the gates it passed.
    Json,
    /// A table for people.
    Text,
}

/// What `lesson search` prints for an answer: the same bytes whether the search ran in the
/// process or a watcher answered it (this module).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Printed {
    /// Standard output.
    pub stdout: String,
    /// Notes for standard error (`note: ...`; `--quiet` silences them).
    pub notes: Vec<String>,
    /// Warnings for standard error (`warning: ...`).
    pub warnings: Vec<String>,
}

/// How a watcher prints an answer: `lesson::report::hits::print`, what `lesson search` prints
/// with in its own process (the report layer sits above this one, so it is passed in).
pub type Printer = fn(&Retriever, &Answer, Shape, &Path) -> serde_json::Result<Printed>;

/// A search asked of a watcher.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// The client's version: a watcher of another version declines.
    pub version: String,
    /// The bank's root as the client spells it (JSON paths are shown under it).
    pub root: String,
    /// How to print the answer.
    pub shape: Shape,
    /// The request, `now` included (to the nanosecond).
    pub request: Request,
}

impl Query {
    /// The query for `request`, printed as `shape` with JSON paths under `root`; `None` when
    /// the root is not UTF-8 (it could not be shown the same way).
    pub fn new(request: &Request, shape: Shape, root: &Path) -> Option<Query> {
        Some(Query {
            version: env!("CARGO_PKG_VERSION").to_string(),
            root: root.to_str()?.to_string(),
            shape,
            request: request.clone(),
        })
    }
}

/// A watcher's reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reply {
    /// What the client prints, and the watcher's pid.
    Answered {
        /// The watcher's process id.
        pid: u32,
        /// What to print.
        printed: Printed,
    },
    /// The watcher will not answer; the client searches by itself.
    Declined(String),
}

/// Ask the watcher of the bank at `root`, if one serves it, to answer `query`: `None` when
/// none answers (the caller searches by itself), else the reply.
#[cfg(unix)]
pub fn ask(root: &Path, query: &Query) -> Option<Reply> {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    let path = root.join(crate::edit::STATE_DIR).join(SOCKET_FILE);
    // no socket (the common case without a watcher): not even a connect
    let mut stream = UnixStream::connect(path).ok()?;
    stream.set_read_timeout(Some(ASK_TIMEOUT)).ok()?;
    stream.set_write_timeout(Some(ASK_TIMEOUT)).ok()?;
    let bytes = serde_json::to_vec(query).ok()?;
    stream.write_all(&bytes).ok()?;
    stream.shutdown(std::net::Shutdown::Write).ok()?;
    // room for a usual answer: read_to_end into an empty vector probes with 32 bytes and
    // doubles, ten reads for a prompt block
    let mut reply = Vec::with_capacity(64 * 1024);
    stream.read_to_end(&mut reply).ok()?;
    serde_json::from_slice(&reply).ok()
}

/// Without Unix sockets no watcher answers.
#[cfg(not(unix))]
pub fn ask(_root: &Path, _query: &Query) -> Option<Reply> {
    None
}

/// A watcher's socket and the thread accepting on it; dropping it stops the thread and removes
/// the socket.
#[cfg(unix)]
#[derive(Debug)]
pub(super) struct Server {
    path: std::path::PathBuf,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

#[cfg(unix)]
impl Server {
    /// Bind the socket of the bank at `root` (the caller holds the watcher lock, so a socket
    /// already there is a dead watcher's) and accept on a thread of its own; each query is
    /// passed to `ask` with a channel for the reply.
    pub(super) fn start(
        root: &Path,
        ask: impl Fn(Query, std::sync::mpsc::Sender<Reply>) -> bool + Send + 'static,
    ) -> std::io::Result<Server> {
        use std::os::unix::fs::PermissionsExt;
        use std::os::unix::net::UnixListener;
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let path = root.join(crate::edit::STATE_DIR).join(SOCKET_FILE);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::Builder::new()
            .name("lesson-serve".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if stopped.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    if !answer(stream, &ask) {
                        return;
                    }
                }
            })?;
        Ok(Server { path, stop })
    }
}

/// Read one query from `stream`, have `ask` answer it, write the reply; false once the
/// watcher is gone.
#[cfg(unix)]
fn answer(
    mut stream: std::os::unix::net::UnixStream,
    ask: &impl Fn(Query, std::sync::mpsc::Sender<Reply>) -> bool,
) -> bool {
    use std::io::{Read, Write};
    // a client that connects and says nothing must not hold the others up
    let _ = stream.set_read_timeout(Some(ASK_TIMEOUT));
    let _ = stream.set_write_timeout(Some(ASK_TIMEOUT));
    // room for a usual query, read in one call (see `ask`)
    let mut bytes = Vec::with_capacity(4096);
    if (&mut stream)
        .take(MAX_QUERY)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return true;
    }
    let reply = match serde_json::from_slice::<Query>(&bytes) {
        Ok(query) => {
            let (tx, rx) = std::sync::mpsc::channel();
            if !ask(query, tx) {
                return false;
            }
            match rx.recv() {
                Ok(reply) => reply,
                Err(_) => return false,
            }
        }
        Err(e) => Reply::Declined(format!("the query is not one: {e}")),
    };
    if let Ok(bytes) = serde_json::to_vec(&reply) {
        let _ = stream.write_all(&bytes);
    }
    true
}

#[cfg(unix)]
impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // wake the accepting thread, which sees the flag and ends
        let _ = std::os::unix::net::UnixStream::connect(&self.path);
        let _ = std::fs::remove_file(&self.path);
    }
}
