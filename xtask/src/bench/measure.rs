//! Timing a child process: wall clock around spawn..reap, CPU time and peak RSS from `wait4`.
//!
//! `wait4` reports the child's own usage merged with that of the descendants it reaped, so a
//! `sh -c 'find | xargs cat'` pipeline is measured as a whole.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// One timed run.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Spawn to reap.
    pub wall: Duration,
    /// User CPU time.
    pub user: Duration,
    /// System CPU time.
    pub sys: Duration,
    /// Peak resident set size, in KiB (Linux reports `ru_maxrss` in KiB).
    pub max_rss_kib: u64,
}

impl Sample {
    /// The sample as it is written to the bench's JSON results.
    pub fn to_json(self) -> super::json::Json {
        use super::json::Json;
        Json::Obj(vec![
            ("wall_s", Json::Num(self.wall.as_secs_f64())),
            ("user_s", Json::Num(self.user.as_secs_f64())),
            ("sys_s", Json::Num(self.sys.as_secs_f64())),
            ("max_rss_kib", Json::Int(self.max_rss_kib)),
        ])
    }
}

/// Where a run's output goes: files, not /dev/null, so that no tool can take a shortcut for a
/// discarded output and the output can be checked afterwards.
pub struct Output {
    /// Standard output.
    pub stdout: PathBuf,
    /// Standard error.
    pub stderr: PathBuf,
}

/// Run `cmd` to completion and measure it. A non-zero exit is an error that quotes stderr.
pub fn run(cmd: &mut Command, output: &Output) -> anyhow::Result<Sample> {
    run_allowing(cmd, output, &[0])
}

/// Like [`run`], but any exit status in `ok` counts as success (`rg` exits 1 when nothing
/// matched).
pub fn run_allowing(cmd: &mut Command, output: &Output, ok: &[i32]) -> anyhow::Result<Sample> {
    let create =
        |p: &Path| File::create(p).with_context(|| format!("cannot create {}", p.display()));
    cmd.stdin(Stdio::null())
        .stdout(create(&output.stdout)?)
        .stderr(create(&output.stderr)?);
    let start = Instant::now();
    let child = cmd
        .spawn()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    let pid = libc::pid_t::try_from(child.id()).context("pid out of range")?;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; all-zero is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid pointers to locals; `pid` is our own unreaped child. `Child` is never
        // waited on afterwards (dropping it does not wait), so the pid is reaped exactly once.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err).context("wait4");
        }
    }
    let wall = start.elapsed();
    drop(child);
    if !(libc::WIFEXITED(status) && ok.contains(&libc::WEXITSTATUS(status))) {
        let how = if libc::WIFEXITED(status) {
            format!("exit status {}", libc::WEXITSTATUS(status))
        } else {
            format!("signal {}", libc::WTERMSIG(status))
        };
        let stderr = std::fs::read_to_string(&output.stderr).unwrap_or_default();
        let tail: Vec<&str> = stderr.lines().rev().take(20).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        bail!(
            "{cmd:?} failed with {how}; stderr ({}):\n{}",
            output.stderr.display(),
            tail.join("\n")
        );
    }
    Ok(Sample {
        wall,
        user: timeval(usage.ru_utime),
        sys: timeval(usage.ru_stime),
        max_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0),
    })
}

fn timeval(tv: libc::timeval) -> Duration {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u32::try_from(tv.tv_usec).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(u64::from(micros))
}

/// Summary of the samples of one tool on one bank.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    /// Fastest wall clock.
    pub best: Duration,
    /// Median wall clock (the mean of the middle two for an even count).
    pub median: Duration,
    /// Median user + system CPU time.
    pub cpu_median: Duration,
    /// Largest peak RSS over all runs, in KiB.
    pub peak_rss_kib: u64,
}

impl Stats {
    /// Summarise non-empty samples.
    pub fn of(samples: &[Sample]) -> Stats {
        let walls: Vec<Duration> = samples.iter().map(|s| s.wall).collect();
        let cpus: Vec<Duration> = samples.iter().map(|s| s.user + s.sys).collect();
        Stats {
            best: walls.iter().copied().min().unwrap_or_default(),
            median: median(walls),
            cpu_median: median(cpus),
            peak_rss_kib: samples.iter().map(|s| s.max_rss_kib).max().unwrap_or(0),
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort();
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(ms: u64, rss: u64) -> Sample {
        Sample {
            wall: Duration::from_millis(ms),
            user: Duration::from_millis(ms / 2),
            sys: Duration::ZERO,
            max_rss_kib: rss,
        }
    }

    #[test]
    fn stats_take_best_median_and_peak() {
        let s = Stats::of(&[sample(30, 5), sample(10, 9), sample(20, 7)]);
        assert_eq!(s.best, Duration::from_millis(10));
        assert_eq!(s.median, Duration::from_millis(20));
        assert_eq!(s.cpu_median, Duration::from_millis(10));
        assert_eq!(s.peak_rss_kib, 9);
        let even = Stats::of(&[sample(10, 1), sample(20, 1)]);
        assert_eq!(even.median, Duration::from_millis(15));
    }

    #[test]
    fn measures_a_child_and_reports_failure() {
        let dir = std::env::temp_dir().join(format!("xtask-measure-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let output = Output {
            stdout: dir.join("out"),
            stderr: dir.join("err"),
        };
        let ok = run(Command::new("sh").args(["-c", "echo hi"]), &output).unwrap();
        assert!(ok.max_rss_kib > 0);
        assert_eq!(std::fs::read_to_string(&output.stdout).unwrap(), "hi\n");
        let err = run(
            Command::new("sh").args(["-c", "echo boom >&2; exit 3"]),
            &output,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("exit status 3") && err.contains("boom"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
