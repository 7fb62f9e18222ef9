mod cancel;
mod cases;
mod cli;
mod confinement;
mod failures;
mod npm;
mod protocol;

use std::path::{Path, PathBuf};

/// The binary under test.
pub fn toolweave() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_toolweave"))
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The worker processes a gateway has started (running or waiting), by process id.
pub fn worker_processes(gateway: u32) -> Vec<u32> {
    let mut workers = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().filter_map(Result::ok) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        // A process may end while it is looked at: skip what cannot be read.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
        let parent = after_name.split_whitespace().nth(1);
        if parent != Some(gateway.to_string().as_str()) {
            continue;
        }
        let command_line = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if command_line
            .split(|byte| *byte == 0)
            .any(|argument| argument == b"__toolweave-worker")
        {
            workers.push(pid);
        }
    }
    workers
}

/// CPU time (user + system, in clock ticks) of a process's threads whose name starts with
/// `prefix` (all of them for an empty prefix); 0 for a process that is gone.
pub fn cpu_ticks(process_id: u32, prefix: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{process_id}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|name| name.starts_with(prefix))
        })
        .filter_map(|task| std::fs::read_to_string(task.path().join("stat")).ok())
        .map(|stat| {
            // Fields after the parenthesised name: state is the 3rd field, utime the 14th,
            // stime the 15th.
            let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
            let fields: Vec<&str> = after_name.split_whitespace().collect();
            fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
        })
        .sum()
}
