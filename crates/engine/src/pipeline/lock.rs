//! The outputs lock: one `tbb apply` at a time per outputs directory.
//!
//! An advisory lock (`flock` on Unix, via `std::fs::File::try_lock`) on
//! `outputs/<study>/.lock`. The holder writes its pid and command line into the file so
//! a waiting process can say who holds it. The operating system releases the lock when
//! its holder exits, however it exits (SIGKILL included), so a dead holder never blocks
//! anyone and no stale-lock cleaning is needed.
//!
//! The shards of a study (`tbb apply --shard`) take it shared: they only add cache files
//! under names of their own, so any number run at once, while an apply that publishes
//! (or compacts the cache) waits for them and they for it.
//!
//! Never: deletes the lock file (deleting it while held would let a second process lock
//! a different inode).

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use thiserror::Error;

/// The lock could not be taken.
#[derive(Debug, Error, miette::Diagnostic)]
pub enum LockError {
    /// Another process holds it.
    #[error("outputs {} are locked by {holder}", dir.display())]
    #[diagnostic(
        code(tbb::lock::busy),
        help("wait for it to finish, or pass --lock-timeout SECONDS to wait up to that long")
    )]
    Busy {
        /// The outputs directory.
        dir: PathBuf,
        /// Who holds it (`pid 4242, tbb apply manifests/capacity.toml`).
        holder: String,
    },
    /// The lock file cannot be used.
    #[error("cannot lock {}: {source}", path.display())]
    #[diagnostic(code(tbb::lock::io))]
    Io {
        /// The lock file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

/// A held lock; released when dropped (or when the process dies).
#[derive(Debug)]
pub struct OutputsLock {
    _file: File,
}

impl OutputsLock {
    /// Takes the lock on `dir`, recording `command` as the holder. When another process
    /// holds it, calls `on_wait` once with who, then waits up to `timeout` (`None`:
    /// forever; zero: fail at once).
    pub fn acquire(
        dir: &Path,
        command: &str,
        timeout: Option<Duration>,
        on_wait: &mut dyn FnMut(&str),
    ) -> Result<OutputsLock, LockError> {
        OutputsLock::take(dir, command, timeout, on_wait, false)
    }

    /// Takes the lock on `dir` shared with other shards, as [`OutputsLock::acquire`]
    /// does otherwise: it waits only for an exclusive holder.
    pub fn acquire_shared(
        dir: &Path,
        command: &str,
        timeout: Option<Duration>,
        on_wait: &mut dyn FnMut(&str),
    ) -> Result<OutputsLock, LockError> {
        OutputsLock::take(dir, command, timeout, on_wait, true)
    }

    fn take(
        dir: &Path,
        command: &str,
        timeout: Option<Duration>,
        on_wait: &mut dyn FnMut(&str),
        shared: bool,
    ) -> Result<OutputsLock, LockError> {
        let path = dir.join(".lock");
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        let started = Instant::now();
        let mut told = false;
        loop {
            let tried = if shared {
                file.try_lock_shared()
            } else {
                file.try_lock()
            };
            match tried {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    let holder = holder(&mut file);
                    let expired = timeout.is_some_and(|t| started.elapsed() >= t);
                    if expired {
                        return Err(LockError::Busy {
                            dir: dir.to_path_buf(),
                            holder,
                        });
                    }
                    if !told {
                        on_wait(&holder);
                        told = true;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
            }
        }
        // Shared holders each write their record: a waiter names the last of them.
        let record = format!("pid {}, {command}\n", std::process::id());
        file.set_len(0).map_err(io)?;
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        file.write_all(record.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        Ok(OutputsLock { _file: file })
    }
}

fn holder(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.seek(SeekFrom::Start(0));
    let _ = file.read_to_string(&mut text);
    match text.trim() {
        "" => "another process".to_string(),
        t => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_with_the_holder_and_granted_after_release() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let first = OutputsLock::acquire(dir.path(), "tbb apply a.toml", None, &mut |_| {})
            .unwrap_or_else(|e| panic!("{e}"));
        let mut waited = Vec::new();
        let second = OutputsLock::acquire(
            dir.path(),
            "tbb apply b.toml",
            Some(Duration::ZERO),
            &mut |h| waited.push(h.to_string()),
        );
        match second {
            Err(LockError::Busy { holder, .. }) => {
                assert!(holder.contains("tbb apply a.toml"), "{holder}");
                assert!(holder.contains(&format!("pid {}", std::process::id())));
            }
            other => panic!("expected busy, got {other:?}"),
        }
        drop(first);
        assert!(OutputsLock::acquire(dir.path(), "c", Some(Duration::ZERO), &mut |_| {}).is_ok());
    }

    #[test]
    fn shards_share_the_lock_and_exclude_an_exclusive_holder_both_ways() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let now = Some(Duration::ZERO);
        let shared =
            |command: &str| OutputsLock::acquire_shared(dir.path(), command, now, &mut |_| {});
        let first = shared("tbb apply --shard 0/2").unwrap_or_else(|e| panic!("{e}"));
        let second = shared("tbb apply --shard 1/2").unwrap_or_else(|e| panic!("{e}"));
        match OutputsLock::acquire(dir.path(), "tbb apply merge", now, &mut |_| {}) {
            Err(LockError::Busy { holder, .. }) => assert!(holder.contains("--shard"), "{holder}"),
            other => panic!("expected busy, got {other:?}"),
        }
        drop((first, second));
        let merge = OutputsLock::acquire(dir.path(), "tbb apply merge", now, &mut |_| {})
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            shared("tbb apply --shard 0/2"),
            Err(LockError::Busy { .. })
        ));
        drop(merge);
    }
}
