//! The `tbb` binary: parse, run, map the error to an exit code.

/// mimalloc rather than the system allocator: a run allocates and frees millions of
/// small strings and JSON nodes (malloc and free were a quarter of a live study's
/// instructions), and mimalloc's per-thread free lists cut the whole process's CPU per
/// loopback request at V = 8 by 15-30% and the capacity study's by 13-23% in two
/// side-by-side runs, at the same peak memory (BENCHMARKS.md). Only the binary sets it; the library leaves the
/// choice to whoever links it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if let Err(report) = tbb::cli::run() {
        eprintln!("{report:?}");
        std::process::exit(tbb::cli::exit_codes::of(&report));
    }
}
