//! File helpers: crash-safe writes and content hashes.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::error::{Result, write_err};

/// Hex SHA-256 of file bytes; what the index compares to spot changed files.
pub(crate) fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        out.push(char::from_digit(u32::from(b & 0xf), 16).unwrap_or('0'));
    }
    out
}

/// Temp files start with a dot so scans (which skip hidden entries) never
/// see a half-written note, and live in the destination folder so the
/// final rename stays on one file system.
fn temp_path(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!(".{name}.{}.tmp", ulid::Ulid::new()))
}

/// A write's temp file lives for milliseconds; one this old was left by a
/// process killed mid-write.
const STALE_TEMP: Duration = Duration::from_secs(600);

/// Removes `path` if it is a temp file of [`write_atomic`] or [`write_new`]
/// left behind by a killed process (hidden, `.tmp`, older than ten
/// minutes). Returns whether it was removed.
pub(crate) fn remove_stale_temp(path: &Path) -> bool {
    // `.<name>.<ulid>.tmp`, as `temp_path` makes them.
    let is_temp = path.file_name().is_some_and(|n| {
        let n = n.to_string_lossy();
        n.strip_prefix('.')
            .and_then(|n| n.strip_suffix(".tmp"))
            .and_then(|n| n.rsplit_once('.'))
            .is_some_and(|(_, id)| id.parse::<ulid::Ulid>().is_ok())
    });
    let stale = || {
        fs::symlink_metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_TEMP)
    };
    if is_temp && stale() && fs::remove_file(path).is_ok() {
        tracing::debug!(path = %path.display(), "removed a temp file left by a killed write");
        return true;
    }
    false
}

fn write_temp(dest: &Path, contents: &[u8]) -> Result<PathBuf> {
    let dir = dest.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(write_err(dir))?;
    let tmp = temp_path(dest);
    let written = (|| {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(write_err(&tmp)(e));
    }
    Ok(tmp)
}

/// Makes the rename itself durable; best effort, as not every platform
/// can open a folder for syncing.
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Replaces `dest` with `contents` atomically: temp file in the same
/// folder, fsync, rename. Readers see the old or the new file, never a mix.
pub(crate) fn write_atomic(dest: &Path, contents: &[u8]) -> Result<()> {
    let tmp = write_temp(dest, contents)?;
    if let Err(e) = fs::rename(&tmp, dest) {
        let _ = fs::remove_file(&tmp);
        return Err(write_err(dest)(e));
    }
    if let Some(dir) = dest.parent() {
        sync_dir(dir);
    }
    Ok(())
}

/// Like [`write_atomic`] but never replaces an existing file: returns
/// `Ok(false)` when `dest` already exists, so two creators racing for one
/// slug both end up with their own file.
pub(crate) fn write_new(dest: &Path, contents: &[u8]) -> Result<bool> {
    if dest.exists() {
        return Ok(false);
    }
    let tmp = write_temp(dest, contents)?;
    let placed = match fs::hard_link(&tmp, dest) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        // File systems without hard links: fall back to a checked rename,
        // which only loses a race against another process.
        Err(_) if !dest.exists() => fs::rename(&tmp, dest).map(|()| true),
        Err(_) => Ok(false),
    };
    let _ = fs::remove_file(&tmp);
    let placed = placed.map_err(write_err(dest))?;
    if placed && let Some(dir) = dest.parent() {
        sync_dir(dir);
    }
    Ok(placed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_hex_sha256() {
        assert_eq!(
            content_hash(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn only_old_temp_files_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let id = ulid::Ulid::new();
        let old = dir.path().join(format!(".a.md.{id}.tmp"));
        let fresh = dir.path().join(format!(".b.md.{id}.tmp"));
        let note = dir.path().join("c.md");
        let other = dir.path().join(".notes.tmp");
        for p in [&old, &fresh, &note, &other] {
            fs::write(p, b"x").unwrap();
        }
        let long_ago = std::time::SystemTime::now() - Duration::from_secs(3600);
        for p in [&old, &note, &other] {
            File::options()
                .write(true)
                .open(p)
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        assert!(remove_stale_temp(&old));
        assert!(!remove_stale_temp(&fresh), "maybe a write in progress");
        assert!(!remove_stale_temp(&note), "not a temp file");
        assert!(!remove_stale_temp(&other), "not one of ours");
        assert!(!old.exists() && fresh.exists() && note.exists() && other.exists());
    }

    #[test]
    fn writes_leave_no_temp_files_and_new_does_not_clobber() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("a/b.md");
        write_atomic(&dest, b"one").unwrap();
        write_atomic(&dest, b"two").unwrap();
        assert!(!write_new(&dest, b"three").unwrap());
        assert_eq!(fs::read(&dest).unwrap(), b"two");
        assert!(write_new(&dest.with_file_name("c.md"), b"four").unwrap());
        let names: Vec<_> = fs::read_dir(dest.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }
}
