//! Linux Landlock sandbox for the processes Quire starts (tests, commands):
//! writes only beneath the given folders (the session copy, temp), and no
//! TCP unless allowed. Reads and execution stay open, so toolchains work.
//!
//! Built on the `landlock` crate with best-effort compatibility: a kernel
//! that lacks some rights gets the rest, and [`status`] says what the
//! kernel actually enforced. Where it enforces nothing, commands run
//! unsandboxed and [`status`] says why.
//!
//! The work is split around `fork`: the ruleset (its fd and the path fds of
//! its rules) is built in the parent, where allocating and opening files is
//! fine; the child only calls `restrict_self`, whose `prctl` and
//! `landlock_restrict_self` syscalls are async-signal-safe. Between fork and
//! exec of a multi-threaded parent, allocating or taking locks can deadlock.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use landlock::{
    ABI, AccessFs, AccessNet, CompatLevel, Compatible, LandlockStatus, RestrictSelfError,
    RestrictionStatus, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetError,
    RulesetStatus, path_beneath_rules,
};

/// The newest Landlock ABI this policy was written and tested against.
/// Rights of later ABIs are never requested by surprise (the crate's
/// advice); older kernels get what they support, best effort.
const TARGET_ABI: ABI = ABI::V7;

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

/// How much of the sandbox the kernel enforced when probed, mirroring the
/// crate's `RulesetStatus`: a kernel older than [`TARGET_ABI`] enforces
/// part of it (e.g. writes but not the network).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxEnforcement {
    /// Every requested restriction.
    Full,
    /// Some of them, best effort.
    Partial,
    /// None: processes run unconfined ([`SandboxStatus::Unavailable`]).
    None,
}

/// Why a sandbox could not be built or probed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SandboxError {
    #[error("Landlock ruleset: {0}")]
    Ruleset(#[from] RulesetError),
    #[error("Landlock probe thread: {0}")]
    Probe(std::io::Error),
    #[error("Landlock probe thread panicked")]
    ProbePanicked,
}

/// The probe's findings, kept for the life of the process.
struct Probe {
    status: SandboxStatus,
    enforcement: SandboxEnforcement,
}

fn probe() -> &'static Probe {
    static PROBE: OnceLock<Probe> = OnceLock::new();
    PROBE.get_or_init(|| {
        let probe = interpret(run_probe());
        tracing::debug!(status = ?probe.status, enforcement = ?probe.enforcement, "Landlock probed");
        probe
    })
}

/// What the kernel offers for the sandbox, detected once per process.
pub fn status() -> &'static SandboxStatus {
    &probe().status
}

/// How much of the sandbox the kernel enforced when probed (once per
/// process), for saying so next to [`status`].
pub fn enforcement() -> SandboxEnforcement {
    probe().enforcement
}

/// Applies the strictest sandbox (writes to temp only, no TCP) to a
/// short-lived thread of our own: Landlock and `no_new_privs` bind the
/// calling thread only, so Quire itself stays unconfined, and the kernel's
/// answer is what it really enforces rather than a guess from the ABI.
fn run_probe() -> Result<RestrictionStatus, SandboxError> {
    let thread = std::thread::Builder::new()
        .name("quire-landlock-probe".into())
        .spawn(|| -> Result<RestrictionStatus, SandboxError> {
            let sandbox = Sandbox {
                writable: vec![std::env::temp_dir()],
                network: false,
            };
            Ok(ruleset(&sandbox)?.restrict_self()?)
        })
        .map_err(SandboxError::Probe)?;
    thread.join().map_err(|_| SandboxError::ProbePanicked)?
}

fn interpret(outcome: Result<RestrictionStatus, SandboxError>) -> Probe {
    let unavailable = |why: String| Probe {
        status: SandboxStatus::Unavailable(why),
        enforcement: SandboxEnforcement::None,
    };
    let restriction = match outcome {
        Ok(restriction) => restriction,
        Err(err) => return unavailable(format!("Landlock could not be applied: {err}")),
    };
    let enforcement = match restriction.ruleset {
        RulesetStatus::FullyEnforced => SandboxEnforcement::Full,
        RulesetStatus::PartiallyEnforced => SandboxEnforcement::Partial,
        RulesetStatus::NotEnforced => SandboxEnforcement::None,
    };
    match (enforcement, restriction.landlock) {
        (SandboxEnforcement::None, LandlockStatus::NotEnabled) => unavailable(
            "Landlock is built into this kernel but not enabled (see the lsm= boot option)".into(),
        ),
        (SandboxEnforcement::None, LandlockStatus::NotImplemented) => unavailable(
            "this kernel has no Landlock (Linux 5.13+ with CONFIG_SECURITY_LANDLOCK)".into(),
        ),
        (SandboxEnforcement::None, LandlockStatus::Available { .. }) => {
            unavailable("Landlock is present but enforced nothing".into())
        }
        (
            _,
            LandlockStatus::Available {
                effective_abi,
                kernel_abi,
            },
        ) => Probe {
            status: SandboxStatus::Available {
                // The kernel's own version when it is newer than the crate.
                abi: kernel_abi.map_or(effective_abi as i64, i64::from),
                network: effective_abi >= ABI::V4,
            },
            enforcement,
        },
        // Enforced something without Landlock: cannot happen, but saying
        // "unavailable" is the safe reading.
        (_, status) => unavailable(format!("Landlock status unclear: {status:?}")),
    }
}

/// Builds the ruleset for `sandbox`: every write right of [`TARGET_ABI`] is
/// handled and granted beneath the writable paths only (paths that do not
/// exist are skipped); TCP bind/connect are handled with no rule, which
/// blocks them, unless the network is allowed.
fn ruleset(sandbox: &Sandbox) -> Result<RulesetCreated, RulesetError> {
    let write = AccessFs::from_write(TARGET_ABI);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(write)?;
    if !sandbox.network {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    ruleset
        .create()?
        .add_rules(path_beneath_rules(&sandbox.writable, write))
}

/// Makes `command` start confined to `sandbox`. Where Landlock is
/// unavailable, or the ruleset cannot be built, the command runs unconfined
/// ([`status`] says why, once; a build failure is logged).
pub(crate) fn confine(command: &mut tokio::process::Command, sandbox: &Sandbox) {
    if !matches!(status(), SandboxStatus::Available { .. }) {
        return;
    }
    let created = match ruleset(sandbox) {
        Ok(created) => created,
        Err(err) => {
            let err = SandboxError::from(err);
            tracing::warn!(%err, "sandbox could not be built; running unconfined");
            return;
        }
    };
    // Moved into the hook and taken there: the child owns the ruleset and
    // only applies it. The parent's copy (and its fd) goes with `command`.
    let mut prepared = Some(created);
    // SAFETY: the hook runs in the forked child before exec. It only moves
    // a value out of an `Option` and calls `restrict_self`, which makes the
    // `prctl` and `landlock_restrict_self` syscalls and closes the ruleset
    // fd; it allocates nothing, and `child_error` builds its error from an
    // errno without allocating either.
    unsafe {
        command.pre_exec(move || match prepared.take() {
            Some(created) => created.restrict_self().map(drop).map_err(child_error),
            // A second spawn of the same command would run unconfined:
            // refuse it instead.
            None => Err(std::io::ErrorKind::PermissionDenied.into()),
        });
    }
}

/// An `io::Error` for a failed `restrict_self` in the child, without
/// allocating (the errno is copied, never boxed).
fn child_error(err: RulesetError) -> std::io::Error {
    let errno = match &err {
        RulesetError::RestrictSelf(
            RestrictSelfError::SetNoNewPrivsCall { source, .. }
            | RestrictSelfError::RestrictSelfCall { source, .. },
        ) => source.raw_os_error(),
        _ => None,
    };
    match errno {
        Some(errno) => std::io::Error::from_raw_os_error(errno),
        None => std::io::ErrorKind::PermissionDenied.into(),
    }
}
