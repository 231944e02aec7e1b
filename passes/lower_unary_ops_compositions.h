// The pass `lower_unary_ops_compositions`: TensorFlow's _UnaryOpsComposition as the chain of
// unary ops it is.
#pragma once

#include <map>
#include <string>

#include "passes/pass_manager.h"

namespace graphjit {

// Rewrites each _UnaryOpsComposition (what TensorFlow's arithmetic optimizer makes of a chain
// of unary ops) as that chain again: ops clustering takes one by one. The last op keeps the
// node's name; the others are nodes "<node>/graphjit_<k>" with its device and attrs. TensorFlow
// drops the chain's jit_scope attrs: a composition without _XlaCompile gets its input's
// _XlaCompile and _XlaScope back. `steps` (may be null) gets each new node's name mapped to the
// composition's, whose outputs are its outputs' dtype and shape too (a unary op keeps both).
// Returns whether it rewrote any.
bool LowerUnaryOpsCompositions(Graph& graph, std::map<std::string, std::string>* steps);

// lower_unary_ops_compositions; `steps` as above.
PassFunction LowerUnaryOpsCompositionsPass(std::map<std::string, std::string>* steps);

}  // namespace graphjit
