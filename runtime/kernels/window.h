// The window a convolution or a pool slides over its NHWC input, as TensorFlow resolves it:
// strides, dilations, and pads (SAME splits the padding with the odd element at the end).
// The reference kernels (nn.cc) and the compilers read windows here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/shape.h"
#include "ir/status.h"

namespace graphjit {

struct Window {
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int64_t pt = 0, pb = 0, pl = 0, pr = 0;  // resolved padding: top, bottom, left, right
  std::string padding;                     // SAME, VALID, EXPLICIT
  std::vector<int64_t> explicit_paddings;
  bool nchw = false;  // the data format: NCHW (else NHWC)
};

// The window of a convolution node (its filter [KH, KW, ...] of shape `filter`) or, with
// `filter` null, of a pool node (its ksize), over an input of shape `input` (static, in the
// node's data format: NHWC, or NCHW for a convolution). The node's errors (bad attrs, a
// window that does not fit) name it.
StatusOr<Window> ResolveWindow(const Node& node, const Shape& input, const Shape* filter);

}  // namespace graphjit
