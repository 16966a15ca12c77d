//! Linux Landlock sandbox for the processes Quire starts (tests, commands):
//! writes only beneath the given folders (the session copy, temp), and no
//! TCP unless allowed. Reads and execution stay open, so toolchains work.
//!
//! Raw syscalls through `libc` (the `landlock` crate is not vendored here):
//! the ruleset is built in the parent, and the child only calls
//! `prctl(PR_SET_NO_NEW_PRIVS)` and `landlock_restrict_self` between fork and
//! exec, which are async-signal-safe. Where the kernel lacks Landlock the
//! command runs unsandboxed and [`status`] says why.

use std::path::{Path, PathBuf};

/// What to confine a process to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// Folders (and files) beneath which writes are allowed.
    pub writable: Vec<PathBuf>,
    /// Allow TCP connect and bind (Landlock ABI 4+; older kernels cannot
    /// block the network, and [`status`] says so).
    pub network: bool,
}

impl Sandbox {
    /// Writes confined to `root`, the temp folders and the harmless devices.
    pub fn confined_to(root: &Path, network: bool) -> Sandbox {
        let mut writable = vec![root.to_path_buf(), std::env::temp_dir()];
        for extra in [
            "/tmp",
            "/var/tmp",
            "/dev/shm",
            "/dev/null",
            "/dev/zero",
            "/dev/tty",
        ] {
            writable.push(PathBuf::from(extra));
        }
        Sandbox { writable, network }
    }
}

/// What the kernel offers, detected once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxStatus {
    /// Landlock with this ABI version; `network` false when the ABI is too
    /// old (< 4) to block TCP.
    Available { abi: i64, network: bool },
    /// No Landlock: the reason, to be said once.
    Unavailable(String),
}

const SYS_CREATE_RULESET: libc::c_long = 444;
const SYS_ADD_RULE: libc::c_long = 445;
const SYS_RESTRICT_SELF: libc::c_long = 446;
const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;

const FS_WRITE_FILE: u64 = 1 << 1;
const FS_REMOVE_DIR: u64 = 1 << 4;
const FS_REMOVE_FILE: u64 = 1 << 5;
const FS_MAKE_CHAR: u64 = 1 << 6;
const FS_MAKE_DIR: u64 = 1 << 7;
const FS_MAKE_REG: u64 = 1 << 8;
const FS_MAKE_SOCK: u64 = 1 << 9;
const FS_MAKE_FIFO: u64 = 1 << 10;
const FS_MAKE_BLOCK: u64 = 1 << 11;
const FS_MAKE_SYM: u64 = 1 << 12;
const FS_REFER: u64 = 1 << 13;
const FS_TRUNCATE: u64 = 1 << 14;
const NET_BIND_TCP: u64 = 1 << 0;
const NET_CONNECT_TCP: u64 = 1 << 1;

/// Rights that apply to a regular file (the rest need a directory).
const FILE_RIGHTS: u64 = FS_WRITE_FILE | FS_TRUNCATE;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Detects Landlock once.
pub fn status() -> &'static SandboxStatus {
    static STATUS: std::sync::OnceLock<SandboxStatus> = std::sync::OnceLock::new();
    STATUS.get_or_init(|| {
        if !cfg!(target_os = "linux") {
            return SandboxStatus::Unavailable("Landlock exists on Linux only".into());
        }
        // SAFETY: the version query takes no pointer (NULL, 0) and has no
        // side effects.
        let abi = unsafe {
            libc::syscall(
                SYS_CREATE_RULESET,
                std::ptr::null::<RulesetAttr>(),
                0usize,
                CREATE_RULESET_VERSION,
            )
        };
        if abi < 1 {
            let err = std::io::Error::last_os_error();
            return SandboxStatus::Unavailable(format!("Landlock is not available: {err}"));
        }
        SandboxStatus::Available {
            abi,
            network: abi >= 4,
        }
    })
}

/// Write rights this ABI knows.
fn fs_rights(abi: i64) -> u64 {
    let mut rights = FS_WRITE_FILE
        | FS_REMOVE_DIR
        | FS_REMOVE_FILE
        | FS_MAKE_CHAR
        | FS_MAKE_DIR
        | FS_MAKE_REG
        | FS_MAKE_SOCK
        | FS_MAKE_FIFO
        | FS_MAKE_BLOCK
        | FS_MAKE_SYM;
    if abi >= 2 {
        rights |= FS_REFER;
    }
    if abi >= 3 {
        rights |= FS_TRUNCATE;
    }
    rights
}

/// A built ruleset, ready to be applied in a child.
#[derive(Debug)]
pub struct Ruleset {
    fd: std::os::fd::OwnedFd,
}

impl Ruleset {
    /// Builds the ruleset for `sandbox`; `None` when Landlock is unavailable
    /// (the caller runs unsandboxed, [`status`] says why).
    pub fn build(sandbox: &Sandbox) -> std::io::Result<Option<Ruleset>> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        use std::os::unix::ffi::OsStrExt;

        let SandboxStatus::Available { abi, network } = status() else {
            return Ok(None);
        };
        let handled = fs_rights(*abi);
        let block_net = *network && !sandbox.network;
        let attr = RulesetAttr {
            handled_access_fs: handled,
            handled_access_net: if block_net {
                NET_BIND_TCP | NET_CONNECT_TCP
            } else {
                0
            },
        };
        // ABI < 4 does not know the net field: pass only the fs part.
        let size = if *abi >= 4 {
            std::mem::size_of::<RulesetAttr>()
        } else {
            std::mem::size_of::<u64>()
        };
        // SAFETY: `attr` is a live, properly laid-out struct of at least
        // `size` bytes; the kernel only reads it.
        let fd =
            unsafe { libc::syscall(SYS_CREATE_RULESET, &attr as *const RulesetAttr, size, 0u32) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let fd = i32::try_from(fd).map_err(|_| std::io::Error::other("bad ruleset fd"))?;
        // SAFETY: the kernel just returned this fd to us; we own it.
        let ruleset = Ruleset {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        };
        for path in &sandbox.writable {
            let Ok(c_path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
                continue;
            };
            // SAFETY: a valid NUL-terminated path; O_PATH opens no content.
            let raw = unsafe { libc::open(c_path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
            if raw < 0 {
                // A folder that does not exist needs no rule.
                continue;
            }
            // SAFETY: `open` just returned this fd; we own it.
            let parent = unsafe { OwnedFd::from_raw_fd(raw) };
            let rights = if path.is_dir() {
                handled
            } else {
                handled & FILE_RIGHTS
            };
            let rule = PathBeneathAttr {
                allowed_access: rights,
                parent_fd: parent.as_raw_fd(),
            };
            // SAFETY: `rule` is a live packed struct matching the kernel's
            // landlock_path_beneath_attr; both fds are open.
            let rc = unsafe {
                libc::syscall(
                    SYS_ADD_RULE,
                    ruleset.fd.as_raw_fd(),
                    RULE_PATH_BENEATH,
                    &rule as *const PathBeneathAttr,
                    0u32,
                )
            };
            if rc < 0 {
                let err = std::io::Error::last_os_error();
                tracing::warn!(path = %path.display(), %err, "sandbox rule not added");
            }
        }
        Ok(Some(ruleset))
    }

    /// The ruleset's fd, for [`restrict_self`] in a child.
    pub fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.fd.as_raw_fd()
    }
}

/// Restricts the calling process to the ruleset `fd`. Meant for the child
/// between fork and exec: only async-signal-safe syscalls, no allocation.
pub fn restrict_self(fd: i32) -> std::io::Result<()> {
    // SAFETY: plain syscalls on integers; no memory is shared.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(SYS_RESTRICT_SELF, fd, 0u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
