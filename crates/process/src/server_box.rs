//! The box a stdio upstream server runs in: Landlock over the paths it is granted, a network
//! namespace of its own, and rlimits, entered by the child between `fork` and `exec`.
//!
//! Everything that allocates or opens a path happens in [`Prepared::new`], in toolweave's
//! process: the Landlock ruleset (a file descriptor holding every rule), the strings the user
//! namespace's maps need, a socket pair for handing a listener back. The child runs
//! [`Prepared::enter`], which makes system calls only (it is async-signal-safe, as code between
//! `fork` and `exec` in a threaded process must be):
//!
//! 1. a network namespace of its own (with a user namespace first when toolweave is not root):
//!    no interface but a loopback that stays down (`none`), or is brought up (`loopback`); for a
//!    list of hosts, a listener on its loopback is handed back to toolweave, which answers on it
//!    as an HTTP proxy (`toolweave-upstream`'s `proxy`) and connects only to the hosts listed;
//! 2. rlimits: no core files, files no larger than [`MAX_FILE_BYTES`];
//! 3. no-new-privileges and the Landlock domain: files beneath the granted paths only, no
//!    signals to processes outside the box, no abstract Unix sockets outside it.
//!
//! The environment is the caller's to clear (`Command::env_clear`). `docs/security.md` says what
//! the box stops and what it does not.

use std::path::PathBuf;

/// The largest file a boxed server may write (`RLIMIT_FSIZE`).
pub const MAX_FILE_BYTES: u64 = 4 << 30;

/// The port of the proxy on a boxed server's own loopback, when it may reach a list of hosts.
pub const PROXY_PORT: u16 = 3128;

/// What a box lets a server reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Paths it may read and execute beneath.
    pub read: Vec<PathBuf>,
    /// Paths it may read, write, create and remove beneath.
    pub write: Vec<PathBuf>,
    /// Its network.
    pub network: Network,
}

/// A box's network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Network {
    /// A network namespace with its loopback down.
    #[default]
    None,
    /// A network namespace with its loopback up.
    Loopback,
    /// [`Network::Loopback`], with a listener on [`PROXY_PORT`] handed back to toolweave.
    Proxy,
}

/// A box that could not be prepared or entered.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {detail}")]
pub struct BoxError {
    /// What was being done.
    pub step: String,
    /// Why it failed.
    pub detail: String,
}

pub use imp::{Prepared, receive_descriptor};

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::{BoxError, Plan};

    /// Nothing can be prepared here: boxes need Linux.
    #[derive(Debug)]
    pub struct Prepared;

    impl Prepared {
        /// Boxes need Linux's Landlock and namespaces.
        pub fn new(_plan: &Plan) -> Result<Self, BoxError> {
            Err(BoxError {
                step: "boxing a server".to_owned(),
                detail: "boxes need Linux (Landlock and network namespaces); remove \"sandbox\" \
                         from the entry to run the server unboxed on this system"
                    .to_owned(),
            })
        }

        /// Never reached: [`Prepared::new`] fails here.
        pub fn confines_files(&self) -> bool {
            false
        }

        /// Never reached: [`Prepared::new`] fails here.
        pub fn take_handback(&mut self) -> Option<std::os::fd::OwnedFd> {
            None
        }

        /// Never reached: [`Prepared::new`] fails here.
        ///
        /// # Safety
        ///
        /// None needed: it does nothing.
        #[allow(unsafe_code)]
        pub unsafe fn enter(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Never reached: [`Prepared::new`] fails here.
    pub fn receive_descriptor(
        _channel: &std::os::fd::OwnedFd,
    ) -> std::io::Result<std::os::fd::OwnedFd> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
    use std::path::Path;

    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, Scope,
    };

    use nix::sys::resource::{Resource, getrlimit, setrlimit};

    use super::{BoxError, MAX_FILE_BYTES, Network, PROXY_PORT, Plan};

    /// The newest Landlock ABI asked for; older kernels enforce what they have.
    const LANDLOCK_ABI: ABI = ABI::V6;

    /// A box ready to be entered by a child.
    #[derive(Debug)]
    pub struct Prepared {
        /// The Landlock ruleset, `None` where the kernel has no Landlock.
        ruleset: Option<OwnedFd>,
        network: Network,
        /// The user namespace's maps, when toolweave is not root: `(uid_map, gid_map)`.
        user_maps: Option<(CString, CString)>,
        /// The child's end of the socket pair a proxy listener is handed back over.
        handback_child: Option<OwnedFd>,
        /// Toolweave's end of it.
        handback_parent: Option<OwnedFd>,
    }

    fn failed(step: &str, detail: impl std::fmt::Display) -> BoxError {
        BoxError {
            step: step.to_owned(),
            detail: detail.to_string(),
        }
    }

    impl Prepared {
        /// Builds the ruleset and whatever else the child will need. A granted path that does
        /// not exist is an error naming it.
        pub fn new(plan: &Plan) -> Result<Self, BoxError> {
            let ruleset = ruleset(plan)?;
            // SAFETY: getuid and getgid read the caller's ids and cannot fail.
            #[allow(unsafe_code)]
            let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
            let user_maps = if uid == 0 {
                None
            } else {
                let map = |id: u32| CString::new(format!("{id} {id} 1")).ok();
                map(uid).zip(map(gid))
            };
            let (handback_parent, handback_child) = if plan.network == Network::Proxy {
                let (parent, child) = socket_pair()?;
                (Some(parent), Some(child))
            } else {
                (None, None)
            };
            Ok(Self {
                ruleset,
                network: plan.network,
                user_maps,
                handback_child,
                handback_parent,
            })
        }

        /// Whether Landlock confines files in this box (`false` where the kernel has none).
        pub fn confines_files(&self) -> bool {
            self.ruleset.is_some()
        }

        /// Toolweave's end of the socket pair the proxy listener comes back over.
        pub fn take_handback(&mut self) -> Option<OwnedFd> {
            self.handback_parent.take()
        }

        /// Enters the box, in the child between `fork` and `exec`.
        ///
        /// # Safety
        ///
        /// Call it only in a child process between `fork` and `exec`: it changes the calling
        /// process's namespaces, limits and Landlock domain for good. It makes system calls only
        /// (no allocation, no lock), so it is async-signal-safe.
        #[allow(unsafe_code)]
        pub unsafe fn enter(&self) -> std::io::Result<()> {
            // SAFETY: each call below passes pointers to memory this struct owns (prepared
            // before the fork) or to locals, and changes only the calling process.
            unsafe {
                self.enter_network()?;
                limit(Resource::RLIMIT_CORE, 0)?;
                limit(Resource::RLIMIT_FSIZE, MAX_FILE_BYTES)?;
                let (on, unused): (libc::c_ulong, libc::c_ulong) = (1, 0);
                check(libc::prctl(
                    libc::PR_SET_NO_NEW_PRIVS,
                    on,
                    unused,
                    unused,
                    unused,
                ))?;
                if let Some(ruleset) = &self.ruleset {
                    let restricted =
                        libc::syscall(libc::SYS_landlock_restrict_self, ruleset.as_raw_fd(), 0u32);
                    if restricted != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
            }
            Ok(())
        }

        #[allow(unsafe_code)]
        unsafe fn enter_network(&self) -> std::io::Result<()> {
            // SAFETY: as in `enter`.
            unsafe {
                match &self.user_maps {
                    None => check(libc::unshare(libc::CLONE_NEWNET))?,
                    Some((uid_map, gid_map)) => {
                        check(libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET))?;
                        write_file(c"/proc/self/setgroups", c"deny")?;
                        write_file(c"/proc/self/uid_map", uid_map)?;
                        write_file(c"/proc/self/gid_map", gid_map)?;
                    }
                }
                if self.network == Network::None {
                    return Ok(());
                }
                loopback_up()?;
                if let Some(handback) = &self.handback_child {
                    let listener = listen_on_loopback(PROXY_PORT)?;
                    let sent = send_descriptor(handback.as_raw_fd(), listener);
                    libc::close(listener);
                    sent?;
                }
            }
            Ok(())
        }
    }

    fn check(result: libc::c_int) -> std::io::Result<()> {
        if result < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// The ruleset: read and execute beneath `plan.read`, everything beneath `plan.write`,
    /// nothing elsewhere; no signals or abstract sockets outside the box.
    fn ruleset(plan: &Plan) -> Result<Option<OwnedFd>, BoxError> {
        let landlock = |error: landlock::RulesetError| failed("preparing Landlock", error);
        let mut created = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(LANDLOCK_ABI))
            .and_then(|ruleset| ruleset.scope(Scope::from_all(LANDLOCK_ABI)))
            .and_then(|ruleset| ruleset.create())
            .map_err(landlock)?;
        let grants = [
            (&plan.read, AccessFs::from_read(LANDLOCK_ABI)),
            (&plan.write, AccessFs::from_all(LANDLOCK_ABI)),
        ];
        for (paths, access) in grants {
            for path in paths {
                let fd = open_path(path)?;
                created = created
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(landlock)?;
            }
        }
        // `/dev/null` is written to by most programs; nothing else in `/dev` is.
        if let Ok(fd) = PathFd::new("/dev/null") {
            created = created
                .add_rule(PathBeneath::new(fd, AccessFs::from_all(LANDLOCK_ABI)))
                .map_err(landlock)?;
        }
        Ok(created.into())
    }

    fn open_path(path: &Path) -> Result<PathFd, BoxError> {
        PathFd::new(path).map_err(|error| {
            failed(
                &format!("granting {}", path.display()),
                error
                    .to_string()
                    .split(": ")
                    .last()
                    .unwrap_or("it cannot be opened"),
            )
        })
    }

    fn socket_pair() -> Result<(OwnedFd, OwnedFd), BoxError> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: socketpair writes two descriptors into the local array, which then each have
        // one owner.
        #[allow(unsafe_code)]
        let result = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if result != 0 {
            return Err(failed(
                "creating a socket pair for the proxy",
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: both descriptors were just created and are owned by nothing else.
        #[allow(unsafe_code)]
        Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
    }

    /// Lowers `resource` to `ceiling` (a stricter limit already set stays). getrlimit and
    /// setrlimit are system calls on locals: nothing allocates.
    fn limit(resource: Resource, ceiling: u64) -> std::io::Result<()> {
        let (soft, hard) = getrlimit(resource)?;
        let hard = hard.min(ceiling);
        setrlimit(resource, soft.min(hard), hard)?;
        Ok(())
    }

    #[allow(unsafe_code)]
    unsafe fn write_file(path: &std::ffi::CStr, text: &std::ffi::CStr) -> std::io::Result<()> {
        // SAFETY: both strings are NUL-terminated and outlive the calls; the descriptor is
        // closed on every path.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            check(fd)?;
            let bytes = text.to_bytes();
            let written = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
            libc::close(fd);
            if written < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Brings the namespace's loopback interface up.
    #[allow(unsafe_code)]
    unsafe fn loopback_up() -> std::io::Result<()> {
        // SAFETY: the request struct is a local, zeroed then filled; the socket is closed on
        // every path.
        unsafe {
            let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
            check(socket)?;
            let mut request: libc::ifreq = std::mem::zeroed();
            for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
                *slot = *byte as libc::c_char;
            }
            let mut result = libc::ioctl(socket, libc::SIOCGIFFLAGS as _, &raw mut request);
            if result == 0 {
                request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
                result = libc::ioctl(socket, libc::SIOCSIFFLAGS as _, &raw const request);
            }
            let error = std::io::Error::last_os_error();
            libc::close(socket);
            if result != 0 {
                return Err(error);
            }
        }
        Ok(())
    }

    /// Room for one descriptor's control message, aligned as `cmsghdr` needs.
    #[repr(C, align(8))]
    struct Control([u8; 64]);

    /// A TCP listener on 127.0.0.1:`port` of the calling process's network namespace.
    #[allow(unsafe_code)]
    unsafe fn listen_on_loopback(port: u16) -> std::io::Result<RawFd> {
        // SAFETY: the address is a local; the socket is closed on every failure.
        unsafe {
            let socket = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            check(socket)?;
            let mut address: libc::sockaddr_in = std::mem::zeroed();
            address.sin_family = libc::AF_INET as libc::sa_family_t;
            address.sin_port = port.to_be();
            address.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
            let length = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            let bound = libc::bind(socket, (&raw const address).cast(), length);
            if bound != 0 || libc::listen(socket, 128) != 0 {
                let error = std::io::Error::last_os_error();
                libc::close(socket);
                return Err(error);
            }
            Ok(socket)
        }
    }

    /// Sends `descriptor` over the Unix socket `channel` (`SCM_RIGHTS`).
    #[allow(unsafe_code)]
    unsafe fn send_descriptor(channel: RawFd, descriptor: RawFd) -> std::io::Result<()> {
        // SAFETY: every pointer is to a local that outlives the sendmsg call; the control
        // buffer is larger than CMSG_SPACE of one int.
        unsafe {
            let mut byte = [0u8; 1];
            let mut part = libc::iovec {
                iov_base: byte.as_mut_ptr().cast(),
                iov_len: 1,
            };
            let mut control = Control([0; 64]);
            let mut message: libc::msghdr = std::mem::zeroed();
            message.msg_iov = &raw mut part;
            message.msg_iovlen = 1;
            message.msg_control = (&raw mut control).cast();
            message.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
            let header = libc::CMSG_FIRSTHDR(&message);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
            libc::CMSG_DATA(header)
                .cast::<RawFd>()
                .write_unaligned(descriptor);
            if libc::sendmsg(channel, &message, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Receives one descriptor sent with `SCM_RIGHTS` over `channel` (blocking).
    #[allow(unsafe_code)]
    pub fn receive_descriptor(channel: &OwnedFd) -> std::io::Result<OwnedFd> {
        // SAFETY: every pointer is to a local that outlives the recvmsg call; a descriptor
        // received is owned by nothing else, and is taken only from a SCM_RIGHTS message.
        unsafe {
            let mut byte = [0u8; 1];
            let mut part = libc::iovec {
                iov_base: byte.as_mut_ptr().cast(),
                iov_len: 1,
            };
            let mut control = Control([0; 64]);
            let mut message: libc::msghdr = std::mem::zeroed();
            message.msg_iov = &raw mut part;
            message.msg_iovlen = 1;
            message.msg_control = (&raw mut control).cast();
            message.msg_controllen = std::mem::size_of::<Control>() as _;
            let received = libc::recvmsg(channel.as_raw_fd(), &mut message, libc::MSG_CMSG_CLOEXEC);
            if received < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let header = libc::CMSG_FIRSTHDR(&message);
            if received == 0
                || header.is_null()
                || (*header).cmsg_level != libc::SOL_SOCKET
                || (*header).cmsg_type != libc::SCM_RIGHTS
            {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the boxed process sent no listener",
                ));
            }
            let descriptor = libc::CMSG_DATA(header).cast::<RawFd>().read_unaligned();
            Ok(OwnedFd::from_raw_fd(descriptor))
        }
    }
}
