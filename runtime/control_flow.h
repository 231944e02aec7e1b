// TensorFlow's control flow as graphs frozen from a tf.function carry it (Keras's recurrent
// layers, tf.cond): while loops and conditionals written with Enter, Merge, Switch,
// LoopCond, NextIteration and Exit or as functional While and If nodes, and the
// TensorLists loop bodies read and write.
#pragma once

#include "ir/graph.h"
#include "ir/status.h"

namespace graphjit {

// Rewrites, before the graph is analyzed:
//  - each PartitionedCall/StatefulPartitionedCall of a function in the graph's library as
//    the function's body (InlineFunctionCalls), so that its ops run and join clusters as the
//    graph's own;
//  - each TensorList of a static size as a dense tensor [size, element dims...]:
//    TensorListReserve a zero Const, TensorListFromTensor and TensorListStack the tensor
//    itself (Identity), TensorListGetItem a GatherV2 on axis 0, TensorListSetItem the op
//    _GraphjitSetRow; the types of the loop ops that carry one follow;
//  - each conditional, Switches on one predicate with the branches forward of them up to
//    the Merges, or an If/StatelessIf node with then and else functions in the graph's
//    library, as one _GraphjitIf node: its inputs are the predicate, then the values the
//    branches read; its branches are GraphDefs of their own (attrs `then`, `else`), fed
//    `_arg_0`, `_arg_1`, ... in that order; its outputs are the Merges' values (each Merge
//    becomes an Identity of one);
//  - each while loop, one frame of Enter nodes or a While/StatelessWhile node with cond and
//    body functions in the graph's library, as one _GraphjitWhile node: its inputs are the
//    loop variables' initial values, then the loop invariants; its cond and body are
//    GraphDefs of their own (attrs `cond`, `body`), fed `_arg_0`, `_arg_1`, ... in that
//    order; its outputs are the variables' final values (each Exit becomes an Identity of
//    one; a While node keeps its name).
// Inner loops and conditionals go first: a loop's body may hold either, as may a branch.
// What it does not cover (a conditional whose Merge's value_index is read or whose
// branches read around their Switches, a TensorList whose size or element shape is only
// known at run time) it leaves as is, for the analysis to reject by its ops.
// An error is a graph it understood as a loop or conditional but found malformed (or a
// function body it cannot read).
Status FunctionalizeControlFlow(Graph* graph);

// The rewrites FunctionalizeControlFlow is made of, each alone (the passes
// inline_function_calls, lower_tensor_lists, functionalize_conditionals and
// functionalize_loops run them; the Session runs FunctionalizeControlFlow itself, as the
// runtime reads any graph with or without the passes). Each returns whether it changed the graph.
//  - each function call as its function's body: the body's nodes, named "<call>/<node>",
//    read the call's inputs where the body reads its arguments, and the call becomes an
//    Identity (IdentityN, or a NoOp for no outputs) of its results, keeping its name and
//    outputs; calls in a body are inlined in turn (32 levels and 4M nodes at most). A call
//    of a function the library lacks is an error. Stateful calls are inlined too: the
//    body's control edges keep its order, and graphjit runs what the fetches need;
StatusOr<bool> InlineFunctionCalls(Graph* graph);
//  - each TensorList of a static size as a dense tensor;
StatusOr<bool> LowerTensorLists(Graph* graph);
//  - each If/StatelessIf, then each conditional of Switches and Merges, innermost first, as
//    a _GraphjitIf (a conditional holding a loop stays);
StatusOr<bool> FunctionalizeConditionals(Graph* graph);
//  - each While/StatelessWhile, then each loop of a frame of Enter nodes, innermost first,
//    as a _GraphjitWhile (a loop holding a conditional is an error: make those first).
StatusOr<bool> FunctionalizeLoops(Graph* graph);

}  // namespace graphjit
