//! The publishing lease of a shared cache: on a store, the outputs lock of one machine
//! becomes a lease (`claims/lease`, [`super::claims`]) that an apply holds while it
//! computes the analyses and publishes, so that two merges of one study never publish
//! at once. The second waits, naming the holder, for as long as `--lock-timeout`
//! allows.
//!
//! The lease is taken create-only with an expiry, renewed by compare-and-swap on its
//! ETag before every write of the publishing stage ([`Lease::check`]: a holder that
//! stalled past the time to live and lost it stops rather than publish beside its
//! successor), and released when dropped. A holder that dies leaves it to expire.
//!
//! Shards take no lease: they only add files under names of their own. Their episodes
//! are guarded by claims ([`super::episode_claims`]).
//!
//! Never: decides what is published, or reads the local outputs lock (a local
//! directory keeps that lock; the lease is the store's).

use std::sync::Arc;
use std::time::{Duration, Instant};

use thiserror::Error;

use super::claims::Claim;
use super::episode_claims::{now_ms, ClaimSettings};
use super::remote::{Remote, RemoteError};

/// The lease cannot be had or kept.
#[derive(Debug, Error, miette::Diagnostic)]
pub enum LeaseError {
    /// Another process publishes from the same shared cache.
    #[error("the shared cache {url} is being published from by {holder}")]
    #[diagnostic(
        code(tbb::lease::busy),
        help(
            "wait for it to finish, or pass --lock-timeout SECONDS to wait up to that long; \
             the episodes this apply ran are committed and in the store"
        )
    )]
    Busy {
        /// The store, as shown to people.
        url: String,
        /// Who holds the lease.
        holder: String,
    },
    /// This process held the lease but could not renew it in time, and another took it.
    #[error(
        "lost the publishing lease of the shared cache {url}: it expired and {holder} took it"
    )]
    #[diagnostic(
        code(tbb::lease::lost),
        help(
            "this apply stalled longer than the lease's time to live (--claim-ttl); nothing \
             it committed is lost: run apply again once the other one has finished"
        )
    )]
    Lost {
        /// The store, as shown to people.
        url: String,
        /// Who holds it now.
        holder: String,
    },
    /// The store failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Remote(#[from] RemoteError),
}

/// The name of the lease among a study's claims.
const LEASE: &str = "lease";

/// A held lease; released when dropped.
#[derive(Debug)]
pub struct Lease {
    remote: Arc<Remote>,
    settings: ClaimSettings,
    e_tag: String,
}

impl Lease {
    /// How often a waiter tries again.
    const RETRY: Duration = Duration::from_millis(500);

    /// Takes the lease of `remote` as `settings` say. When another process holds it,
    /// calls `on_wait` once with who, then waits up to `timeout` (`None`: forever;
    /// zero: fail at once).
    pub async fn take(
        remote: Arc<Remote>,
        settings: ClaimSettings,
        timeout: Option<Duration>,
        on_wait: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Lease, LeaseError> {
        let started = Instant::now();
        let mut told = false;
        loop {
            match remote.claim(LEASE, &settings.holder, now_ms(), settings.ttl)? {
                Claim::Won { e_tag, .. } => {
                    return Ok(Lease {
                        remote,
                        settings,
                        e_tag,
                    })
                }
                Claim::Held(holder) => {
                    if timeout.is_some_and(|t| started.elapsed() >= t) {
                        return Err(LeaseError::Busy {
                            url: remote.url().to_string(),
                            holder: holder.holder,
                        });
                    }
                    if !told {
                        on_wait(&holder.holder);
                        told = true;
                    }
                    tokio::time::sleep(Self::RETRY).await;
                }
            }
        }
    }

    /// Renews the lease before a write: an error when it is no longer ours.
    pub fn check(&mut self) -> Result<(), LeaseError> {
        let renewed = self.remote.renew(
            LEASE,
            &self.settings.holder,
            &self.e_tag,
            now_ms(),
            self.settings.ttl,
        )?;
        match renewed {
            Some(e_tag) => {
                self.e_tag = e_tag;
                Ok(())
            }
            None => Err(LeaseError::Lost {
                url: self.remote.url().to_string(),
                holder: self
                    .remote
                    .current_holder(LEASE)?
                    .map_or_else(|| "nobody".to_string(), |h| h.holder),
            }),
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Best effort: a lease not released expires.
        let _ = self
            .remote
            .release(LEASE, &self.settings.holder, &self.e_tag);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(store: &Arc<object_store::memory::InMemory>) -> Arc<Remote> {
        Arc::new(super::super::claims::tests::remote(store))
    }

    fn settings(who: &str, ttl_ms: u64) -> ClaimSettings {
        ClaimSettings {
            holder: who.to_string(),
            ttl: Duration::from_millis(ttl_ms),
        }
    }

    #[tokio::test]
    async fn a_second_merge_waits_naming_the_holder_and_takes_the_lease_once_released() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let first = Lease::take(
            remote(&store),
            settings("merge-a", 60_000),
            None,
            &mut |_| {},
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        let mut waited = Vec::new();
        let busy = Lease::take(
            remote(&store),
            settings("merge-b", 60_000),
            Some(Duration::from_millis(600)),
            &mut |h| waited.push(h.to_string()),
        )
        .await;
        assert_eq!(waited, ["merge-a"]);
        assert!(
            matches!(&busy, Err(LeaseError::Busy { holder, .. }) if holder == "merge-a"),
            "{busy:?}"
        );
        drop(first);
        assert!(Lease::take(
            remote(&store),
            settings("merge-b", 60_000),
            Some(Duration::ZERO),
            &mut |_| {}
        )
        .await
        .is_ok());
    }

    #[tokio::test]
    async fn a_holder_that_stalled_past_its_lease_stops_before_its_next_write() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let mut stalled = Lease::take(remote(&store), settings("merge-a", 50), None, &mut |_| {})
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(stalled.check().is_ok(), "renewed in time");
        tokio::time::sleep(Duration::from_millis(120)).await;
        let _next = Lease::take(
            remote(&store),
            settings("merge-b", 60_000),
            None,
            &mut |_| {},
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
        match stalled.check() {
            Err(LeaseError::Lost { holder, .. }) => assert_eq!(holder, "merge-b"),
            other => panic!("{other:?}"),
        }
    }
}
