//! The `tbb` binary: parse, run, map the error to an exit code.

/// mimalloc rather than the system allocator: a run allocates and frees millions of
/// small strings and JSON nodes, and mimalloc's per-thread free lists take a good part
/// of the CPU per loopback request and of the capacity study's; small studies peak
/// ~50 MiB higher, as it commits its arenas eagerly (BENCHMARKS.md has both, side by
/// side); it is built without transparent huge pages (`no_thp`, see Cargo.toml). Only
/// the binary sets it; the library leaves the choice to whoever links it.
/// The `system-allocator` feature leaves it out, for heaptrack.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    // Errors quote servers' bodies and users' files, so their rendering is escaped
    // (tbb::terminal); the renderer's own colours and links would be escaped with it,
    // so it makes none.
    let _ = miette::set_hook(Box::new(|_| {
        Box::new(
            miette::MietteHandlerOpts::new()
                .color(false)
                .terminal_links(false)
                .build(),
        )
    }));
    if let Err(report) = tbb::cli::run() {
        // Not `eprintln!`, which panics (exit 101) when stderr is a closed pipe
        // (`tbb plan bad.toml 2>&1 | head -1`): the exit code must stay the error's.
        use std::io::Write as _;
        let rendered = format!("{report:?}");
        let text = tbb::terminal::escape(&rendered);
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "{text}");
        std::process::exit(tbb::cli::exit_codes::of(&report));
    }
}
