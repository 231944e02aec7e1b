// Shapes, fully or partly known. A dimension of -1 is unknown; a shape of unknown
// rank has no dimensions at all.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ir/status.h"

namespace graphjit {

class Shape {
 public:
  Shape() = default;  // a scalar
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}
  static Shape UnknownRank() {
    Shape s;
    s.unknown_rank_ = true;
    return s;
  }

  bool unknown_rank() const { return unknown_rank_; }
  int rank() const { return static_cast<int>(dims_.size()); }  // only if !unknown_rank()
  int64_t dim(int i) const { return dims_[i]; }
  void set_dim(int i, int64_t size) { dims_[i] = size; }
  const std::vector<int64_t>& dims() const { return dims_; }
  bool IsFullyDefined() const;
  // Number of elements; -1 if not fully defined.
  int64_t num_elements() const;

  bool operator==(const Shape& o) const { return unknown_rank_ == o.unknown_rank_ && dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return !(*this == o); }

  // "[2,3]", "[?,3]", "<unknown>"; "[]" for a scalar.
  std::string ToString() const;

 private:
  std::vector<int64_t> dims_;
  bool unknown_rank_ = false;
};

// Every size graphjit computes by multiplying (element counts, bytes, a dimension times a
// multiple) goes through these, never through a bare multiplication: the product of
// non-negative factors, or InvalidArgument past 2^62 (no machine holds that much).
StatusOr<int64_t> CheckedMul(int64_t a, int64_t b);
// Element count of fully known dims.
StatusOr<int64_t> CheckedNumElements(const std::vector<int64_t>& dims);
// Bytes of fully known dims of `element_size`-byte elements.
StatusOr<int64_t> CheckedBytes(const std::vector<int64_t>& dims, int64_t element_size);
// True if a tensor of shape `concrete` may flow where `partial` is declared.
bool IsCompatible(const Shape& partial, const Shape& concrete);
// NumPy/TensorFlow broadcasting of two shapes (unknown dims allowed).
StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b);

}  // namespace graphjit
