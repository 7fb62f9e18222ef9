//! Operating-system confinement of a worker process, applied before it reads any guest code.
//!
//! In order: file descriptors other than the worker's three pipes are closed; rlimits cap
//! address space, CPU time, file size, open files and core dumps; no-new-privileges is set;
//! Landlock (where the kernel has it) removes all filesystem access, TCP bind and connect,
//! abstract Unix sockets and signals to processes outside the worker; and a seccomp filter allows
//! only the system calls the interpreters need, each denied call failing with `EPERM`:
//!
//! - reading stdin (fd 0) and writing stdout and stderr (fds 1 and 2), nothing else that takes a
//!   file descriptor: no `open`, `socket`, `connect`, `ioctl`, `fstat`;
//! - memory (`mmap`, `mprotect` never with `PROT_EXEC`; `munmap`, `mremap`, `madvise`, `brk`);
//! - threads (`clone` with exactly the flags the C library's `pthread_create` passes, so no
//!   namespaces, no new process, no tracing, no exit signal; `clone3`, whose flags a filter
//!   cannot read, reports `ENOSYS`, so the C library falls back to `clone`), futexes, clocks,
//!   sleeping, `getrandom`;
//! - signals to its own process only (`tgkill` with its own pid; `abort` must work);
//! - nothing that creates a process, executes a program, traces one, or changes the filter.
//!
//! This file (with `confine/bpf.rs`, which compiles the allowlist into the filter the kernel
//! runs) and the host's worker start-up (`workers.rs`) are the operating
//! system's half of the sandbox; `docs/security.md` describes both halves.

use std::fmt;

/// Limits a worker puts on itself, derived from the gateway's execution limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ceilings {
    /// `RLIMIT_AS`: virtual address space, in bytes.
    pub address_space: u64,
    /// `RLIMIT_CPU`: CPU seconds; the kernel sends `SIGXCPU` at this and kills one second later.
    pub cpu_seconds: u64,
}

impl Ceilings {
    /// Ceilings generous enough for a guest within `memory_bytes`, `stack_bytes` and `timeout`,
    /// tight enough to stop a worker whose interpreter no longer honours its own limits.
    pub fn for_limits(
        memory_bytes: usize,
        stack_bytes: usize,
        timeout: std::time::Duration,
    ) -> Self {
        // The program, its threads and allocator arenas take some 160 MiB of address space.
        const BASE_ADDRESS_SPACE: u64 = 1 << 30;
        let stack = stack_bytes.saturating_add(toolweave_sandbox::THREAD_STACK_HEADROOM) as u64;
        Self {
            address_space: BASE_ADDRESS_SPACE
                .saturating_add((memory_bytes as u64).saturating_mul(4))
                .saturating_add(stack),
            cpu_seconds: timeout.as_secs().saturating_add(3),
        }
    }
}

/// How completely Landlock confines a worker on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LandlockState {
    /// Every restriction asked for is enforced.
    Full,
    /// The kernel's Landlock is older than this build: filesystem access is removed, some newer
    /// restrictions (network, scopes) are not.
    Partial,
    /// The kernel has no Landlock (too old, or not enabled at boot): the seccomp filter alone
    /// keeps the worker from opening files.
    Unavailable,
}

/// What confinement this machine offers, read without confining anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The kernel's Landlock ABI version, if it has Landlock.
    pub landlock_abi: Option<u32>,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Why confinement is unavailable altogether (another operating system or architecture).
    pub unsupported: Option<&'static str>,
}

impl Support {
    /// Lines a person can act on; empty when everything is in place.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if let Some(why) = self.unsupported {
            warnings.push(format!(
                "worker processes are not confined by the operating system: {why}; guest code is \
                 held only by the interpreters' own sandbox"
            ));
            return warnings;
        }
        if !self.seccomp {
            warnings.push(
                "this kernel cannot install seccomp filters: worker processes cannot be confined, \
                 so executions in worker isolation will fail; use a kernel with \
                 CONFIG_SECCOMP_FILTER, or --isolation in-process for trusted code"
                    .to_owned(),
            );
        }
        match self.landlock_abi {
            None => warnings.push(
                "this kernel has no Landlock (Linux 5.13+ with landlock in the lsm= boot list): \
                 worker processes keep only the seccomp filter between guest code and the \
                 filesystem"
                    .to_owned(),
            ),
            Some(abi) if abi < 4 => warnings.push(format!(
                "this kernel's Landlock is ABI {abi}: files are confined, but the network is held \
                 only by the seccomp filter (Linux 6.7+ confines TCP as well)"
            )),
            Some(_) => {}
        }
        warnings
    }
}

/// A confinement step that failed: the worker must not run guest code.
#[derive(Debug)]
pub struct ConfineError {
    step: &'static str,
    detail: String,
}

impl fmt::Display for ConfineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot confine the worker ({}): {}",
            self.step, self.detail
        )
    }
}

impl std::error::Error for ConfineError {}

fn failed(step: &'static str, detail: impl fmt::Display) -> ConfineError {
    ConfineError {
        step,
        detail: detail.to_string(),
    }
}

pub use imp::{confine, probe, self_check, step_aside};

#[cfg(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
))]
mod bpf;

/// What the confinement check tries after confining itself; each must be denied (see
/// [`self_check`]). Those named `clone_…` are `clone` with one flag a thread is not started
/// with. `toolweave doctor` and the confinement tests read this list.
pub const ESCAPE_ATTEMPTS: &[&str] = &[
    "open",
    "socket",
    "exec",
    "execve",
    "fork",
    "ptrace",
    "kill_parent",
    "mmap_exec",
    "raise_limit",
    "raise_priority",
    "clone_sigchld",
    "clone_pidfd",
    "clone_ptrace",
    "clone_vfork",
    "clone_parent",
    "clone_newns",
    #[cfg(not(target_env = "musl"))]
    "clone_detached",
    "clone_untraced",
    "clone_child_settid",
    "clone_newcgroup",
    "clone_newuts",
    "clone_newipc",
    "clone_newuser",
    "clone_newpid",
    "clone_newnet",
    "clone_io",
];

#[cfg(not(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
)))]
mod imp {
    use super::{Ceilings, ConfineError, LandlockState, Support};

    const WHY: &str = "seccomp and Landlock exist only on Linux (x86_64, aarch64, riscv64)";

    /// What this machine offers: nothing.
    pub fn probe() -> Support {
        Support {
            landlock_abi: None,
            seccomp: false,
            unsupported: Some(WHY),
        }
    }

    /// Nothing to apply here; the start-up warning says so.
    pub fn confine(_ceilings: &Ceilings) -> Result<LandlockState, ConfineError> {
        Ok(LandlockState::Unavailable)
    }

    /// Nothing to check.
    pub fn self_check() -> serde_json::Value {
        serde_json::json!({ "unsupported": WHY })
    }

    /// Nothing to do: the scheduling class is Linux's.
    pub fn step_aside() {}
}

#[cfg(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
))]
mod imp {
    use std::collections::BTreeMap;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
        RulesetStatus, Scope,
    };
    use nix::sys::resource::{Resource, getrlimit, setrlimit};

    use super::{Ceilings, ConfineError, LandlockState, Support, bpf, failed};

    /// The newest Landlock ABI this build asks for; older kernels get what they have.
    const LANDLOCK_ABI: ABI = ABI::V6;

    /// What this machine offers.
    pub fn probe() -> Support {
        Support {
            landlock_abi: landlock_abi(),
            // The kernel shows a `Seccomp:` line only when it has seccomp; filters (not only
            // strict mode) are what workers need, and every kernel with seccomp since 3.5 has
            // them.
            seccomp: seccomp_mode().is_some(),
            unsupported: None,
        }
    }

    #[allow(unsafe_code)]
    fn landlock_abi() -> Option<u32> {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: landlock_create_ruleset(NULL, 0, VERSION) reads no memory and creates nothing;
        // it answers the ABI version, or fails where the kernel has no Landlock.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        u32::try_from(version).ok().filter(|version| *version > 0)
    }

    fn seccomp_mode() -> Option<u32> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("Seccomp:"))
            .and_then(|mode| mode.trim().parse().ok())
    }

    /// Confines the calling process for good. Call it while the process has one thread: the
    /// Landlock domain binds the calling thread and the threads it starts afterwards.
    pub fn confine(ceilings: &Ceilings) -> Result<LandlockState, ConfineError> {
        close_inherited_descriptors()?;
        // Landlock first: creating its ruleset takes a descriptor, which the rlimits forbid.
        let landlock = restrict_filesystem_and_network()?;
        limit_resources(ceilings)?;
        install_seccomp_filter()?;
        Ok(landlock)
    }

    /// Moves the calling thread to the idle scheduling class, for good: from then on it runs
    /// only on a core nothing else wants. For a worker's work after its outcome is sent (freeing
    /// its memory as it exits), which would otherwise compete with the next execution.
    pub fn step_aside() {
        // A failure only leaves the thread where it was.
        let _ = set_scheduler(libc::SCHED_IDLE, 0);
    }

    /// Puts the calling thread under `policy` at `priority`.
    #[allow(unsafe_code)]
    fn set_scheduler(policy: libc::c_int, priority: libc::c_int) -> Result<(), nix::errno::Errno> {
        let parameters = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: sched_setscheduler for the calling thread (0) reads the parameters from a
        // valid local and changes nothing but this thread's scheduling.
        let result = unsafe { libc::sched_setscheduler(0, policy, &parameters) };
        nix::errno::Errno::result(result).map(drop)
    }

    /// Closes every descriptor but stdin, stdout and stderr.
    fn close_inherited_descriptors() -> Result<(), ConfineError> {
        // Linux before 5.9 has no close_range, and a container's own seccomp profile may deny
        // it: then the descriptors are listed and closed one by one.
        if close_range_above_stderr().is_ok() {
            return Ok(());
        }
        // Descriptors are listed first and closed afterwards: the listing holds one open.
        let entries = std::fs::read_dir("/proc/self/fd")
            .map_err(|error| failed("listing open file descriptors", error))?;
        let descriptors: Vec<i32> = entries
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .filter(|fd| *fd > 2)
            .collect();
        for fd in descriptors {
            // The listing's own descriptor is already closed by now: EBADF is expected for it.
            match close(fd) {
                Ok(()) | Err(nix::errno::Errno::EBADF) => {}
                Err(error) => return Err(failed("closing inherited file descriptors", error)),
            }
        }
        Ok(())
    }

    #[allow(unsafe_code)]
    fn close_range_above_stderr() -> Result<(), nix::errno::Errno> {
        // SAFETY: close_range(3, ~0, 0) reads no memory; no Rust object owns a descriptor above 2
        // here (the worker has opened nothing yet, and what it inherited is not owned by it).
        let result = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
        nix::errno::Errno::result(result).map(drop)
    }

    #[allow(unsafe_code)]
    fn close(fd: i32) -> Result<(), nix::errno::Errno> {
        // SAFETY: `fd` came from this process's descriptor table and no Rust object owns a
        // descriptor above 2 here: the worker has opened nothing but its listing, already gone.
        let result = unsafe { libc::close(fd) };
        nix::errno::Errno::result(result).map(drop)
    }

    fn limit_resources(ceilings: &Ceilings) -> Result<(), ConfineError> {
        let limits = [
            (
                Resource::RLIMIT_AS,
                ceilings.address_space,
                ceilings.address_space,
            ),
            (
                Resource::RLIMIT_CPU,
                ceilings.cpu_seconds,
                ceilings.cpu_seconds.saturating_add(1),
            ),
            // Nothing may be written to a file; the worker's pipes are not files.
            (Resource::RLIMIT_FSIZE, 0, 0),
            // No new descriptors beyond the three it has (the seccomp filter denies opens too).
            (Resource::RLIMIT_NOFILE, 3, 3),
            // A crash leaves no core file with guest data in it.
            (Resource::RLIMIT_CORE, 0, 0),
        ];
        for (resource, soft, hard) in limits {
            // A limit can only be lowered: keep any stricter one the process was given.
            let (_, current_hard) =
                getrlimit(resource).map_err(|error| failed("reading rlimits", error))?;
            let hard = hard.min(current_hard);
            setrlimit(resource, soft.min(hard), hard)
                .map_err(|error| failed("setting rlimits", format!("{resource:?}: {error}")))?;
        }
        Ok(())
    }

    fn restrict_filesystem_and_network() -> Result<LandlockState, ConfineError> {
        let status = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(LANDLOCK_ABI))
            .and_then(|ruleset| ruleset.handle_access(AccessNet::from_all(LANDLOCK_ABI)))
            .and_then(|ruleset| ruleset.scope(Scope::from_all(LANDLOCK_ABI)))
            .and_then(|ruleset| ruleset.create())
            // No rules: nothing beneath any path is allowed, no port may be bound or connected.
            .and_then(|ruleset| ruleset.restrict_self())
            .map_err(|error| failed("Landlock", error))?;
        if !status.no_new_privs {
            return Err(failed("no-new-privileges", "prctl did not take effect"));
        }
        Ok(match status.ruleset {
            RulesetStatus::FullyEnforced => LandlockState::Full,
            RulesetStatus::PartiallyEnforced => LandlockState::Partial,
            RulesetStatus::NotEnforced => LandlockState::Unavailable,
        })
    }

    fn install_seccomp_filter() -> Result<(), ConfineError> {
        let program = seccomp_policy(std::process::id())
            .and_then(|policy| bpf::compile(&policy))
            .map_err(|error| failed("building the seccomp filter", error))?;
        bpf::install(&program).map_err(|error| failed("installing the seccomp filter", error))
    }

    /// The `AUDIT_ARCH_*` value of this machine's system call ABI.
    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;
    #[cfg(target_arch = "riscv64")]
    const AUDIT_ARCH: u32 = 243 | 0x8000_0000 | 0x4000_0000;

    /// The `clone` flags of a new thread: exactly what the C library's `pthread_create` passes
    /// (glibc's `create_thread`; musl adds `CLONE_DETACHED`, which the kernel ignores), and
    /// Rust's threads are made by `pthread_create`. The exit signal is none.
    const THREAD_CLONE_FLAGS: libc::c_int = libc::CLONE_VM
        | libc::CLONE_FS
        | libc::CLONE_FILES
        | libc::CLONE_SIGHAND
        | libc::CLONE_THREAD
        | libc::CLONE_SYSVSEM
        | libc::CLONE_SETTLS
        | libc::CLONE_PARENT_SETTID
        | libc::CLONE_CHILD_CLEARTID
        | if cfg!(target_env = "musl") {
            libc::CLONE_DETACHED
        } else {
            0
        };

    /// Every other flag `clone` takes in its low half, by the name the confinement check reports
    /// it under: added to [`THREAD_CLONE_FLAGS`], each is refused. (New namespaces, a process
    /// that is not a thread of this one, tracing, a pidfd, an exit signal.)
    pub(super) const REFUSED_CLONE_FLAGS: &[(&str, libc::c_int)] = &[
        ("clone_sigchld", libc::SIGCHLD),
        ("clone_pidfd", libc::CLONE_PIDFD),
        ("clone_ptrace", libc::CLONE_PTRACE),
        ("clone_vfork", libc::CLONE_VFORK),
        ("clone_parent", libc::CLONE_PARENT),
        ("clone_newns", libc::CLONE_NEWNS),
        #[cfg(not(target_env = "musl"))]
        ("clone_detached", libc::CLONE_DETACHED),
        ("clone_untraced", libc::CLONE_UNTRACED),
        ("clone_child_settid", libc::CLONE_CHILD_SETTID),
        ("clone_newcgroup", libc::CLONE_NEWCGROUP),
        ("clone_newuts", libc::CLONE_NEWUTS),
        ("clone_newipc", libc::CLONE_NEWIPC),
        ("clone_newuser", libc::CLONE_NEWUSER),
        ("clone_newpid", libc::CLONE_NEWPID),
        ("clone_newnet", libc::CLONE_NEWNET),
        ("clone_io", libc::CLONE_IO),
    ];

    fn number(call: libc::c_long) -> Result<u32, String> {
        u32::try_from(call).map_err(|_| format!("system call number {call} out of range"))
    }

    /// The allowlist: every call a worker may make, and what else it must hold for some. The
    /// one table of it: the filter is compiled from it, and its test builds it again with a
    /// general-purpose filter builder to compare the answers. Installing a filter calls `prctl`,
    /// which the allowlist denies, so it is installed last.
    fn seccomp_policy(pid: u32) -> Result<bpf::Policy, String> {
        use bpf::{Check, Verdict};
        let always = [
            libc::SYS_close,
            libc::SYS_munmap,
            libc::SYS_mremap,
            libc::SYS_madvise,
            libc::SYS_brk,
            libc::SYS_futex,
            libc::SYS_sched_yield,
            libc::SYS_sched_getaffinity,
            libc::SYS_nanosleep,
            libc::SYS_clock_nanosleep,
            libc::SYS_clock_gettime,
            libc::SYS_clock_getres,
            libc::SYS_gettimeofday,
            libc::SYS_getrandom,
            libc::SYS_rt_sigreturn,
            libc::SYS_rt_sigprocmask,
            libc::SYS_rt_sigaction,
            libc::SYS_sigaltstack,
            libc::SYS_set_robust_list,
            libc::SYS_rseq,
            libc::SYS_gettid,
            libc::SYS_getpid,
            libc::SYS_exit,
            libc::SYS_exit_group,
            libc::SYS_restart_syscall,
            // Waiting for the host's next message on stdin, with a deadline.
            libc::SYS_ppoll,
            #[cfg(target_arch = "x86_64")]
            libc::SYS_poll,
        ];
        let mut calls = BTreeMap::new();
        for call in always {
            calls.insert(number(call)?, Verdict::Allow);
        }
        let check = |argument, mask, value| Check {
            argument,
            mask,
            value,
        };
        let equals = |argument, value: u32| check(argument, u32::MAX, value);
        let only = |checks: Vec<Vec<Check>>| Verdict::AllowIf(checks);
        // `clone3` passes its flags in memory a filter cannot read: it reports ENOSYS, so the C
        // library falls back to `clone`.
        calls.insert(
            number(libc::SYS_clone3)?,
            Verdict::Errno(libc::ENOSYS as u32),
        );
        let no_exec = || vec![vec![check(2, libc::PROT_EXEC as u32, 0)]];
        calls.insert(number(libc::SYS_mmap)?, only(no_exec()));
        calls.insert(number(libc::SYS_mprotect)?, only(no_exec()));
        calls.insert(number(libc::SYS_read)?, only(vec![vec![equals(0, 0)]]));
        for call in [libc::SYS_write, libc::SYS_writev] {
            calls.insert(
                number(call)?,
                only(vec![vec![equals(0, 1)], vec![equals(0, 2)]]),
            );
        }
        // Threads only, made as `pthread_create` makes them. (The kernel reads the low half of
        // `clone`'s flags, which is what the check compares.)
        calls.insert(
            number(libc::SYS_clone)?,
            only(vec![vec![equals(0, THREAD_CLONE_FLAGS as u32)]]),
        );
        // Signals to its own process only (`abort` must work).
        calls.insert(number(libc::SYS_tgkill)?, only(vec![vec![equals(0, pid)]]));
        // Thread names (the C library and std name threads this way).
        calls.insert(
            number(libc::SYS_prctl)?,
            only(vec![vec![equals(0, libc::PR_SET_NAME as u32)]]),
        );
        // The calling thread into the idle class (`step_aside`): it can only lower its own
        // priority.
        calls.insert(
            number(libc::SYS_sched_setscheduler)?,
            only(vec![vec![equals(0, 0), equals(1, libc::SCHED_IDLE as u32)]]),
        );
        Ok(bpf::Policy {
            arch: AUDIT_ARCH,
            calls,
            default_errno: libc::EPERM as u32,
        })
    }

    /// Confines this process, then tries what a guest that escaped its interpreter would try,
    /// and reports each outcome (`"denied: <errno>"` or `"allowed"`). For the confinement tests;
    /// run as `toolweave __toolweave-worker confinement-check`.
    pub fn self_check() -> serde_json::Value {
        use serde_json::json;
        let ceilings = Ceilings {
            address_space: 2 << 30,
            cpu_seconds: 10,
        };
        let mut report = serde_json::Map::new();
        if let Err(error) = landlock_checks(&mut report) {
            return json!({ "error": error.to_string() });
        }
        if let Err(error) = limit_resources(&ceilings).and_then(|()| install_seccomp_filter()) {
            return json!({ "error": error.to_string() });
        }
        seccomp_checks(&mut report);
        serde_json::Value::Object(report)
    }

    /// What a call's result says: `"allowed"`, or `"denied: <errno>"`.
    fn outcome(result: Result<(), nix::errno::Errno>) -> String {
        match result {
            Ok(()) => "allowed".to_owned(),
            Err(errno) => format!("denied: {}", errno.desc()),
        }
    }

    /// [`outcome`] of an I/O result.
    fn io_outcome(result: std::io::Result<()>) -> String {
        outcome(result.map_err(|error| {
            nix::errno::Errno::from_raw(error.raw_os_error().unwrap_or(libc::EIO))
        }))
    }

    /// Landlock alone, before the seccomp filter hides what it denies: what it denies of the
    /// files and the network, into `report`.
    fn landlock_checks(
        report: &mut serde_json::Map<String, serde_json::Value>,
    ) -> Result<(), ConfineError> {
        use serde_json::json;
        // Landlock alone first: what it denies is seen before the seccomp filter hides it.
        let landlock =
            close_inherited_descriptors().and_then(|()| restrict_filesystem_and_network())?;
        report.insert("landlock".into(), json!(format!("{landlock:?}")));
        report.insert(
            "landlock_open".into(),
            json!(io_outcome(std::fs::File::open("/etc/hostname").map(drop))),
        );
        report.insert(
            "landlock_create".into(),
            json!(io_outcome(std::fs::write(
                "/tmp/toolweave-confinement-check",
                b"x"
            ))),
        );
        report.insert(
            "landlock_connect".into(),
            json!(io_outcome(
                std::net::TcpStream::connect("127.0.0.1:9").map(drop)
            )),
        );
        Ok(())
    }

    /// What the seccomp filter and the resource limits deny, into `report`; the scheduling
    /// class last, as this thread runs only on idle cores after it.
    fn seccomp_checks(report: &mut serde_json::Map<String, serde_json::Value>) {
        use serde_json::json;
        report.insert(
            "open".into(),
            json!(io_outcome(std::fs::File::open("/etc/hostname").map(drop))),
        );
        report.insert(
            "socket".into(),
            json!(io_outcome(
                std::net::UdpSocket::bind("127.0.0.1:0").map(drop)
            )),
        );
        report.insert(
            "exec".into(),
            json!(io_outcome(
                std::process::Command::new("/bin/true").status().map(drop)
            )),
        );
        report.insert("fork".into(), json!(outcome(fork())));
        report.insert("execve".into(), json!(outcome(execve())));
        report.insert(
            "ptrace".into(),
            json!(outcome(
                nix::sys::ptrace::attach(nix::unistd::getppid()).map(drop)
            )),
        );
        report.insert(
            "kill_parent".into(),
            json!(outcome(nix::sys::signal::kill(
                nix::unistd::getppid(),
                None
            ))),
        );
        report.insert("mmap_exec".into(), json!(outcome(mmap_exec())));
        report.insert(
            "raise_limit".into(),
            json!(outcome(setrlimit(Resource::RLIMIT_NOFILE, 1024, 1024))),
        );
        // Real-time scheduling would let a guest starve the machine (root may, unconfined).
        report.insert(
            "raise_priority".into(),
            json!(outcome(set_scheduler(libc::SCHED_FIFO, 1))),
        );
        report.insert(
            "thread".into(),
            json!(match std::thread::Builder::new()
                .name("check".to_owned())
                .spawn(|| 6 * 7)
                .map(|handle| handle.join())
            {
                Ok(Ok(42)) => "allowed".to_owned(),
                Ok(_) => "failed".to_owned(),
                Err(error) => format!("denied: {error}"),
            }),
        );
        // A thread made as `pthread_create` makes one, then with each other flag added.
        report.insert("clone_thread".into(), json!(outcome(clone_thread(0))));
        for (name, flag) in REFUSED_CLONE_FLAGS {
            report.insert((*name).into(), json!(outcome(clone_thread(*flag))));
        }
        // Last: this thread runs only on idle cores from here on.
        report.insert(
            "idle_class".into(),
            json!(outcome(set_scheduler(libc::SCHED_IDLE, 0))),
        );
    }

    #[allow(unsafe_code)]
    fn fork() -> Result<(), nix::errno::Errno> {
        // SAFETY: raw fork without the C library's handlers; a child, should one be created,
        // exits at once without touching anything.
        let result = unsafe { libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0) };
        if result == 0 {
            // SAFETY: the child leaves immediately.
            unsafe { libc::_exit(0) };
        }
        nix::errno::Errno::result(result).map(drop)
    }

    /// Calls `clone` with [`THREAD_CLONE_FLAGS`] and `extra`, as `pthread_create` does (a stack,
    /// this thread's thread pointer, the thread id written and cleared at the same place); a
    /// thread made this way ends at once, and this waits until it has.
    #[allow(unsafe_code)]
    fn clone_thread(extra: libc::c_int) -> Result<(), nix::errno::Errno> {
        use std::sync::atomic::{AtomicI32, Ordering};
        use std::time::{Duration, Instant};

        extern "C" fn end_at_once(_: *mut libc::c_void) -> libc::c_int {
            0
        }
        // 16-byte aligned, as every ABI here wants a stack.
        let mut stack = vec![0u128; 4096];
        let top = stack.as_mut_ptr_range().end.cast::<libc::c_void>();
        let tid = AtomicI32::new(0);
        // SAFETY: the new thread runs `end_at_once` on `stack` (which outlives it: see below) and
        // exits; it touches no memory but its stack, `tid` (the kernel writes its id there and
        // clears it as it ends) and, through the thread pointer, nothing (`end_at_once` reads no
        // thread-local state).
        let result = unsafe {
            libc::clone(
                end_at_once,
                top,
                THREAD_CLONE_FLAGS | extra,
                std::ptr::null_mut::<libc::c_void>(),
                tid.as_ptr(),
                thread_pointer(),
                tid.as_ptr(),
            )
        };
        if result == -1 {
            return Err(nix::errno::Errno::last());
        }
        // The kernel clears `tid` once the thread has ended; its stack may go then, not before.
        let until = Instant::now() + Duration::from_secs(2);
        while tid.load(Ordering::Acquire) != 0 {
            if Instant::now() >= until {
                std::mem::forget(stack);
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// The calling thread's thread pointer: what `CLONE_SETTLS` gives a new thread.
    #[allow(unsafe_code)]
    fn thread_pointer() -> *mut libc::c_void {
        let pointer: usize;
        // SAFETY: reads the thread pointer (on x86-64, the thread control block's pointer to
        // itself, which the ABI puts at its start); writes nothing.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            std::arch::asm!(
                "mov {}, qword ptr fs:[0]",
                out(reg) pointer,
                options(nostack, readonly, preserves_flags)
            );
        }
        // SAFETY: reads the thread pointer register; writes nothing.
        #[cfg(target_arch = "aarch64")]
        unsafe {
            std::arch::asm!(
                "mrs {}, tpidr_el0",
                out(reg) pointer,
                options(nomem, nostack, preserves_flags)
            );
        }
        // SAFETY: reads the thread pointer register; writes nothing.
        #[cfg(target_arch = "riscv64")]
        unsafe {
            std::arch::asm!("mv {}, tp", out(reg) pointer, options(nomem, nostack, preserves_flags));
        }
        pointer as *mut libc::c_void
    }

    fn execve() -> Result<(), nix::errno::Errno> {
        let program = c"/bin/true";
        nix::unistd::execv(program, &[program]).map(drop)
    }

    #[allow(unsafe_code)]
    fn mmap_exec() -> Result<(), nix::errno::Errno> {
        // SAFETY: an anonymous private mapping of one page, unmapped again if it was made.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_EXEC,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if address == libc::MAP_FAILED {
            return Err(nix::errno::Errno::last());
        }
        // SAFETY: the mapping made just above.
        unsafe { libc::munmap(address, 4096) };
        Ok(())
    }

    #[cfg(test)]
    mod tests {
        use std::collections::BTreeMap;

        use seccompiler::{
            BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
            SeccompFilter, SeccompRule, TargetArch,
        };

        use super::{AUDIT_ARCH, REFUSED_CLONE_FLAGS, THREAD_CLONE_FLAGS, bpf, seccomp_policy};

        // The allowlist the filter is compiled from (`seccomp_policy`, the one table of what a
        // worker may call), built again with a general-purpose filter builder: filters of
        // comparison chains. The binary search must answer every call as they do.
        fn target_arch() -> Result<TargetArch, String> {
            TargetArch::try_from(std::env::consts::ARCH).map_err(|error| format!("{error:?}"))
        }

        /// A check of the table as the builder writes it: the low half of an argument, equal to
        /// a value, or equal to it once masked.
        fn condition(check: &bpf::Check) -> Result<SeccompCondition, String> {
            let operation = if check.mask == u32::MAX {
                SeccompCmpOp::Eq
            } else {
                SeccompCmpOp::MaskedEq(u64::from(check.mask))
            };
            SeccompCondition::new(
                check.argument,
                SeccompCmpArgLen::Dword,
                operation,
                u64::from(check.value),
            )
            .map_err(|error| error.to_string())
        }

        /// What glibc's `pthread_create` passes to `clone` (and musl's, with `CLONE_DETACHED`).
        fn pthread_flags() -> u64 {
            u64::from(THREAD_CLONE_FLAGS as u32)
        }

        /// The filters, in installation order: one per errno a call of the table fails with
        /// (`clone3` → `ENOSYS`), then the allowlist (which lets those calls through to the
        /// first filters' answer).
        fn seccomp_program(pid: u32) -> Result<Vec<BpfProgram>, String> {
            let arch = target_arch()?;
            let policy = seccomp_policy(pid)?;
            let mut allowed: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
            let mut failing: BTreeMap<u32, BTreeMap<i64, Vec<SeccompRule>>> = BTreeMap::new();
            for (call, verdict) in &policy.calls {
                let call = i64::from(*call);
                match verdict {
                    bpf::Verdict::Allow => {
                        allowed.insert(call, Vec::new());
                    }
                    bpf::Verdict::Errno(errno) => {
                        allowed.insert(call, Vec::new());
                        failing.entry(*errno).or_default().insert(call, Vec::new());
                    }
                    bpf::Verdict::AllowIf(groups) => {
                        let mut rules = Vec::new();
                        for group in groups {
                            let conditions =
                                group.iter().map(condition).collect::<Result<_, _>>()?;
                            rules.push(
                                SeccompRule::new(conditions).map_err(|error| error.to_string())?,
                            );
                        }
                        allowed.insert(call, rules);
                    }
                }
            }
            let mut filters = Vec::new();
            for (errno, calls) in failing {
                filters.push(
                    SeccompFilter::new(
                        calls,
                        SeccompAction::Allow,
                        SeccompAction::Errno(errno),
                        arch,
                    )
                    .map_err(|error| error.to_string())?,
                );
            }
            filters.push(
                SeccompFilter::new(
                    allowed,
                    SeccompAction::Errno(policy.default_errno),
                    SeccompAction::Allow,
                    arch,
                )
                .map_err(|error| error.to_string())?,
            );
            filters
                .into_iter()
                .map(|filter| BpfProgram::try_from(filter).map_err(|error| error.to_string()))
                .collect()
        }

        /// What the kernel answers with both reference filters installed: the more restrictive
        /// action, the newer filter's on a tie.
        fn reference(programs: &[BpfProgram], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
            let mut answer: Option<u32> = None;
            for program in programs.iter().rev() {
                let program: Vec<libc::sock_filter> = program
                    .iter()
                    .map(|i| libc::sock_filter {
                        code: i.code,
                        jt: i.jt,
                        jf: i.jf,
                        k: i.k,
                    })
                    .collect();
                let this = bpf::run(&program, arch, nr, args);
                let action = |value: u32| (value & libc::SECCOMP_RET_ACTION_FULL) as i32;
                if answer.is_none_or(|kept| action(this) < action(kept)) {
                    answer = Some(this);
                }
            }
            answer.unwrap()
        }

        #[test]
        fn a_thread_that_steps_aside_is_in_the_idle_class_and_others_are_not() {
            let policy = || {
                // SAFETY: sched_getscheduler(0) reads the calling thread's policy, nothing else.
                #[allow(unsafe_code)]
                unsafe {
                    libc::sched_getscheduler(0)
                }
            };
            let before = policy();
            let inside = std::thread::spawn(move || {
                super::step_aside();
                policy()
            })
            .join()
            .unwrap();
            assert_eq!(inside, libc::SCHED_IDLE);
            assert_eq!(policy(), before, "the calling thread moved too");
            assert_ne!(before, libc::SCHED_IDLE);
        }

        #[test]
        fn the_binary_search_answers_every_call_as_the_reference_filters_do() {
            let pid = 4242;
            let references = seccomp_program(pid).unwrap();
            let program = bpf::compile(&seccomp_policy(pid).unwrap()).unwrap();
            let chains: usize = references.iter().map(Vec::len).sum();
            println!(
                "{} instructions, against {chains} in two chains",
                program.len()
            );
            let values: Vec<u64> = vec![
                0,
                1,
                2,
                3,
                libc::PROT_READ as u64,
                (libc::PROT_READ | libc::PROT_EXEC) as u64,
                libc::PROT_EXEC as u64,
                libc::CLONE_THREAD as u64,
                (libc::CLONE_VM | libc::CLONE_THREAD | libc::CLONE_SIGHAND) as u64,
                libc::CLONE_VM as u64,
                libc::SIGCHLD as u64,
                u64::from(pid),
                u64::from(pid) + 1,
                libc::PR_SET_NAME as u64,
                libc::PR_SET_SECCOMP as u64,
                (1 << 32) | 1,
                (1 << 32) | u64::from(pid),
                u64::MAX,
            ];
            let numbers = || (0..1024).chain([0x4000_0000, 0x4000_0001, 0x4000_0038, u32::MAX]);
            let mut compared = 0;
            let mut compare = |nr, args| {
                let ours = bpf::run(&program, AUDIT_ARCH, nr, args);
                let theirs = reference(&references, AUDIT_ARCH, nr, args);
                assert_eq!(ours, theirs, "call {nr} with {args:?}");
                compared += 1;
            };
            for nr in numbers() {
                for first in &values {
                    for third in &values {
                        compare(nr, [*first, 0, *third, 0, 0, 0]);
                    }
                }
            }
            // The second argument matters to one call (the scheduling policy).
            let policies = [
                libc::SCHED_IDLE as u64,
                libc::SCHED_FIFO as u64,
                libc::SCHED_BATCH as u64,
                (1 << 32) | libc::SCHED_IDLE as u64,
                u64::MAX,
            ];
            for nr in numbers() {
                for first in &values {
                    for second in policies {
                        compare(nr, [*first, second, 0, 0, 0, 0]);
                    }
                }
            }
            // The first argument is `clone`'s flags: the thread's, each other flag added to them
            // or left out of them, and the high half set (which `clone` ignores).
            let thread = pthread_flags();
            let mut flags = vec![thread, thread | (1 << 32), thread | (1 << 63)];
            for bit in 0..32 {
                flags.push(thread ^ (1 << bit));
            }
            for nr in numbers() {
                for first in &flags {
                    compare(nr, [*first, 0, 0, 0, 0, 0]);
                }
            }
            assert!(compared > 400_000);
            // Another ABI (32-bit calls on a 64-bit kernel) kills the process, in both.
            let other = AUDIT_ARCH ^ 0x8000_0000;
            let ours = bpf::run(&program, other, 1, [0; 6]);
            assert_eq!(ours, libc::SECCOMP_RET_KILL_PROCESS);
            assert_eq!(ours, reference(&references, other, 1, [0; 6]));
            // And the answers are the ones meant.
            let run = |nr: libc::c_long, args| bpf::run(&program, AUDIT_ARCH, nr as u32, args);
            let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
            assert_eq!(run(libc::SYS_getpid, [0; 6]), libc::SECCOMP_RET_ALLOW);
            let idle = libc::SCHED_IDLE as u64;
            let fifo = libc::SCHED_FIFO as u64;
            let scheduler = libc::SYS_sched_setscheduler;
            assert_eq!(
                run(scheduler, [0, idle, 0, 0, 0, 0]),
                libc::SECCOMP_RET_ALLOW
            );
            assert_eq!(run(scheduler, [0, fifo, 0, 0, 0, 0]), eperm);
            assert_eq!(run(scheduler, [1, idle, 0, 0, 0, 0]), eperm);
            assert_eq!(run(libc::SYS_openat, [0; 6]), eperm);
            assert_eq!(
                run(libc::SYS_clone3, [0; 6]),
                libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32
            );
            assert_eq!(
                run(libc::SYS_write, [2, 0, 0, 0, 0, 0]),
                libc::SECCOMP_RET_ALLOW
            );
            assert_eq!(run(libc::SYS_write, [3, 0, 0, 0, 0, 0]), eperm);
            let clone = |flags: libc::c_int| run(libc::SYS_clone, [flags as u64, 0, 0, 0, 0, 0]);
            assert_eq!(clone(THREAD_CLONE_FLAGS), libc::SECCOMP_RET_ALLOW);
            for (name, flag) in REFUSED_CLONE_FLAGS {
                assert_eq!(clone(THREAD_CLONE_FLAGS | flag), eperm, "{name}");
            }
            // A fork, and a thread short of what `pthread_create` passes.
            assert_eq!(clone(libc::SIGCHLD), eperm);
            assert_eq!(
                clone(libc::CLONE_VM | libc::CLONE_SIGHAND | libc::CLONE_THREAD),
                eperm
            );
        }

        #[test]
        fn every_refused_clone_flag_is_one_the_confinement_check_reports() {
            let mut all = THREAD_CLONE_FLAGS;
            for (name, flag) in REFUSED_CLONE_FLAGS {
                assert!(super::super::ESCAPE_ATTEMPTS.contains(name), "{name}");
                assert!(name.starts_with("clone_"), "{name}");
                if flag & libc::CSIGNAL == 0 {
                    assert_eq!(flag.count_ones(), 1, "{name}: one flag at a time");
                }
                assert_eq!(all & flag, 0, "{name} twice, or a thread's own");
                all |= flag;
            }
            // With the exit signal's byte, every bit `clone` reads is the thread's or refused.
            assert_eq!(all | libc::CSIGNAL, -1, "{:#x}", !(all | libc::CSIGNAL));
            // And every attempt named as one is one of them.
            for attempt in super::super::ESCAPE_ATTEMPTS {
                if attempt.starts_with("clone_") {
                    assert!(
                        REFUSED_CLONE_FLAGS.iter().any(|(name, _)| name == attempt),
                        "{attempt}"
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod warning_tests {
    use super::Support;

    fn support(landlock_abi: Option<u32>, seccomp: bool) -> Support {
        Support {
            landlock_abi,
            seccomp,
            unsupported: None,
        }
    }

    #[test]
    fn each_missing_piece_of_confinement_is_one_warning_that_says_what_to_do() {
        assert!(support(Some(4), true).warnings().is_empty());
        assert!(support(Some(6), true).warnings().is_empty());

        let old_landlock = support(Some(3), true).warnings();
        assert_eq!(old_landlock.len(), 1, "{old_landlock:?}");
        assert!(
            old_landlock[0].contains("Landlock is ABI 3"),
            "{old_landlock:?}"
        );
        assert!(old_landlock[0].contains("Linux 6.7+"), "{old_landlock:?}");

        let no_landlock = support(None, true).warnings();
        assert_eq!(no_landlock.len(), 1, "{no_landlock:?}");
        assert!(no_landlock[0].contains("no Landlock"), "{no_landlock:?}");
        assert!(no_landlock[0].contains("lsm="), "{no_landlock:?}");

        let nothing = support(None, false).warnings();
        assert_eq!(nothing.len(), 2, "{nothing:?}");
        assert!(
            nothing[0].contains("cannot install seccomp filters"),
            "{nothing:?}"
        );
        assert!(nothing[0].contains("--isolation in-process"), "{nothing:?}");

        // Another system: one line that says so, and nothing about kernel features.
        let elsewhere = Support {
            landlock_abi: None,
            seccomp: false,
            unsupported: Some("this build confines workers on Linux x86-64 and aarch64 only"),
        }
        .warnings();
        assert_eq!(elsewhere.len(), 1, "{elsewhere:?}");
        assert!(
            elsewhere[0].contains("not confined by the operating system"),
            "{elsewhere:?}"
        );
    }
}
