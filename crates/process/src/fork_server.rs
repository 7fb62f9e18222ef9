//! The fork server: one warmed process per worker kind that forks a worker for each request.
//!
//! Starting a worker as a new program costs a core one to two milliseconds: executing and
//! relocating the binary, faulting in the engine's code and data, warming the engine up. A fork
//! server pays that once. It is the `toolweave` binary started as `__toolweave-worker fork-server
//! <spec>`; it runs a small program in its engine, then waits for requests, and each worker it
//! forks starts from that warm state. A forked worker confines itself at once, exactly as a
//! worker started on its own does ([`crate::worker`]), before it reads anything.
//!
//! The fork server runs no guest code and reads nothing but requests from its gateway. It is
//! single-threaded, so forking it is sound, and it holds nothing a worker could not have: the
//! gateway starts it with the empty environment and working directory a worker gets.
//!
//! Wire: the fork server's stdin is a `SOCK_SEQPACKET` socket to the gateway. A request is one
//! byte (`W`: warm up before reading the job; `N`: the job is waiting) carrying three
//! descriptors, the new worker's stdin, stdout and stderr. A manifest (`M`) carries one
//! descriptor, a file holding the [`Manifest`] as JSON: the fork server keeps it, and every worker
//! it forks from then on starts with it, as if told to expect it, so the names of a catalog of
//! thousands of tools cross to the worker side and are parsed once per catalog, not once per
//! execution. It is not answered. The fork server answers requests in order, and reports each
//! worker's end when it happens (it is the workers' parent, and reaps them):
//! - `F` pid, with a pidfd of the worker attached: forked;
//! - `E` errno: could not fork;
//! - `X` pid, wait status: the worker ended.
//!
//! A pidfd names one process for good: the gateway kills a worker through it without any risk of
//! hitting a process that reused the pid.

#![allow(unsafe_code)]

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitCode, ExitStatus};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg,
    sendmsg, socketpair,
};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid};

use toolweave_sandbox::Manifest;

use crate::worker::{MAX_SETUP_LINE_BYTES, WarmUp, WorkerSpec, run_worker, warm_up};

/// The byte of a request for a worker that warms up before it reads its job.
const REQUEST_WARM: u8 = b'W';
/// The byte of a request for a worker whose job is waiting for it.
const REQUEST_NOW: u8 = b'N';
/// The byte of a manifest that the workers forked from now on start with.
const MANIFEST: u8 = b'M';
const FORKED: u8 = b'F';
const FAILED: u8 = b'E';
const EXITED: u8 = b'X';
/// An event on the wire: its tag and two numbers.
const EVENT_BYTES: usize = 9;

/// What the fork server tells the gateway.
#[derive(Debug)]
pub enum ForkEvent {
    /// A worker was forked for the oldest request not yet answered.
    Forked {
        /// Its process id.
        pid: u32,
        /// A pidfd naming it.
        pidfd: OwnedFd,
    },
    /// The oldest request not yet answered could not be served.
    Failed(io::Error),
    /// A worker ended.
    Exited {
        /// Its process id.
        pid: u32,
        /// How it ended.
        status: ExitStatus,
    },
}

/// A connected pair of sockets for a fork server: the gateway's end (non-blocking), and the
/// end that becomes the fork server's stdin. Both close on exec (a process spawner duplicates
/// the second onto the child's stdin, which clears the flag there).
pub fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let (gateway, server) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    let flags = OFlag::from_bits_truncate(fcntl(&gateway, FcntlArg::F_GETFL)?);
    fcntl(&gateway, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok((gateway, server))
}

/// Asks the fork server behind `socket` for a worker on these stdin, stdout and stderr, which
/// warms up before it reads its job if `warm_up` (a job sent at once would wait for that).
/// Fails with `WouldBlock` on a non-blocking socket that is full.
pub fn request_worker(
    socket: BorrowedFd<'_>,
    stdio: [BorrowedFd<'_>; 3],
    warm_up: bool,
) -> io::Result<()> {
    let descriptors = stdio.map(|fd| fd.as_raw_fd());
    let rights = [ControlMessage::ScmRights(&descriptors)];
    sendmsg::<()>(
        socket.as_raw_fd(),
        &[IoSlice::new(&[if warm_up {
            REQUEST_WARM
        } else {
            REQUEST_NOW
        }])],
        &rights,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )?;
    Ok(())
}

/// A file holding `manifest` as JSON, to be sent with [`send_manifest`]: an anonymous file in
/// memory, read from its start.
pub fn manifest_file(manifest: &Manifest) -> io::Result<OwnedFd> {
    use std::io::{Seek, Write};
    let text = serde_json::to_vec(manifest).map_err(io::Error::other)?;
    let file = nix::sys::memfd::memfd_create(
        c"toolweave-manifest",
        nix::sys::memfd::MFdFlags::MFD_CLOEXEC,
    )?;
    let mut file = std::fs::File::from(file);
    file.write_all(&text)?;
    file.rewind()?;
    Ok(OwnedFd::from(file))
}

/// Gives the fork server behind `socket` the manifest in `file` (made by [`manifest_file`]):
/// every worker it forks after this starts with it. Fails with `WouldBlock` on a non-blocking
/// socket that is full.
pub fn send_manifest(socket: BorrowedFd<'_>, file: BorrowedFd<'_>) -> io::Result<()> {
    let descriptors = [file.as_raw_fd()];
    let rights = [ControlMessage::ScmRights(&descriptors)];
    sendmsg::<()>(
        socket.as_raw_fd(),
        &[IoSlice::new(&[MANIFEST])],
        &rights,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )?;
    Ok(())
}

/// The manifest a gateway sent in `file`, read from where it stands.
fn read_manifest(file: OwnedFd) -> io::Result<Manifest> {
    use std::io::Read;
    let mut text = Vec::new();
    let limit = u64::try_from(MAX_SETUP_LINE_BYTES).unwrap_or(u64::MAX);
    std::fs::File::from(file)
        .take(limit + 1)
        .read_to_end(&mut text)?;
    if text.len() > MAX_SETUP_LINE_BYTES {
        return Err(from_gateway("a manifest longer than a worker reads"));
    }
    serde_json::from_slice(&text)
        .map_err(|error| from_gateway(&format!("a manifest that is not one: {error}")))
}

/// What the gateway sent that the fork server cannot take.
fn from_gateway(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the gateway sent {what}"),
    )
}

/// The fork server's next event; `None` once it is gone. Fails with `WouldBlock` on a
/// non-blocking socket with nothing to read.
pub fn read_event(socket: BorrowedFd<'_>) -> io::Result<Option<ForkEvent>> {
    let mut bytes = [0u8; EVENT_BYTES];
    let (length, descriptors) = receive(socket, &mut bytes)?;
    let mut descriptors = descriptors.into_iter();
    if length == 0 {
        return Ok(None);
    }
    let number = |at: usize| {
        let mut four = [0u8; 4];
        four.copy_from_slice(&bytes[at..at + 4]);
        i32::from_le_bytes(four)
    };
    let (first, second) = (number(1), number(5));
    let pid = || u32::try_from(first).map_err(|_| malformed("a negative process id"));
    match bytes[0] {
        _ if length != EVENT_BYTES => Err(malformed("an event of the wrong length")),
        FORKED => {
            let pidfd = descriptors
                .next()
                .ok_or_else(|| malformed("a forked worker without its pidfd"))?;
            Ok(Some(ForkEvent::Forked { pid: pid()?, pidfd }))
        }
        FAILED => Ok(Some(ForkEvent::Failed(io::Error::from_raw_os_error(first)))),
        EXITED => Ok(Some(ForkEvent::Exited {
            pid: pid()?,
            status: ExitStatus::from_raw(second),
        })),
        _ => Err(malformed("an unknown event")),
    }
}

/// Kills (SIGKILL) the process `pidfd` names; a process that has already ended is no error.
pub fn kill(pidfd: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: pidfd_send_signal with a live descriptor, a signal number, no siginfo and no flags
    // reads no memory of this process.
    let result = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0u32,
        )
    };
    match Errno::result(result) {
        Ok(_) | Err(Errno::ESRCH) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

fn malformed(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the worker fork server sent {what}"),
    )
}

/// One message and the descriptors that came with it (closed on exec in this process).
fn receive(socket: BorrowedFd<'_>, bytes: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut space = nix::cmsg_space!([RawFd; 3]);
    let mut buffers = [IoSliceMut::new(bytes)];
    let message = recvmsg::<()>(
        socket.as_raw_fd(),
        &mut buffers,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )?;
    let mut descriptors = Vec::new();
    for control in message.cmsgs()? {
        if let ControlMessageOwned::ScmRights(received) = control {
            for fd in received {
                // SAFETY: the kernel just installed `fd` in this process for this message; nothing
                // else owns it.
                descriptors.push(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
    }
    let truncated = message.flags.contains(MsgFlags::MSG_CTRUNC);
    let length = message.bytes;
    if truncated {
        // Read by both sides: the error names no sender.
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a message came with more descriptors than it may carry",
        ));
    }
    Ok((length, descriptors))
}

fn send_event(socket: BorrowedFd<'_>, tag: u8, first: i32, second: i32, pidfd: Option<&OwnedFd>) {
    let mut bytes = [0u8; EVENT_BYTES];
    bytes[0] = tag;
    bytes[1..5].copy_from_slice(&first.to_le_bytes());
    bytes[5..9].copy_from_slice(&second.to_le_bytes());
    let descriptor = pidfd.map(AsRawFd::as_raw_fd);
    let descriptors: Vec<RawFd> = descriptor.into_iter().collect();
    let rights = [ControlMessage::ScmRights(&descriptors)];
    let controls: &[ControlMessage<'_>] = if descriptors.is_empty() { &[] } else { &rights };
    // A gateway that stopped listening ends the fork server at its next read.
    let _ = sendmsg::<()>(
        socket.as_raw_fd(),
        &[IoSlice::new(&bytes)],
        controls,
        MsgFlags::MSG_NOSIGNAL,
        None,
    );
}

/// A worker this fork server forked and has not reaped yet.
struct Forked {
    pid: Pid,
    pidfd: OwnedFd,
}

/// The fork server's side: warm up, then fork a worker per request until the gateway is gone.
pub fn fork_server_main(spec: WorkerSpec) -> ExitCode {
    let stdin = io::stdin();
    let socket = stdin.as_fd();
    let server = nix::unistd::getpid();
    let mut workers: Vec<Forked> = Vec::new();
    let mut warmed = false;
    // What the workers forked from now on start with.
    let mut manifest: Option<std::sync::Arc<Manifest>> = None;
    loop {
        // Warmed up once nothing has happened for a moment: the workers a gateway asks for
        // as it starts are forked at once (they warm up themselves), and its first execution
        // does not share the machine with this.
        let wait = if warmed {
            PollTimeout::NONE
        } else {
            PollTimeout::from(WARM_UP_WHEN_IDLE_MS)
        };
        let (request, ended) = match wait_for_work(socket, &workers, wait) {
            Ok(None) => {
                warm_up(spec.kind, WarmUp::ForkServer);
                warmed = true;
                continue;
            }
            Ok(Some(ready)) => ready,
            Err(error) => {
                eprintln!("toolweave fork server: cannot wait for requests: {error}");
                return ExitCode::FAILURE;
            }
        };
        // Reaped before new requests: a pid is reported ended before it can be reused.
        for index in ended.into_iter().rev() {
            let worker = workers.swap_remove(index);
            reap(socket, &worker);
        }
        if !request {
            continue;
        }
        let mut tag = [0u8; 1];
        let stdio = match receive(socket, &mut tag) {
            // The gateway is gone; its workers die with this process (their death signal).
            Ok((0, _)) => return ExitCode::SUCCESS,
            Ok((_, descriptors)) if matches!(tag[0], REQUEST_WARM | REQUEST_NOW) => descriptors,
            Ok((_, descriptors)) if tag[0] == MANIFEST => {
                // A manifest the gateway counts on and this process does not have would have its
                // workers run jobs without their tools: the fork server ends instead, and the
                // gateway starts workers itself.
                match descriptors.into_iter().next().map(read_manifest) {
                    Some(Ok(read)) => manifest = Some(std::sync::Arc::new(read)),
                    Some(Err(error)) => return refuse_manifest(&error),
                    None => return refuse_manifest(&from_gateway("a manifest without its file")),
                }
                continue;
            }
            Ok(_) => {
                eprintln!("toolweave fork server: a request was not one");
                return ExitCode::FAILURE;
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                eprintln!("toolweave fork server: cannot read a request: {error}");
                return ExitCode::FAILURE;
            }
        };
        let Ok(stdio) = <[OwnedFd; 3]>::try_from(stdio) else {
            send_event(socket, FAILED, libc::EINVAL, 0, None);
            continue;
        };
        // SAFETY: this process has one thread (the fork server starts none, and its warm-up
        // runs the engine on this thread), so the child starts with every lock free and every
        // data structure consistent.
        match unsafe { nix::unistd::fork() } {
            Ok(ForkResult::Child) => {
                let code = become_worker(spec, server, stdio, tag[0] == REQUEST_WARM, manifest);
                // Exits without unwinding into the fork server's loop (its descriptors are
                // already closed: the worker closes all but 0, 1 and 2), and without the C
                // library's exit handlers and destructors, which only fault in and copy pages
                // a worker never needed. The worker has flushed what it wrote to stdout; stderr
                // is unbuffered.
                // SAFETY: _exit ends the process at once; nothing after it runs.
                unsafe { libc::_exit(i32::from(code)) }
            }
            Ok(ForkResult::Parent { child }) => {
                drop(stdio);
                match pidfd_open(child) {
                    Ok(pidfd) => {
                        send_event(socket, FORKED, child.as_raw(), 0, Some(&pidfd));
                        workers.push(Forked { pid: child, pidfd });
                    }
                    Err(error) => {
                        // Without a pidfd the gateway could not stop it: stop it here.
                        let _ = nix::sys::signal::kill(child, nix::sys::signal::Signal::SIGKILL);
                        let _ = waitpid(child, None);
                        send_event(socket, FAILED, error as i32, 0, None);
                    }
                }
            }
            Err(error) => send_event(socket, FAILED, error as i32, 0, None),
        }
    }
}

/// Ends the fork server over a manifest it could not take.
fn refuse_manifest(error: &io::Error) -> ExitCode {
    eprintln!("toolweave fork server: cannot take a manifest: {error}");
    ExitCode::FAILURE
}

/// How long a fork server waits without a request before it warms up.
const WARM_UP_WHEN_IDLE_MS: u16 = 20;

/// Waits until a request arrives or workers end: whether a request is ready, and which workers
/// (by index) have ended; `None` if `wait` passed without either.
fn wait_for_work(
    socket: BorrowedFd<'_>,
    workers: &[Forked],
    wait: PollTimeout,
) -> io::Result<Option<(bool, Vec<usize>)>> {
    let mut watched = Vec::with_capacity(workers.len() + 1);
    watched.push(PollFd::new(socket, PollFlags::POLLIN));
    for worker in workers {
        watched.push(PollFd::new(worker.pidfd.as_fd(), PollFlags::POLLIN));
    }
    match poll(&mut watched, wait) {
        Ok(0) => return Ok(None),
        Ok(_) => {}
        Err(Errno::EINTR) => return Ok(Some((false, Vec::new()))),
        Err(error) => return Err(error.into()),
    }
    let ready = |fd: &PollFd<'_>| fd.revents().is_some_and(|events| !events.is_empty());
    let request = ready(&watched[0]);
    let ended = watched[1..]
        .iter()
        .enumerate()
        .filter(|(_, fd)| ready(fd))
        .map(|(index, _)| index)
        .collect();
    Ok(Some((request, ended)))
}

/// Collects an ended worker's status and reports it.
fn reap(socket: BorrowedFd<'_>, worker: &Forked) {
    let raw = match waitpid(worker.pid, Some(WaitPidFlag::WNOHANG)) {
        Ok(WaitStatus::Exited(_, code)) => (code & 0xff) << 8,
        Ok(WaitStatus::Signaled(_, signal, _)) => signal as i32,
        // A readable pidfd means the process ended, so this does not happen; should it anyway,
        // the worker is ended here rather than watched again (its pidfd would stay readable).
        Ok(_) | Err(_) => {
            let _ = nix::sys::signal::kill(worker.pid, nix::sys::signal::Signal::SIGKILL);
            let _ = waitpid(worker.pid, None);
            libc::SIGKILL
        }
    };
    send_event(socket, EXITED, worker.pid.as_raw(), raw, None);
}

/// The child's side of a fork: the request's pipes become stdin, stdout and stderr; it dies with
/// the fork server; then it is a worker like any other.
fn become_worker(
    spec: WorkerSpec,
    server: Pid,
    stdio: [OwnedFd; 3],
    warm: bool,
    manifest: Option<std::sync::Arc<Manifest>>,
) -> u8 {
    let [stdin, stdout, stderr] = stdio;
    let moved = nix::unistd::dup2_stdin(&stdin)
        .and_then(|()| nix::unistd::dup2_stdout(&stdout))
        .and_then(|()| nix::unistd::dup2_stderr(&stderr));
    drop((stdin, stdout, stderr));
    if moved.is_err() {
        return 1;
    }
    // A worker outlives no fork server: the gateway would have no way to reap or report it.
    if nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).is_err()
        || nix::unistd::getppid() != server
    {
        return 1;
    }
    // Warmed again while it waits: the fork server's pages are shared until written, and the
    // first write to each costs a copy; better now than during the job (a trivial Python
    // execution answers faster with this). Not when its job is already waiting.
    run_worker(
        spec,
        if warm { WarmUp::Worker } else { WarmUp::None },
        manifest,
    )
}

fn pidfd_open(pid: Pid) -> Result<OwnedFd, Errno> {
    // SAFETY: pidfd_open takes a pid and flags and reads no memory; it returns a new descriptor
    // this process owns, or fails.
    let fd = Errno::result(unsafe { libc::syscall(libc::SYS_pidfd_open, pid.as_raw(), 0u32) })?;
    let fd = RawFd::try_from(fd).map_err(|_| Errno::EBADF)?;
    // SAFETY: `fd` was just returned by the kernel and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolweave_sandbox::Namespace;

    #[test]
    fn a_manifest_crosses_in_its_file_whole_and_anything_else_is_refused() {
        let manifest = Manifest {
            namespaces: vec![
                Namespace {
                    name: "catalog".to_owned(),
                    tools: Some((0..10_000).map(|n| format!("tool_{n}")).collect()),
                },
                Namespace {
                    name: "starting".to_owned(),
                    tools: None,
                },
            ],
        };
        let file = manifest_file(&manifest).unwrap();
        assert_eq!(read_manifest(file).unwrap(), manifest);

        let mut garbage = std::fs::File::from(
            nix::sys::memfd::memfd_create(c"test", nix::sys::memfd::MFdFlags::MFD_CLOEXEC).unwrap(),
        );
        std::io::Write::write_all(&mut garbage, b"{not a manifest").unwrap();
        std::io::Seek::rewind(&mut garbage).unwrap();
        let error = read_manifest(OwnedFd::from(garbage))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("the gateway sent a manifest that is not one"),
            "{error}"
        );
    }
}
