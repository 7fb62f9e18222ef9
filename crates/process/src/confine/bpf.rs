//! A worker's seccomp allowlist compiled to a classic BPF program that finds the system call by
//! binary search.
//!
//! When the kernel installs a filter it runs it once for every system call number of every ABI,
//! under a lock, to learn which calls it may allow without running the filter (its action
//! cache). A chain of comparisons, one per allowed call, makes that cost grow with the list: two
//! such filters (what a general-purpose filter builder makes of the allowlist) took a sizeable
//! part of a short worker's life. Found by binary search, a call number
//! takes a handful of comparisons, and one program holds every answer.
//!
//! The program: anything but this machine's ABI kills the process; then the call number is
//! compared down a balanced tree to at most [`LEAF_CALLS`] candidates; a call found gets its
//! verdict (allowed, an errno, or allowed when its argument checks hold); any other call, and a
//! call whose checks fail, gets the default errno. Argument checks read the low 32 bits of an
//! argument (every argument checked is an `int` or flags within them).

use std::collections::BTreeMap;

use libc::sock_filter;

// Classic BPF opcodes (linux/bpf_common.h).
// BPF_LD | BPF_W | BPF_ABS (the first two are 0).
const LD_W_ABS: u16 = 0x20;
const ALU_AND_K: u16 = 0x04 | 0x50;
const JMP_JA: u16 = 0x05;
const JMP_JEQ_K: u16 = 0x05 | 0x10;
const JMP_JGE_K: u16 = 0x05 | 0x30;
const RET_K: u16 = 0x06;

// Offsets in `struct seccomp_data`; an argument's low half comes first on little-endian machines.
const NR: u32 = 0;
const ARCH: u32 = 4;
const ARGS: u32 = 16;
#[cfg(not(target_endian = "little"))]
compile_error!("argument checks read the low half of an argument at its own offset");

/// The most instructions a kernel accepts in one program.
const MAX_INSTRUCTIONS: usize = 4096;
/// Calls compared one by one at the end of a search.
const LEAF_CALLS: usize = 4;

/// One check of an argument: its low 32 bits, masked with `mask`, equal `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Check {
    pub argument: u8,
    pub mask: u32,
    pub value: u32,
}

/// What the filter answers for one system call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Verdict {
    Allow,
    /// It fails with this errno.
    Errno(u32),
    /// Allowed when every check of any one group holds; otherwise the default errno.
    AllowIf(Vec<Vec<Check>>),
}

/// A whole allowlist.
#[derive(Debug, Clone)]
pub(super) struct Policy {
    /// The `AUDIT_ARCH_*` value of the only ABI allowed.
    pub arch: u32,
    pub calls: BTreeMap<u32, Verdict>,
    /// What every other call fails with.
    pub default_errno: u32,
}

fn statement(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

fn errno(errno: u32) -> sock_filter {
    statement(
        RET_K,
        libc::SECCOMP_RET_ERRNO | (errno & libc::SECCOMP_RET_DATA),
    )
}

fn offset(length: usize) -> Result<u32, String> {
    u32::try_from(length).map_err(|_| "the seccomp program is too long".to_owned())
}

/// The program for `policy`.
pub(super) fn compile(policy: &Policy) -> Result<Vec<sock_filter>, String> {
    let mut program = vec![
        statement(LD_W_ABS, ARCH),
        jump(JMP_JEQ_K, policy.arch, 1, 0),
        statement(RET_K, libc::SECCOMP_RET_KILL_PROCESS),
        statement(LD_W_ABS, NR),
    ];
    let calls: Vec<(u32, &Verdict)> = policy.calls.iter().map(|(nr, v)| (*nr, v)).collect();
    program.extend(search(&calls, policy.default_errno)?);
    if program.len() > MAX_INSTRUCTIONS {
        return Err(format!(
            "the seccomp program has {} instructions, more than the kernel takes",
            program.len()
        ));
    }
    Ok(program)
}

/// Finds the call number (in the accumulator) among `calls`, sorted, and answers for it. Every
/// path ends in a return.
fn search(calls: &[(u32, &Verdict)], default_errno: u32) -> Result<Vec<sock_filter>, String> {
    if calls.len() <= LEAF_CALLS {
        let mut code = Vec::new();
        for (nr, verdict) in calls {
            let answer = answer(verdict, default_errno)?;
            match u8::try_from(answer.len()) {
                Ok(skip) => code.push(jump(JMP_JEQ_K, *nr, 0, skip)),
                Err(_) => {
                    code.push(jump(JMP_JEQ_K, *nr, 1, 0));
                    code.push(statement(JMP_JA, offset(answer.len())?));
                }
            }
            code.extend(answer);
        }
        code.push(errno(default_errno));
        return Ok(code);
    }
    let (low, high) = calls.split_at(calls.len() / 2);
    let below = search(low, default_errno)?;
    let above = search(high, default_errno)?;
    // At or above the upper half's first number: jump over the lower half's code.
    let mut code = vec![
        jump(JMP_JGE_K, high[0].0, 0, 1),
        statement(JMP_JA, offset(below.len())?),
    ];
    code.extend(below);
    code.extend(above);
    Ok(code)
}

/// The answer for one call found; ends in a return on every path.
fn answer(verdict: &Verdict, default_errno: u32) -> Result<Vec<sock_filter>, String> {
    Ok(match verdict {
        Verdict::Allow => vec![statement(RET_K, libc::SECCOMP_RET_ALLOW)],
        Verdict::Errno(value) => vec![errno(*value)],
        Verdict::AllowIf(groups) => {
            let mut code = Vec::new();
            for group in groups {
                let mut checks = Vec::new();
                let mut failures = Vec::new();
                for check in group {
                    if check.argument > 5 {
                        return Err(format!("no system call has argument {}", check.argument));
                    }
                    checks.push(statement(LD_W_ABS, ARGS + 8 * u32::from(check.argument)));
                    if check.mask != u32::MAX {
                        checks.push(statement(ALU_AND_K, check.mask));
                    }
                    failures.push(checks.len());
                    checks.push(jump(JMP_JEQ_K, check.value & check.mask, 0, 0));
                }
                checks.push(statement(RET_K, libc::SECCOMP_RET_ALLOW));
                // A check that fails goes on to the next group.
                for at in failures {
                    checks[at].jf = u8::try_from(checks.len() - at - 1)
                        .map_err(|_| "a group of argument checks is too long".to_owned())?;
                }
                code.extend(checks);
            }
            code.push(errno(default_errno));
            code
        }
    })
}

/// Installs `program` on the calling thread and the threads it starts afterwards, setting
/// no-new-privileges first, as the kernel requires.
#[allow(unsafe_code)]
pub(super) fn install(program: &[sock_filter]) -> Result<(), nix::errno::Errno> {
    let length = u16::try_from(program.len()).map_err(|_| nix::errno::Errno::E2BIG)?;
    // SAFETY: prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) reads no memory.
    let result = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    nix::errno::Errno::result(result)?;
    let filter = libc::sock_fprog {
        len: length,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: `filter` points at `length` instructions that outlive the call; the kernel copies
    // them and does not write through the pointer.
    let result = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &raw const filter,
        )
    };
    nix::errno::Errno::result(result).map(drop)
}

/// `BPF_JMP | BPF_JGT | BPF_K`: not in our programs, but in the reference the tests compare with.
#[cfg(test)]
const JMP_JGT_K: u16 = 0x05 | 0x20;

/// Runs a program on one system call, as the kernel would: what the tests compare.
#[cfg(test)]
pub(super) fn run(program: &[sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
    let mut data = [0u8; 64];
    data[0..4].copy_from_slice(&nr.to_le_bytes());
    data[4..8].copy_from_slice(&arch.to_le_bytes());
    for (index, argument) in args.iter().enumerate() {
        data[16 + 8 * index..24 + 8 * index].copy_from_slice(&argument.to_le_bytes());
    }
    let mut accumulator = 0u32;
    let mut at = 0usize;
    loop {
        let instruction = program[at];
        at += 1;
        match instruction.code {
            LD_W_ABS => {
                let k = instruction.k as usize;
                accumulator = u32::from_le_bytes(data[k..k + 4].try_into().unwrap());
            }
            ALU_AND_K => accumulator &= instruction.k,
            JMP_JA => at += instruction.k as usize,
            JMP_JEQ_K | JMP_JGE_K | JMP_JGT_K => {
                let taken = match instruction.code {
                    JMP_JEQ_K => accumulator == instruction.k,
                    JMP_JGE_K => accumulator >= instruction.k,
                    _ => accumulator > instruction.k,
                };
                at += usize::from(if taken {
                    instruction.jt
                } else {
                    instruction.jf
                });
            }
            RET_K => return instruction.k,
            code => panic!("an instruction the tests do not run: {code:#x}"),
        }
    }
}
