//! Running the judge: a shell command that reads one JSON request on stdin and prints one JSON
//! answer on stdout, within a time limit.
//!
//! The command runs under `sh -c` (`cmd /C` on Windows) in its own process group, so that on a
//! timeout the whole group (the shell, an interpreter, whatever they started) is killed, not
//! only the shell. Its stdin is written and its stdout and stderr are read on their own threads,
//! so a judge that answers before reading all of its input, or writes much to stderr, cannot
//! deadlock with us.

use std::io::{Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The judge's stdout is refused beyond this many bytes.
pub const MAX_ANSWER: u64 = 16 << 20;
/// How much of the judge's stderr a failure shows (its end).
const STDERR_TAIL: usize = 2000;

/// The judge did not answer.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// The command could not be started.
    #[error("cannot start the judge `{command}`: {source}")]
    Spawn {
        /// The command.
        command: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The command ended with a failure status.
    #[error("the judge `{command}` failed ({status}){}", stderr_note(.stderr))]
    Crashed {
        /// The command.
        command: String,
        /// "exit status 3", "killed by signal 9".
        status: String,
        /// The end of what it wrote to stderr.
        stderr: String,
    },
    /// The command ran past the time limit and was killed.
    #[error("the judge `{command}` did not answer within {seconds} s and was killed (raise --timeout if it needs longer){}", stderr_note(.stderr))]
    TimedOut {
        /// The command.
        command: String,
        /// The limit.
        seconds: f64,
        /// The end of what it wrote to stderr.
        stderr: String,
    },
    /// Its stdout is larger than [`MAX_ANSWER`].
    #[error("the judge `{command}` printed more than {} MiB; an answer is one JSON object", MAX_ANSWER >> 20)]
    TooLarge {
        /// The command.
        command: String,
    },
}

fn stderr_note(stderr: &str) -> String {
    let trimmed = stderr.trim_end();
    if trimmed.is_empty() {
        String::new()
    } else {
        let lines: Vec<String> = trimmed.lines().map(|l| format!("\n  judge: {l}")).collect();
        format!("; its stderr ends with:{}", lines.concat())
    }
}

/// Run `command` with `input` on its stdin; its stdout when it exits with status 0 within
/// `timeout`.
pub fn run(command: &str, input: &[u8], timeout: Duration) -> Result<Vec<u8>, JudgeError> {
    let deadline = Instant::now() + timeout;
    let mut child = shell(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| JudgeError::Spawn {
            command: command.to_string(),
            source,
        })?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = input.to_vec();
    std::thread::spawn(move || {
        // a judge that exits without reading everything closes the pipe: not our failure
        let _ = stdin.write_all(&input);
    });
    let stdout = reader(
        child.stdout.take().expect("stdout is piped"),
        MAX_ANSWER + 1,
    );
    let stderr = reader(child.stderr.take().expect("stderr is piped"), MAX_ANSWER);

    let timed_out = |child: &mut Child, stderr: &mpsc::Receiver<Vec<u8>>| {
        kill(child);
        JudgeError::TimedOut {
            command: command.to_string(),
            seconds: timeout.as_secs_f64(),
            stderr: tail(stderr.recv_timeout(Duration::from_millis(200)).ok()),
        }
    };
    let status = match wait_until(&mut child, deadline) {
        Some(status) => status,
        None => return Err(timed_out(&mut child, &stderr)),
    };
    // a process the judge left behind can keep its stdout open: the deadline holds for the
    // output too
    let remaining = || deadline.saturating_duration_since(Instant::now());
    let Ok(out) = stdout.recv_timeout(remaining()) else {
        return Err(timed_out(&mut child, &stderr));
    };
    let err = stderr.recv_timeout(remaining()).ok();
    if !status.success() {
        return Err(JudgeError::Crashed {
            command: command.to_string(),
            status: describe(status),
            stderr: tail(err),
        });
    }
    if out.len() as u64 > MAX_ANSWER {
        return Err(JudgeError::TooLarge {
            command: command.to_string(),
        });
    }
    Ok(out)
}

fn shell(command: &str) -> Command {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(command).process_group(0);
        cmd
    }
    #[cfg(not(unix))]
    {
        let mut cmd = Command::new("cmd");
        cmd.arg("/C").arg(command);
        cmd
    }
}

/// Read a pipe to its end (at most `limit` bytes) on a thread; the bytes arrive on the channel.
fn reader(mut pipe: impl Read + Send + 'static, limit: u64) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.by_ref().take(limit).read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

/// Wait for the child to exit, polling until `deadline`; `None` when it is still running.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    let mut pause = Duration::from_millis(1);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(25));
    }
}

/// Kill the judge's process group (on Unix), then the judge, and reap it.
fn kill(child: &mut Child) {
    #[cfg(unix)]
    {
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: kill(2) with a negative pid signals the process group the child leads
            // (it was spawned with process_group(0)); it touches no memory of ours
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit status {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    status.to_string()
}

/// The end of the judge's stderr, cut at a line start, as text.
fn tail(bytes: Option<Vec<u8>>) -> String {
    let text = String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned();
    if text.len() <= STDERR_TAIL {
        return text;
    }
    let mut start = text.len() - STDERR_TAIL;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    match text[start..].find('\n') {
        Some(i) => text[start + i + 1..].to_string(),
        None => text[start..].to_string(),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    const LONG: Duration = Duration::from_secs(60);

    #[test]
    fn echoes_and_reports_failures() {
        let out = run("cat", b"{\"a\":1}", LONG).unwrap();
        assert_eq!(out, b"{\"a\":1}");
        let err = run("echo oops >&2; exit 3", b"", LONG).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the judge `echo oops >&2; exit 3` failed (exit status 3); its stderr ends with:\n  judge: oops"
        );
        let err = run("kill -9 $$", b"", LONG).unwrap_err();
        assert!(err.to_string().contains("killed by signal 9"), "{err}");
    }

    #[test]
    fn a_judge_that_answers_without_reading_its_input_is_fine() {
        let big = vec![b'x'; 1 << 20];
        assert_eq!(run("echo '{}'", &big, LONG).unwrap(), b"{}\n");
    }

    #[test]
    fn a_hanging_judge_and_what_it_started_are_killed() {
        // the grandchild keeps stdout open; the limit still holds, and it is killed with the group
        let err = run("sleep 30 & sleep 30", b"", Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, JudgeError::TimedOut { .. }), "{err}");
    }

    #[test]
    fn stderr_tail_starts_on_a_line() {
        let text = format!("{}\nlast line\n", "x".repeat(5000));
        assert_eq!(tail(Some(text.into_bytes())), "last line\n");
    }
}
