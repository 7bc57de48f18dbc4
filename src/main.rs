//! The `tbb` binary: parse, run, map the error to an exit code.

/// mimalloc rather than the system allocator: a run allocates and frees millions of
/// small strings and JSON nodes (malloc and free were a quarter of a live study's
/// instructions), and mimalloc's per-thread free lists cut the whole process's CPU per
/// loopback request by about a fifth and the capacity study's CPU by a sixth, at the
/// same peak memory (BENCHMARKS.md). Only the binary sets it; the library leaves the
/// choice to whoever links it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if let Err(report) = tbb::cli::run() {
        eprintln!("{report:?}");
        std::process::exit(tbb::cli::exit_codes::of(&report));
    }
}
