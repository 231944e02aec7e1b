// The numerics guard's comparisons (internal to jit/, SessionOptions::jit_check_numerics):
// a compiled cluster's outputs against its body run op by op on the same inputs, within
// the JIT's tolerance (jit/jit.h, JitStats). The cluster kernel runs both and reports.
#pragma once

#include <string>
#include <vector>

#include "ir/dtype.h"
#include "runtime/session_options.h"
#include "runtime/tensor.h"

namespace graphjit {

// Where `got`, a compiled kernel's output, is further from `want`, op by op's, than the
// JIT's tolerance for its type or for `computed_in`, the body's narrowest float type: the
// first such element, described; "" if none.
std::string FirstMismatch(const Tensor& got, const Tensor& want, DType computed_in);

// The first mismatch among a cluster's outputs, naming the output and its tensor in the
// body (`names`): "output 1 ('y' of its body), element ..."; "" if none.
std::string FirstOutputMismatch(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                const std::vector<std::string>& names, DType computed_in);

// Where the stages of a cluster whose outputs differ are written: under the session's
// --dump_to, else under the temporary directory, one folder per process.
std::string NumericsDumpDir(const SessionOptions* options, const std::string& cluster);

}  // namespace graphjit
