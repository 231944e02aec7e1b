// The graphjit command line, in process: what bin/graphjit runs, and what the C API's
// gj_command hands its arguments to (the Python package's bench).
//
// Exit status, the same for every subcommand: 0 success; 2 bad usage or invalid input
// (a missing file, a malformed .npy, an invalid or unsupported model); 1 a run-time
// error (a missing feed, a wrong feed, a shape mismatch inside the graph).
#pragma once

namespace graphjit {

// Parses argv (argv[0] the program's name) and runs the subcommand: its exit status.
int CommandLine(int argc, const char* const* argv);

}  // namespace graphjit
