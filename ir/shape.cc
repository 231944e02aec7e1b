#include "ir/shape.h"

namespace graphjit {

bool Shape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_)
    if (d < 0) return false;
  return true;
}

int64_t Shape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  auto n = CheckedNumElements(dims_);
  return n.ok() ? *n : -1;
}

std::string Shape::ToString() const {
  if (unknown_rank_) return "<unknown>";
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  return s + "]";
}

StatusOr<int64_t> CheckedMul(int64_t a, int64_t b) {
  constexpr int64_t kMax = int64_t{1} << 62;
  if (a < 0 || b < 0) return InvalidArgument("negative size " + std::to_string(a < 0 ? a : b));
  if (a != 0 && b > kMax / a)
    return InvalidArgument("size " + std::to_string(a) + " x " + std::to_string(b) + " is more than 2^62");
  return a * b;
}

StatusOr<int64_t> CheckedNumElements(const std::vector<int64_t>& dims) {
  for (int64_t d : dims) {
    if (d < 0) return InvalidArgument("negative dimension " + std::to_string(d));
    if (d == 0) return int64_t{0};
  }
  int64_t n = 1;
  for (int64_t d : dims) {
    auto product = CheckedMul(n, d);
    if (!product.ok()) return InvalidArgument("shape " + Shape(dims).ToString() + " has too many elements");
    n = *product;
  }
  return n;
}

StatusOr<int64_t> CheckedBytes(const std::vector<int64_t>& dims, int64_t element_size) {
  GJ_ASSIGN_OR_RETURN(int64_t n, CheckedNumElements(dims));
  auto bytes = CheckedMul(n, element_size);
  if (!bytes.ok()) return InvalidArgument("shape " + Shape(dims).ToString() + " has too many bytes");
  return bytes;
}

bool IsCompatible(const Shape& partial, const Shape& concrete) {
  if (partial.unknown_rank() || concrete.unknown_rank()) return true;
  if (partial.rank() != concrete.rank()) return false;
  for (int i = 0; i < partial.rank(); ++i) {
    if (partial.dim(i) >= 0 && concrete.dim(i) >= 0 && partial.dim(i) != concrete.dim(i)) return false;
  }
  return true;
}

StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return Shape::UnknownRank();
  int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(rank);
  for (int i = 0; i < rank; ++i) {
    int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    int64_t da = ia >= 0 ? a.dim(ia) : 1;
    int64_t db = ib >= 0 ? b.dim(ib) : 1;
    if (da == 1) {
      out[i] = db;
    } else if (db == 1) {
      out[i] = da;
    } else if (da < 0 || db < 0) {
      out[i] = da < 0 ? db : da;  // the known one, if either is known
    } else if (da == db) {
      out[i] = da;
    } else {
      return FailedPrecondition("incompatible shapes for broadcasting: " + a.ToString() + " and " + b.ToString());
    }
  }
  return Shape(std::move(out));
}

}  // namespace graphjit
