// GraphDef files and the conversion between GraphDef and the Graph IR.
#pragma once

#include <string>

#include <google/protobuf/message.h>

#include "ir/graph.h"

namespace graphjit {

// Reads a GraphDef: text format for .pbtxt/.pbtext/.txt/.prototxt, binary otherwise.
// NotFound if the file cannot be read; InvalidArgument (with line:column for text)
// if it does not parse.
StatusOr<tensorflow::GraphDef> ReadGraphDefFile(const std::string& path);
// Writes text format for .pbtxt/.pbtext/.txt/.prototxt, binary otherwise.
Status WriteGraphDefFile(const tensorflow::GraphDef& graph_def, const std::string& path);

// The message's bytes, the same for equal messages (maps written in key order).
std::string SerializeDeterministically(const google::protobuf::Message& message);

// Reads any message in text format. Fields graphjit does not know (e.g. the parts of
// a TensorFlow ConfigProto it does not model) are skipped.
Status ReadTextProtoFile(const std::string& path, google::protobuf::Message* message);
// A message from bytes that hold its binary or its text form (`what` names them in errors;
// text fields the message lacks are an error unless `allow_unknown_text`).
Status ParseBinaryOrText(const std::string& bytes, const std::string& what, google::protobuf::Message* message,
                         bool allow_unknown_text = false);

// Builds the IR. Checks what needs no knowledge of ops: non-empty unique names,
// well-formed input strings, inputs that name existing nodes, control inputs after
// data inputs, parseable device strings. Cycles are found by ValidateGraphStructure.
StatusOr<Graph> ImportGraphDef(const tensorflow::GraphDef& graph_def);
tensorflow::GraphDef ExportGraphDef(const Graph& graph);

// Structural checks that need the whole graph: no cycles.
Status ValidateGraphStructure(const Graph& graph);

}  // namespace graphjit
