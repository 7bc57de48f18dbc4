//! The `tbb` binary: parse, run, map the error to an exit code.

fn main() {
    if let Err(report) = tbb::cli::run() {
        eprintln!("{report:?}");
        std::process::exit(tbb::cli::exit_codes::of(&report));
    }
}
