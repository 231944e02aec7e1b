// TensorFlow's control flow made graphjit's as passes: thin wrappers of the runtime's
// rewrites (runtime/control_flow.h). The rewrites live in the runtime, not here, because
// the runtime needs them itself: a Session, and each loop body or branch it runs, reads
// graphs with Enter/Merge/Switch loops, If/While nodes and TensorLists, and the runtime
// builds and runs without this folder (it may not depend on it).
#pragma once

#include "passes/pass_manager.h"

namespace graphjit {

// inline_function_calls, lower_tensor_lists, functionalize_conditionals, functionalize_loops,
// and functionalize_control_flow (all four, inner loops and conditionals first, as a Session
// reads a graph).
void AddControlFlowPasses(PassManager& pm);

}  // namespace graphjit
