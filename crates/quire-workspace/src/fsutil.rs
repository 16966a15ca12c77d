//! Small filesystem helpers: hashing, atomic writes, modes.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

/// Hex SHA-256 of some bytes.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Hex SHA-256 and size of a file, streamed.
pub(crate) fn hash_file(path: &Path) -> io::Result<(String, u64)> {
    let mut f = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((hex(&hasher.finalize()), size))
}

/// Lower-case hex of bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Permission bits (`0o7777`) of a metadata.
pub(crate) fn mode_of(meta: &fs::Metadata) -> u32 {
    meta.permissions().mode() & 0o7777
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh temporary name next to `path`, so a rename stays on one
/// filesystem and is atomic. Short, so long file names still fit.
fn temp_sibling(path: &Path) -> io::Result<PathBuf> {
    let parent = path.parent().ok_or_else(|| {
        io::Error::new(io::ErrorKind::InvalidInput, "path has no parent directory")
    })?;
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    Ok(parent.join(format!(".quire-tmp-{}-{n}", std::process::id())))
}

/// Write `bytes` to `path` atomically: temp file in the same directory,
/// fsync, set `mode`, rename over, fsync the directory.
pub(crate) fn atomic_write(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let tmp = temp_sibling(path)?;
    let result = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.set_permissions(fs::Permissions::from_mode(mode & 0o7777))?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result?;
    sync_parent(path);
    Ok(())
}

/// Replace whatever is at `path` with a symlink to `target`, atomically.
pub(crate) fn atomic_symlink(path: &Path, target: &str) -> io::Result<()> {
    let tmp = temp_sibling(path)?;
    std::os::unix::fs::symlink(target, &tmp)?;
    if let Err(e) = fs::rename(&tmp, path) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    sync_parent(path);
    Ok(())
}

/// Best-effort fsync of a path's directory so a rename is durable.
pub(crate) fn sync_parent(path: &Path) {
    if let Some(dir) = path.parent().and_then(|p| File::open(p).ok()) {
        let _ = dir.sync_all();
    }
}

/// Best-effort fsync of a directory.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// True when bytes should not be shown as a text diff: a NUL in the first
/// 8 KiB (git's rule) or not UTF-8.
pub(crate) fn is_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|&b| b == 0) || std::str::from_utf8(bytes).is_err()
}

/// Read a symlink's target as a string (lossy for non-UTF-8 targets).
pub(crate) fn read_link_string(path: &Path) -> io::Result<String> {
    Ok(fs::read_link(path)?.to_string_lossy().into_owned())
}
