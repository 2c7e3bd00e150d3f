//! Facts about the machine and the build that a benchmark figure depends on.

use std::path::Path;
use std::process::Command;

use super::json::Json;

/// What the numbers were measured on.
pub struct Machine {
    /// CPUs available to this process.
    pub nproc: usize,
    /// `rustc --version`.
    pub rustc: String,
    /// The CPU model, from `/proc/cpuinfo`.
    pub cpu: String,
    /// `uname -sr`.
    pub os: String,
    /// The commit being measured (`git describe --always --dirty`).
    pub commit: String,
}

impl Machine {
    /// Gather the facts; a fact that cannot be found reads `unknown`.
    pub fn probe(root: &Path) -> Machine {
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        Machine {
            nproc: std::thread::available_parallelism().map_or(1, usize::from),
            rustc: command_line(Command::new(rustc).arg("--version")),
            cpu: cpu_model(),
            os: command_line(Command::new("uname").arg("-sr")),
            commit: command_line(
                Command::new("git")
                    .current_dir(root)
                    .args(["describe", "--always", "--dirty"]),
            ),
        }
    }

    /// One line for the report header.
    pub fn summary(&self) -> String {
        format!(
            "{} CPUs ({}), {}, {}, commit {}",
            self.nproc, self.cpu, self.os, self.rustc, self.commit
        )
    }

    /// As JSON.
    pub fn to_json(&self) -> Json {
        Json::Obj(vec![
            ("nproc", Json::Int(self.nproc as u64)),
            ("cpu", Json::str(&self.cpu)),
            ("os", Json::str(&self.os)),
            ("rustc", Json::str(&self.rustc)),
            ("commit", Json::str(&self.commit)),
        ])
    }
}

/// The first line of a command's stdout, or `unknown`.
pub fn command_line(cmd: &mut Command) -> String {
    cmd.output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".into())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}
