//! File helpers: crash-safe writes and content hashes.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

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
