//! The one way tbb reads a file a user gave it (a manifest, a configuration catalogue,
//! a family file, a system prompt, a trace): [`read_text`], bounded in size.
//!
//! Owns: the size limits ([`MAX_SOURCE_BYTES`] for the files people write,
//! [`MAX_DATA_BYTES`] for the ones tbb or a model wrote) and refusing what is not a
//! regular file. A file over its limit is refused before it is read, with its size and
//! the limit in the message: a 10 MB family file would otherwise be parsed, copied into
//! every diagnostic and held many times over. A named pipe or a device is refused
//! before it is opened (opening a pipe for reading waits for a writer, forever).
//!
//! Never: decides what a file means; the errors are `std::io::Error`s so that every
//! loader's existing "cannot read FILE" error carries them, with the kind
//! [`std::io::ErrorKind::FileTooLarge`] or [`std::io::ErrorKind::InvalidInput`].

use std::io::{self, Read as _};
use std::path::Path;

/// Bytes of a file a person writes (manifest, catalogue, family file, prompt): fifty
/// times the largest the repository holds (the families' catalogue, ~20 KB).
pub const MAX_SOURCE_BYTES: u64 = 1 << 20;

/// Bytes of a file tbb or a model wrote and a user hands back (a trace to grade, a
/// saved plan).
pub const MAX_DATA_BYTES: u64 = 64 << 20;

/// The text of the file at `path`, refused when it is not a regular file, is larger
/// than `limit` bytes, or is not UTF-8. A missing file is `ErrorKind::NotFound`, as
/// from `std::fs`.
pub fn read_text(path: &Path, limit: u64) -> io::Result<String> {
    let bytes = read_bytes(path, limit)?;
    String::from_utf8(bytes).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is not UTF-8 text (invalid byte at offset {})",
                path.display(),
                e.utf8_error().valid_up_to()
            ),
        )
    })
}

/// The bytes of the file at `path`, refused as [`read_text`] refuses them.
pub fn read_bytes(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (file, meta) = open_with_metadata(path)?;
    let too_large = |size: u64| {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "{} is {size} bytes, over the limit of {limit} bytes for this file",
                path.display()
            ),
        )
    };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // The file may grow between the look and the read: never take more than the limit.
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Opens the file at `path` for reading, refused (with `ErrorKind::InvalidInput`)
/// before it is opened when it is not a regular file: a named pipe would block the
/// open, and the read, until something writes to it.
pub fn open_regular(path: &Path) -> io::Result<std::fs::File> {
    open_with_metadata(path).map(|(file, _)| file)
}

fn open_with_metadata(path: &Path) -> io::Result<(std::fs::File, std::fs::Metadata)> {
    // `metadata` follows links, so a link to a regular file is one.
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a regular file (a {}); tbb reads only regular files",
                path.display(),
                kind(&meta.file_type())
            ),
        ));
    }
    Ok((std::fs::File::open(path)?, meta))
}

/// What a file that is not a regular file is, for the message.
pub fn kind(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return "named pipe";
        }
        if file_type.is_socket() {
            return "socket";
        }
        if file_type.is_block_device() || file_type.is_char_device() {
            return "device";
        }
    }
    if file_type.is_dir() {
        "directory"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_its_limit_is_refused_with_its_size_and_the_limit() {
        let dir = std::env::temp_dir().join(format!("tbb-diag-input-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("big.toml");
        let written = std::fs::write(&path, "x".repeat(2048));
        assert!(written.is_ok());
        let e = read_text(&path, 1024).err();
        assert_eq!(
            e.as_ref().map(io::Error::kind),
            Some(io::ErrorKind::FileTooLarge)
        );
        let message = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(
            message.contains("2048 bytes") && message.contains("1024"),
            "{message}"
        );
        assert_eq!(read_text(&path, 2048).map(|t| t.len()).ok(), Some(2048));
        let e = read_text(&dir, 1024).err();
        assert_eq!(e.map(|e| e.kind()), Some(io::ErrorKind::InvalidInput));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
