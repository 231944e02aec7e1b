// NumPy .npy files (format versions 1.0, 2.0 and 3.0; little-endian; C order).
#pragma once

#include <string>

#include "runtime/tensor.h"

namespace graphjit {

// InvalidArgument for a malformed file or an unsupported dtype/order; NotFound if
// the file cannot be read.
StatusOr<Tensor> ReadNpy(const std::string& path);
StatusOr<Tensor> ParseNpy(const std::string& bytes, const std::string& what);
// f16 and bf16 are written as float32 (NumPy has no bfloat16).
Status WriteNpy(const std::string& path, const Tensor& tensor);

}  // namespace graphjit
