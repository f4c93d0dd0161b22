import Foundation

// typedstore-bench: each operation done with TypedStore and with the raw SQLite C API in the
// same process and run; prints the median times and their ratio.
//
//   swift run -c release typedstore-bench [--n 100000] [--runs 5] [--json FILE] [--only NAME] [--check]
//
// --check compares every TypedStore result with the raw one (same rows, same checksums) and
// exits non-zero on a difference; the test suite runs it with --n 1000 --runs 1.
//
// Bench.swift runs a process in its role (BenchCommandLine.swift): the benchmark, or one of
// the processes it starts (Roles/). Bench+Harness.swift times; Rows/ holds the rows, a file
// per family; Report.swift prints them and writes them as JSON.

exit(await Bench.main(BenchCommandLine.parse(Array(CommandLine.arguments.dropFirst()))))
