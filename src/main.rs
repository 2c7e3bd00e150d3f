//! The `lesson` command line: parse flags, run a command, map the result to an exit code.

#[macro_use]
mod out;
mod cli;

use std::process::ExitCode;

// Loading a bank allocates many small strings; mimalloc is markedly faster at that than the
// system allocator (the same choice as ruff and uv).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::Args::from_env();
    match cli::run(args) {
        Ok(code) => code,
        // the reader went away (`| head`): nothing to say, as `rg`
        Err(err) if err.chain().any(out::is_broken_pipe) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {}", out::error_chain(err.chain()));
            ExitCode::from(2)
        }
    }
}

/// Opt this process out of transparent huge pages. Where the kernel backs every anonymous mapping
/// with 2 MiB pages (`/sys/kernel/mm/transparent_hugepage/enabled` = `always`), mimalloc's
/// per-thread pages fault in 2 MiB at a time and the kernel spends its time zeroing them: on
/// a 100,000-lesson bank that was half of `lesson index`'s system time. A short-lived process
/// that reads many small files gains nothing from huge pages. (`MIMALLOC_ALLOW_THP=0` does
/// the same, but only from the environment.)
///
/// It runs before `main`, from `.init_array`: the runtime's first allocation, before `main`,
/// has mimalloc reserve its arena, and with `enabled` = `madvise` (mimalloc asks for huge
/// pages) that first touch zeroed two 2 MiB pages, 4% of a `lesson search` with a watcher.
#[cfg(target_os = "linux")]
extern "C" fn no_huge_pages() {
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static NO_HUGE_PAGES: extern "C" fn() = no_huge_pages;
