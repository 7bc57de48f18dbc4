//! Claims and leases on a shared store: small objects beside a study's cache files
//! (`claims/<name>`), each `{"holder", "expires_ms"}`, taken create-only and taken over
//! or renewed only by compare-and-swap on the ETag the taker last read. Exactly one of
//! any number of racers wins a free claim (the store refuses every create but the first
//! with 412), and exactly one wins an expired one (every overwrite but the first names
//! an ETag that is no longer current).
//!
//! What they are for: a claim per live episode, so that shards sharing a store never
//! pay twice for one episode; and the lease a merge holds while it publishes (renewed
//! while held, re-checked before each write, released by expiring it). This module
//! owns the protocol only; apply takes them through [`super::episode_claims`] and
//! [`super::lease`].
//!
//! Never: decides what a claim guards, waits (a caller that finds a claim held decides
//! whether to skip, wait or fail), or deletes anything (object_store has no conditional
//! delete: a claim is released by a compare-and-swap that expires it).

use std::time::Duration;

use object_store::{ObjectStoreExt as _, PutMode, PutOptions, PutPayload, UpdateVersion};
use serde::{Deserialize, Serialize};

use super::remote::{Remote, RemoteError};

/// What a claim object holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Who holds it (host and process: shown to whoever finds it held).
    pub holder: String,
    /// When it expires, in milliseconds since the Unix epoch.
    pub expires_ms: u64,
}

/// The outcome of taking a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Ours until it expires; `e_tag` renews or releases it.
    Won {
        /// The ETag of our claim object.
        e_tag: String,
        /// Whether another holder had it before (expired or released): what it guarded
        /// may have been done meanwhile, and the taker looks again before acting.
        after_another: bool,
    },
    /// Someone else's, live.
    Held(Holder),
}

impl Remote {
    /// Takes claim `name` for `holder` until `now_ms + ttl`: create-only; a live claim
    /// is someone else's ([`Claim::Held`]); an expired one is taken over by a
    /// compare-and-swap on the ETag read, which only one taker wins.
    pub fn claim(
        &self,
        name: &str,
        holder: &str,
        now_ms: u64,
        ttl: Duration,
    ) -> Result<Claim, RemoteError> {
        let mine = Holder {
            holder: holder.to_string(),
            expires_ms: now_ms.saturating_add(ttl.as_millis() as u64),
        };
        let body = serde_json::to_vec(&mine).unwrap_or_default();
        if let Ok(e_tag) = self.put_claim(name, body.clone(), PutMode::Create)? {
            return Ok(Claim::Won {
                e_tag,
                after_another: false,
            });
        }
        let Some((current, e_tag)) = self.read_claim(name)? else {
            // Deleted in between (by hand): try once more from the start.
            return Ok(match self.put_claim(name, body, PutMode::Create)? {
                Ok(e_tag) => Claim::Won {
                    e_tag,
                    after_another: true,
                },
                Err(Refused) => Claim::Held(self.holder_of(name)?),
            });
        };
        if current.expires_ms > now_ms {
            return Ok(Claim::Held(current));
        }
        let swap = PutMode::Update(UpdateVersion {
            e_tag: Some(e_tag),
            version: None,
        });
        Ok(match self.put_claim(name, body, swap)? {
            Ok(e_tag) => Claim::Won {
                e_tag,
                after_another: true,
            },
            Err(Refused) => Claim::Held(self.holder_of(name)?),
        })
    }

    /// Extends our claim to `now_ms + ttl`; `None` when it is no longer ours (expired
    /// and taken over).
    pub fn renew(
        &self,
        name: &str,
        holder: &str,
        e_tag: &str,
        now_ms: u64,
        ttl: Duration,
    ) -> Result<Option<String>, RemoteError> {
        let mine = Holder {
            holder: holder.to_string(),
            expires_ms: now_ms.saturating_add(ttl.as_millis() as u64),
        };
        let swap = PutMode::Update(UpdateVersion {
            e_tag: Some(e_tag.to_string()),
            version: None,
        });
        Ok(self
            .put_claim(name, serde_json::to_vec(&mine).unwrap_or_default(), swap)?
            .ok())
    }

    /// Gives our claim up: expires it, if it is still ours.
    pub fn release(&self, name: &str, holder: &str, e_tag: &str) -> Result<(), RemoteError> {
        self.renew(name, holder, e_tag, 0, Duration::ZERO)
            .map(|_| ())
    }

    /// Who holds claim `name` now, live or expired; `None` when there is no such claim.
    pub fn current_holder(&self, name: &str) -> Result<Option<Holder>, RemoteError> {
        Ok(self.read_claim(name)?.map(|(h, _)| h))
    }

    /// Who holds claim `name` now (an empty holder if it vanished).
    fn holder_of(&self, name: &str) -> Result<Holder, RemoteError> {
        Ok(self.read_claim(name)?.map(|(h, _)| h).unwrap_or(Holder {
            holder: String::new(),
            expires_ms: 0,
        }))
    }

    fn read_claim(&self, name: &str) -> Result<Option<(Holder, String)>, RemoteError> {
        let location = self.claim_location(name);
        let store = self.store();
        let got = self.block(async move {
            let got = store.get(&location).await?;
            let e_tag = got.meta.e_tag.clone().unwrap_or_default();
            Ok::<_, object_store::Error>((got.bytes().await?, e_tag))
        });
        match got {
            Ok((bytes, e_tag)) => {
                // A claim tbb did not write reads as expired: it is taken over.
                let holder = serde_json::from_slice(&bytes).unwrap_or(Holder {
                    holder: String::new(),
                    expires_ms: 0,
                });
                Ok(Some((holder, e_tag)))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.transfer("read claim", name, &e)),
        }
    }

    /// A conditional put: `Ok(Ok(e_tag))` when it took, `Ok(Err(Refused))` when the
    /// condition failed (the object exists, or changed since its ETag was read).
    fn put_claim(
        &self,
        name: &str,
        body: Vec<u8>,
        mode: PutMode,
    ) -> Result<Result<String, Refused>, RemoteError> {
        let location = self.claim_location(name);
        let store = self.store();
        let put = self.block(async move {
            store
                .put_opts(&location, PutPayload::from(body), PutOptions::from(mode))
                .await
        });
        match put {
            Ok(done) => Ok(Ok(done.e_tag.unwrap_or_default())),
            Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            ) => Ok(Err(Refused)),
            Err(e) => Err(self.transfer("write claim", name, &e)),
        }
    }

    fn claim_location(&self, name: &str) -> object_store::path::Path {
        self.location(&format!("claims/{name}"))
    }
}

/// A conditional write the store refused.
#[derive(Debug)]
struct Refused;

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::sync::Arc;

    /// A client of the in-memory `store`, as each process sharing it has its own (the
    /// claims, lease and episode-claims tests share it).
    pub(in crate::pipeline) fn remote(store: &Arc<object_store::memory::InMemory>) -> Remote {
        Remote::with_store(
            store.clone(),
            &object_store::path::Path::from("team"),
            "smoke",
            "memory://",
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Eight racers, each with its own client, take `name` at `now_ms`; the winners.
    fn race(store: &Arc<object_store::memory::InMemory>, name: &str, now_ms: u64) -> Vec<String> {
        let remotes: Vec<Remote> = (0..8).map(|_| remote(store)).collect();
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|scope| {
            let handles: Vec<_> = remotes
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        barrier.wait();
                        let who = format!("racer-{i}");
                        match r.claim(name, &who, now_ms, Duration::from_secs(60)) {
                            Ok(Claim::Won { .. }) => Some(who),
                            Ok(Claim::Held(_)) => None,
                            Err(e) => panic!("{e}"),
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| h.join().unwrap_or_else(|_| panic!("a racer panicked")))
                .collect()
        })
    }

    #[test]
    fn of_eight_racers_exactly_one_takes_a_free_claim_and_one_an_expired_one() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let winners = race(&store, "episode-k", 1_000);
        assert_eq!(winners.len(), 1, "{winners:?}");
        // Live: everyone else is told who holds it.
        let held = remote(&store)
            .claim("episode-k", "late", 2_000, Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            matches!(&held, Claim::Held(h) if h.holder == winners[0]),
            "{held:?}"
        );
        // Expired (its holder died): exactly one of eight takes it over.
        let takers = race(&store, "episode-k", 1_000 + 61_000);
        assert_eq!(takers.len(), 1, "{takers:?}");
    }

    #[test]
    fn a_lease_is_renewed_by_its_holder_only_and_free_once_released() {
        let store = Arc::new(object_store::memory::InMemory::new());
        let (a, b) = (remote(&store), remote(&store));
        let ttl = Duration::from_secs(30);
        let Ok(Claim::Won {
            e_tag,
            after_another: false,
        }) = a.claim("lease", "merge-a", 0, ttl)
        else {
            panic!("the first merge takes the lease");
        };
        // The second merge waits, and can name the holder.
        assert!(matches!(
            b.claim("lease", "merge-b", 10_000, ttl),
            Ok(Claim::Held(Holder { ref holder, .. })) if holder == "merge-a"
        ));
        let renewed = a
            .renew("lease", "merge-a", &e_tag, 20_000, ttl)
            .unwrap_or_else(|e| panic!("{e}"));
        let Some(e_tag) = renewed else {
            panic!("the holder renews its lease");
        };
        // Past the first expiry, the renewed lease still holds.
        assert!(matches!(
            b.claim("lease", "merge-b", 40_000, ttl),
            Ok(Claim::Held(_))
        ));
        // A stale ETag renews nothing.
        assert_eq!(
            b.renew("lease", "merge-b", "\"stale\"", 40_000, ttl).ok(),
            Some(None)
        );
        a.release("lease", "merge-a", &e_tag)
            .unwrap_or_else(|e| panic!("{e}"));
        // Released, it is taken by the next, who is told it had a holder before.
        assert!(matches!(
            b.claim("lease", "merge-b", 41_000, ttl),
            Ok(Claim::Won {
                after_another: true,
                ..
            })
        ));
    }
}
