//! A study's cache shared through object storage (`--cache s3://bucket/prefix`, `gs://`,
//! `az://`, `file:///dir`; `TBB_CACHE`): the files of `outputs/<study>/cache/` kept
//! under `<prefix>/<study>/` in a store of immutable files.
//!
//! Design: the local cache directory stays the working copy, and this module keeps it
//! in step with the store. Opening a cache pulls every file of the store that is not
//! here ([`Remote::pull`]); an apply then pushes every file here that the store lacks
//! ([`Remote::push_missing`]: a shard killed before its push, a cache made before the
//! store) and, as it commits, each file it writes ([`Remote::push`]), in the commit
//! protocol's order (tables, blobs, objects, requests, then nodes). Every write is
//! create-only (`PutMode::Create`: `If-None-Match: *` on S3): a file once in the store
//! never changes. Reading through the store directly instead would put a network round
//! trip under every lazily read column (key inputs, payloads, tables) and a second
//! reading path beside the local one; syncing keeps one reading path, lets a shard
//! keep working from what it has, and costs each file one download per machine.
//!
//! Names are unique per writer without coordination: the cache names its files
//! `<table>-<seq>-<digest>.parquet` ([`super::cache`]), the digest of their rows, so
//! two writers' files differ in name whenever they differ in content, and a file that
//! is already in the store under its name holds those rows (a create-only write that
//! finds it is done, not failed). The order the cache reads files in, and so which of
//! two entries wins, is a function of the names alone: never of the order a store
//! lists them in.
//!
//! Credentials come only from the standard environment (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_ENDPOINT_URL`, `AWS_REGION`,
//! `AWS_ALLOW_HTTP`, and the `GOOGLE_*`/`AZURE_*` variables of the other stores), never
//! from the URL; every message that leaves this module has the values of those
//! variables and the URL's user, password and query taken out. Connecting lists the
//! study's prefix once, so that an unreachable store, a missing bucket or refused
//! credentials stop a command before it pays for anything.
//!
//! Never: interprets a file (the cache does), deletes or overwrites a file in the store
//! (compaction is a local directory's business: [`super::cache::Cache::compact`] leaves
//! a shared cache alone), or reads a credential from anywhere but the environment.

use std::collections::BTreeSet;
use std::path::{Path as LocalPath, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::TryStreamExt as _;
use object_store::path::Path;
use object_store::{
    ClientConfigKey, ObjectStore, ObjectStoreExt as _, ObjectStoreScheme, PutMode, PutOptions,
    PutPayload, RetryConfig,
};
use thiserror::Error;

/// The shared store cannot be used.
#[derive(Debug, Error, miette::Diagnostic)]
pub enum RemoteError {
    /// The URL names no store tbb can use.
    #[error("cache URL `{url}` is not one tbb can use: {detail}")]
    #[diagnostic(
        code(tbb::remote::url),
        help(
            "give `--cache` (or TBB_CACHE) as s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, \
             az://CONTAINER/PREFIX or file:///ABSOLUTE/DIR; credentials come from the \
             environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL, \
             AWS_REGION), never from the URL"
        )
    )]
    Url {
        /// The URL, without user, password or query.
        url: String,
        /// What is wrong.
        detail: String,
    },
    /// Listing the store at startup failed: nothing was sent to a provider.
    #[error("cannot reach the shared cache {url}: {detail}")]
    #[diagnostic(code(tbb::remote::unreachable), help("{help}"))]
    Unreachable {
        /// The URL, without user, password or query.
        url: String,
        /// The store's answer, without credentials.
        detail: String,
        /// What to check, by the kind of failure.
        help: String,
    },
    /// Copying one file to or from the store failed.
    #[error("shared cache {url}: cannot {action} {name}: {detail}")]
    #[diagnostic(
        code(tbb::remote::transfer),
        help(
            "committed nodes are kept in the local cache; run the command again to \
             finish the copy (files already copied are skipped)"
        )
    )]
    Transfer {
        /// The URL, without user, password or query.
        url: String,
        /// `push` or `pull`.
        action: &'static str,
        /// The file, relative to the study's prefix.
        name: String,
        /// The store's answer, without credentials.
        detail: String,
    },
}

/// One study's files in a shared store.
pub struct Remote {
    store: Arc<dyn ObjectStore>,
    /// `<prefix of the URL>/<study>`.
    prefix: Path,
    /// The URL as shown to people (no user, password or query), with the study.
    shown: String,
    /// Names (relative to `prefix`) known to be in the store: listed at connect time
    /// or pushed since.
    known: Mutex<BTreeSet<String>>,
    /// Drives the store's futures; `None` only while dropping.
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote").field("url", &self.shown).finish()
    }
}

impl Drop for Remote {
    /// Shuts the runtime down without blocking: a cache may be dropped inside the
    /// apply's own runtime, where a blocking shutdown panics.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Retries of a request to the store: few and short, so that an unreachable store is
/// reported in seconds rather than after minutes of backoff.
fn retry() -> RetryConfig {
    RetryConfig {
        max_retries: 3,
        retry_timeout: Duration::from_secs(30),
        ..RetryConfig::default()
    }
}

/// Timeouts of the store's client, set key by key: replacing its `ClientOptions`
/// whole would drop what the environment set (`AWS_ALLOW_HTTP`, proxies).
const TIMEOUTS: [(ClientConfigKey, &str); 2] = [
    (ClientConfigKey::ConnectTimeout, "5s"),
    (ClientConfigKey::Timeout, "120s"),
];

impl Remote {
    /// Connects to the store at `url` for study `study`, and lists what it holds there
    /// (the startup check: an error here is reported before any provider request).
    pub fn connect(url: &str, study: &str) -> Result<Remote, RemoteError> {
        let shown = shown_url(url);
        let bad = |detail: String| RemoteError::Url {
            url: shown.clone(),
            detail: redact(&detail),
        };
        let parsed = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
        if !parsed.username().is_empty() || parsed.password().is_some() {
            return Err(bad(
                "it carries credentials; put them in the environment instead".into(),
            ));
        }
        let (scheme, path) = ObjectStoreScheme::parse(&parsed).map_err(|e| bad(e.to_string()))?;
        let prefix = Path::from_url_path(path).map_err(|e| bad(e.to_string()))?;
        tbb_provider::install_crypto();
        let store: Arc<dyn ObjectStore> = match scheme {
            ObjectStoreScheme::Local => {
                let dir = PathBuf::from(format!("/{prefix}"));
                if !dir.is_dir() {
                    return Err(RemoteError::Unreachable {
                        url: shown,
                        detail: format!("directory {} does not exist", dir.display()),
                        help: "create the directory (it stands for the bucket), or fix the URL"
                            .into(),
                    });
                }
                Arc::new(object_store::local::LocalFileSystem::new())
            }
            ObjectStoreScheme::AmazonS3 => Arc::new(
                TIMEOUTS
                    .iter()
                    .fold(
                        object_store::aws::AmazonS3Builder::from_env(),
                        |builder, (key, value)| {
                            builder.with_config(
                                object_store::aws::AmazonS3ConfigKey::Client(*key),
                                *value,
                            )
                        },
                    )
                    .with_url(url)
                    .with_retry(retry())
                    .build()
                    .map_err(|e| bad(e.to_string()))?,
            ),
            ObjectStoreScheme::GoogleCloudStorage => Arc::new(
                TIMEOUTS
                    .iter()
                    .fold(
                        object_store::gcp::GoogleCloudStorageBuilder::from_env(),
                        |builder, (key, value)| {
                            builder.with_config(
                                object_store::gcp::GoogleConfigKey::Client(*key),
                                *value,
                            )
                        },
                    )
                    .with_url(url)
                    .with_retry(retry())
                    .build()
                    .map_err(|e| bad(e.to_string()))?,
            ),
            ObjectStoreScheme::MicrosoftAzure => Arc::new(
                TIMEOUTS
                    .iter()
                    .fold(
                        object_store::azure::MicrosoftAzureBuilder::from_env(),
                        |builder, (key, value)| {
                            builder.with_config(
                                object_store::azure::AzureConfigKey::Client(*key),
                                *value,
                            )
                        },
                    )
                    .with_url(url)
                    .with_retry(retry())
                    .build()
                    .map_err(|e| bad(e.to_string()))?,
            ),
            other => return Err(bad(format!("the {other:?} scheme is not supported"))),
        };
        let remote = Remote::with_store(store, &prefix, study, &shown)?;
        remote.check()?;
        Ok(remote)
    }

    /// A remote over a given store (the in-memory store of the unit tests; `connect`
    /// for the rest), not yet listed.
    pub fn with_store(
        store: Arc<dyn ObjectStore>,
        prefix: &Path,
        study: &str,
        shown: &str,
    ) -> Result<Remote, RemoteError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| RemoteError::Unreachable {
                url: shown.to_string(),
                detail: e.to_string(),
                help: "the process could not start the I/O runtime the store needs".into(),
            })?;
        Ok(Remote {
            store,
            prefix: prefix.clone().join(study),
            shown: format!("{}/{study}", shown.trim_end_matches('/')),
            known: Mutex::new(BTreeSet::new()),
            runtime: Some(runtime),
        })
    }

    /// The URL of the study's files, as shown to people.
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// Lists the study's files, remembering them; an error says what to check.
    pub fn check(&self) -> Result<(), RemoteError> {
        let names = self.list().map_err(|e| {
            let detail = redact(&chain(&e));
            RemoteError::Unreachable {
                url: self.shown.clone(),
                help: help_for(&e, &detail).into(),
                detail,
            }
        })?;
        *self.known_names() = names;
        Ok(())
    }

    /// Every file name under the study's prefix (relative to it).
    fn list(&self) -> Result<BTreeSet<String>, object_store::Error> {
        let store = self.store.clone();
        let prefix = self.prefix.clone();
        let metas: Vec<object_store::ObjectMeta> =
            self.block(async move { store.list(Some(&prefix)).try_collect().await })?;
        Ok(metas
            .iter()
            .filter_map(|m| relative(&self.prefix, &m.location))
            .collect())
    }

    fn known_names(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        // A poisoned set is still a set of names: at worst a push is tried again.
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The names in the store (as listed at connect time, plus those pushed since).
    pub fn names(&self) -> BTreeSet<String> {
        self.known_names().clone()
    }

    /// Copies into `dir` every file among `names` that `dir` lacks, in the order given
    /// (the cache passes them in its commit order); returns the names copied.
    pub fn pull(&self, dir: &LocalPath, names: &[String]) -> Result<Vec<String>, RemoteError> {
        let mut pulled = Vec::new();
        for name in names {
            let target = dir.join(name);
            if target.exists() {
                continue;
            }
            let location = self.location(name);
            let store = self.store.clone();
            let bytes = self
                .block(async move { store.get(&location).await?.bytes().await })
                .map_err(|e| self.transfer("pull", name, &e))?;
            write_whole(&target, &bytes).map_err(|e| RemoteError::Transfer {
                url: self.shown.clone(),
                action: "pull",
                name: name.clone(),
                detail: format!("writing {}: {e}", target.display()),
            })?;
            pulled.push(name.clone());
        }
        Ok(pulled)
    }

    /// Writes the local file `path` into the store as `name`, create-only; a file
    /// already there under that name holds the same rows (names are digests of them)
    /// and is left as it is.
    pub fn push(&self, name: &str, path: &LocalPath) -> Result<(), RemoteError> {
        if self.known_names().contains(name) {
            return Ok(());
        }
        let bytes = std::fs::read(path).map_err(|e| RemoteError::Transfer {
            url: self.shown.clone(),
            action: "push",
            name: name.to_string(),
            detail: format!("reading {}: {e}", path.display()),
        })?;
        let location = self.location(name);
        let store = self.store.clone();
        let put = self.block(async move {
            store
                .put_opts(
                    &location,
                    PutPayload::from(bytes),
                    PutOptions::from(PutMode::Create),
                )
                .await
        });
        match put {
            Ok(_) | Err(object_store::Error::AlreadyExists { .. }) => {}
            Err(e) => return Err(self.transfer("push", name, &e)),
        }
        self.known_names().insert(name.to_string());
        Ok(())
    }

    /// The store (for [`super::claims`]).
    pub(super) fn store(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    /// Where file `name` (relative to the study's prefix) is in the store.
    pub(super) fn location(&self, name: &str) -> Path {
        name.split('/')
            .fold(self.prefix.clone(), |path, part| path.join(part))
    }

    pub(super) fn transfer(
        &self,
        action: &'static str,
        name: &str,
        e: &object_store::Error,
    ) -> RemoteError {
        RemoteError::Transfer {
            url: self.shown.clone(),
            action,
            name: name.to_string(),
            detail: redact(&chain(e)),
        }
    }

    /// Runs a future of the store to completion on this remote's runtime, from a
    /// thread of its own: the caller may itself be inside a runtime (apply commits from
    /// one), where blocking on another runtime panics.
    pub(super) fn block<T: Send, F: std::future::Future<Output = T> + Send>(&self, future: F) -> T {
        std::thread::scope(|scope| {
            let runtime = self.runtime.as_ref();
            let handle = scope.spawn(move || match runtime {
                Some(runtime) => runtime.block_on(future),
                None => unreachable!("the runtime is taken only by drop"),
            });
            match handle.join() {
                Ok(value) => value,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }
}

/// `location` relative to `prefix`, as a `/`-separated name.
fn relative(prefix: &Path, location: &Path) -> Option<String> {
    let parts: Vec<String> = location
        .prefix_match(prefix)?
        .map(|p| p.as_ref().to_string())
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Writes `bytes` at `path` whole or not at all (temporary file beside it, fsync,
/// rename): a pull cut short leaves an ignorable `*.tmp` file.
fn write_whole(path: &LocalPath, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Unique per writer: two processes sharing this directory may pull one file at once.
    let tmp = tbb_tables::temporary_beside(path);
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)
}

/// An error with its causes, `: `-separated (the store's own message often ends at
/// "HTTP error" and keeps the cause beneath).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// What to check, by the store's answer: its error kind where the store maps the
/// status to one, else the S3 error codes and statuses in its text (a listing's 404 or
/// 403 comes back as a generic error).
fn help_for(e: &object_store::Error, text: &str) -> &'static str {
    let says = |words: &[&str]| words.iter().any(|w| text.contains(w));
    match e {
        object_store::Error::NotFound { .. } => MISSING_BUCKET,
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => REFUSED,
        _ if says(&["NoSuchBucket", "ContainerNotFound", "404 Not Found"]) => MISSING_BUCKET,
        _ if says(&[
            "403 Forbidden",
            "401 Unauthorized",
            "AccessDenied",
            "InvalidAccessKeyId",
            "SignatureDoesNotMatch",
        ]) =>
        {
            REFUSED
        }
        _ => {
            "check that the store is up and reachable (AWS_ENDPOINT_URL for an \
             S3-compatible server, AWS_ALLOW_HTTP=true for plain http), that the bucket \
             exists and that the credentials in the environment are valid"
        }
    }
}

const MISSING_BUCKET: &str = "the bucket (or container) does not exist: create it, or fix the URL";
const REFUSED: &str = "the store refused the credentials: check AWS_ACCESS_KEY_ID and \
     AWS_SECRET_ACCESS_KEY (or the GOOGLE_*/AZURE_* variables of your store)";

/// The environment variables whose values are secrets, never shown.
const SECRET_VARIABLES: [&str; 7] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_CLIENT_SECRET",
];

/// `text` with the value of every secret variable of the environment replaced.
pub fn redact(text: &str) -> String {
    let mut out = text.to_string();
    for var in SECRET_VARIABLES {
        if let Ok(value) = std::env::var(var) {
            // A value of a few characters would blot out ordinary words.
            if value.len() >= 4 {
                out = out.replace(&value, "<redacted>");
            }
        }
    }
    out
}

/// `url` without its user, password and query (a SAS token rides in an Azure URL's
/// query), for messages.
pub fn shown_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            parsed.to_string().trim_end_matches('/').to_string()
        }
        Err(_) => "(unparsable URL)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> (Arc<dyn ObjectStore>, Remote) {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let remote = Remote::with_store(store.clone(), &Path::from("team"), "smoke", "memory://")
            .unwrap_or_else(|e| panic!("{e}"));
        (store, remote)
    }

    #[test]
    fn a_push_is_create_only_and_a_pull_copies_only_what_is_missing() {
        let (store, remote) = memory();
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let file = dir.path().join("a");
        std::fs::write(&file, b"ours").unwrap_or_else(|e| panic!("{e}"));
        // Someone else's file already holds the name: it is never overwritten.
        let theirs = Path::from("team/smoke/blobs-00000001-aa.parquet");
        let rt = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
        rt.block_on(store.put(&theirs, PutPayload::from_static(b"theirs")))
            .unwrap_or_else(|e| panic!("{e}"));
        remote
            .push("blobs-00000001-aa.parquet", &file)
            .unwrap_or_else(|e| panic!("{e}"));
        remote
            .push("tables/k/t.parquet", &file)
            .unwrap_or_else(|e| panic!("{e}"));
        let got = rt
            .block_on(async { store.get(&theirs).await?.bytes().await })
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(&got[..], b"theirs");

        let other = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        remote.check().unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<String> = remote.names().into_iter().collect();
        assert_eq!(
            names,
            ["blobs-00000001-aa.parquet", "tables/k/t.parquet"].map(String::from)
        );
        let pulled = remote
            .pull(other.path(), &names)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pulled.len(), 2);
        assert_eq!(
            std::fs::read(other.path().join("tables/k/t.parquet")).ok(),
            Some(b"ours".to_vec())
        );
        let again = remote
            .pull(other.path(), &names)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(again.is_empty(), "a file already here is not fetched again");
    }

    #[test]
    fn messages_carry_no_credentials_from_the_url() {
        assert_eq!(
            shown_url("s3://user:hunter2@bucket/prefix/?sig=abc"),
            "s3://bucket/prefix"
        );
        let refused = Remote::connect("s3://key:secret@bucket/p", "smoke")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(refused.contains("environment") || refused.contains("credentials"));
        assert!(!refused.contains("secret"), "{refused}");
    }

    #[test]
    fn a_missing_directory_is_refused_before_anything_else() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let url = format!("file://{}/nope", dir.path().display());
        let e = Remote::connect(&url, "smoke").err().map(|e| e.to_string());
        assert!(
            e.as_deref().is_some_and(|e| e.contains("does not exist")),
            "{e:?}"
        );
    }
}
