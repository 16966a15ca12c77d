//! A pid file that claims a folder for one live process: a session being
//! driven, an eval run. A lock left by a dead process is taken over.

use std::path::{Path, PathBuf};

/// Why a folder could not be claimed.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("process {pid} holds {}", path.display())]
    Held { pid: u32, path: PathBuf },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Held while alive; the pid file is removed on drop.
#[derive(Debug)]
pub struct PidLock {
    path: PathBuf,
}

impl PidLock {
    /// Claims `dir/lock` for this process unless another live process
    /// holds it (checked through `/proc/<pid>`).
    pub fn acquire(dir: &Path) -> Result<PidLock, LockError> {
        let path = dir.join("lock");
        let holder = std::fs::read_to_string(&path)
            .ok()
            .and_then(|text| text.trim().parse::<u32>().ok())
            .filter(|pid| {
                *pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists()
            });
        if let Some(pid) = holder {
            return Err(LockError::Held { pid, path });
        }
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let tmp = dir.join("lock.tmp");
        std::fs::write(&tmp, std::process::id().to_string()).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)?;
        Ok(PidLock { path })
    }
}

impl Drop for PidLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_holder_blocks_and_a_dead_one_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        // pid 1 is always alive.
        std::fs::write(dir.path().join("lock"), "1").unwrap();
        assert!(matches!(
            PidLock::acquire(dir.path()),
            Err(LockError::Held { pid: 1, .. })
        ));
        // A pid far above pid_max is never alive.
        std::fs::write(dir.path().join("lock"), "4294967290").unwrap();
        let lock = PidLock::acquire(dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("lock")).unwrap(),
            std::process::id().to_string()
        );
        drop(lock);
        assert!(!dir.path().join("lock").exists());
    }
}
