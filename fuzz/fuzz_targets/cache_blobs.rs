//! `tbb::fuzz::cache_blobs` over libFuzzer's inputs: it must never panic.
#![no_main]

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    let _accepted = tbb::fuzz::cache_blobs(bytes);
});
