// runtime/: tensors, buffers, TensorProto conversion, casts, .npy files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "ir/attr.h"
#include "runtime/npy.h"
#include "runtime/tensor.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

TEST(Tensor, BuffersAreAlignedAndShared) {
  Allocator alloc;
  auto t = Tensor::Allocate(DType::kFloat, Shape{3, 5}, &alloc);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw()) % 64, 0u);
  EXPECT_EQ(t->bytes(), 60u);
  EXPECT_EQ(alloc.stats().bytes_in_use, 60);
  {
    Tensor view = t->Reshaped(Shape{15});
    EXPECT_EQ(view.raw(), t->raw());
    Tensor copy = *t;
    t = Tensor();  // the view and the copy keep the buffer alive
    EXPECT_EQ(alloc.stats().bytes_in_use, 60);
  }
  EXPECT_EQ(alloc.stats().bytes_in_use, 0);
}

TEST(Tensor, HugeAllocationsFailCleanly) {
  auto t = Tensor::Allocate(DType::kFloat, Shape{int64_t{1} << 40});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kResourceExhausted);
  EXPECT_FALSE(Tensor::Allocate(DType::kFloat, Shape{int64_t{1} << 31, int64_t{1} << 31, 4}).ok());
  EXPECT_FALSE(Tensor::Allocate(DType::kString, Shape{2}).ok());
}

tensorflow::TensorProto Proto(DType d, std::vector<int64_t> dims) {
  tensorflow::TensorProto p;
  p.set_dtype(static_cast<tensorflow::DataType>(d));
  ShapeToProto(Shape(dims), p.mutable_tensor_shape());
  return p;
}

TEST(TensorProto, TypedValuesRepeatTheLastOne) {
  auto p = Proto(DType::kFloat, {2, 3});
  p.add_float_val(1.5f);
  p.add_float_val(2.5f);
  auto t = TensorFromProto(p);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(testing::Values(*t), (std::vector<double>{1.5, 2.5, 2.5, 2.5, 2.5, 2.5}));
  auto empty = TensorFromProto(Proto(DType::kInt32, {4}));
  EXPECT_EQ(testing::Values(*empty), (std::vector<double>{0, 0, 0, 0}));
}

TEST(TensorProto, HalfAndBFloat16BitPatterns) {
  auto p = Proto(DType::kHalf, {2});
  p.add_half_val(0x3c00);  // 1.0
  p.add_half_val(0xc000);  // -2.0
  EXPECT_EQ(testing::Values(*TensorFromProto(p)), (std::vector<double>{1.0, -2.0}));
  auto b = Proto(DType::kBFloat16, {1});
  b.add_half_val(0x4040);  // 3.0
  EXPECT_EQ(testing::Values(*TensorFromProto(b)), (std::vector<double>{3.0}));
}

TEST(TensorProto, ContentRoundTrip) {
  Tensor t = testing::MakeTensor(DType::kInt64, Shape{2, 2}, {1, -2, 3, int64_t{1} << 40});
  tensorflow::TensorProto p;
  TensorToProto(t, &p);
  auto back = TensorFromProto(p);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(testing::Values(*back), testing::Values(t));
  EXPECT_EQ(back->shape(), t.shape());
}

TEST(TensorProto, HostileProtosAreRejected) {
  auto short_content = Proto(DType::kFloat, {4});
  short_content.set_tensor_content(std::string(12, '\0'));
  auto r = TensorFromProto(short_content);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("needs 16 bytes"), std::string::npos) << r.status().message();

  auto too_many = Proto(DType::kFloat, {2});
  for (int i = 0; i < 3; ++i) too_many.add_float_val(1);
  EXPECT_FALSE(TensorFromProto(too_many).ok());

  auto overflow = Proto(DType::kFloat, {int64_t{1} << 40, int64_t{1} << 40});
  overflow.add_float_val(1);
  EXPECT_FALSE(TensorFromProto(overflow).ok());

  auto partial = Proto(DType::kFloat, {-1, 2});
  EXPECT_FALSE(TensorFromProto(partial).ok());

  auto unsupported = Proto(DType::kString, {1});
  EXPECT_EQ(TensorFromProto(unsupported).status().code(), Code::kUnimplemented);

  // A big declared shape with a single value would be a huge broadcast allocation:
  // it fails cleanly instead of exhausting memory.
  auto huge = Proto(DType::kFloat, {int64_t{1} << 36});
  huge.add_float_val(1);
  EXPECT_EQ(TensorFromProto(huge).status().code(), Code::kResourceExhausted);
}

TEST(Cast, FloatIntBoolHalf) {
  Tensor f = testing::MakeFloat(Shape{4}, {1.7f, -2.2f, 0.0f, 3.0f});
  EXPECT_EQ(testing::Values(*CastTensor(f, DType::kInt32)), (std::vector<double>{1, -2, 0, 3}));
  EXPECT_EQ(testing::Values(*CastTensor(f, DType::kBool)), (std::vector<double>{1, 1, 0, 1}));
  auto h = CastTensor(f, DType::kHalf);
  EXPECT_NEAR(testing::Values(*h)[0], 1.7, 1e-3);
  auto bf = CastTensor(f, DType::kBFloat16);
  EXPECT_NEAR(testing::Values(*bf)[1], -2.2, 2e-2);
}

TEST(Cast, FloatToIntIsDefinedForNanAndOverflow) {
  // As on x86 (and so in TensorFlow there): the "integer indefinite" for NaN and
  // out-of-range values; narrower types keep the low bits.
  Tensor f = testing::MakeFloat(Shape{5}, {NAN, INFINITY, -3e9f, 2.9f, 300.0f});
  constexpr double kMin32 = -2147483648.0;
  EXPECT_EQ(testing::Values(*CastTensor(f, DType::kInt32)), (std::vector<double>{kMin32, kMin32, kMin32, 2, 300}));
  EXPECT_EQ(testing::Values(*CastTensor(f, DType::kInt64))[3], 2);
  EXPECT_EQ(testing::Values(*CastTensor(f, DType::kUInt8))[4], 44);
}

TEST(Npy, RoundTripEveryType) {
  std::string dir = testing::TempDir();
  for (DType d :
       {DType::kFloat, DType::kDouble, DType::kInt32, DType::kInt64, DType::kBool, DType::kUInt8, DType::kInt8, DType::kInt16}) {
    Tensor t = testing::MakeTensor(d, Shape{2, 3}, {1, 0, 1, 1, 0, 1});
    std::string path = dir + "/" + DTypeName(d) + ".npy";
    ASSERT_TRUE(WriteNpy(path, t).ok());
    auto back = ReadNpy(path);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->dtype(), d);
    EXPECT_EQ(back->shape(), (Shape{2, 3}));
    EXPECT_EQ(testing::Values(*back), testing::Values(t));
  }
}

TEST(Npy, HalfAndBFloat16AreWrittenAsFloat32AndScalarsWork) {
  std::string dir = testing::TempDir();
  ASSERT_TRUE(WriteNpy(dir + "/b.npy", testing::MakeTensor(DType::kBFloat16, Shape{2}, {1.5, -3})).ok());
  auto back = ReadNpy(dir + "/b.npy");
  EXPECT_EQ(back->dtype(), DType::kFloat);
  EXPECT_EQ(testing::Values(*back), (std::vector<double>{1.5, -3}));
  ASSERT_TRUE(WriteNpy(dir + "/h.npy", testing::MakeTensor(DType::kHalf, Shape{2}, {0.5, 2})).ok());
  EXPECT_EQ(ReadNpy(dir + "/h.npy")->dtype(), DType::kFloat);
  ASSERT_TRUE(WriteNpy(dir + "/s.npy", testing::MakeFloat(Shape{}, {7})).ok());
  EXPECT_EQ(ReadNpy(dir + "/s.npy")->shape(), Shape{});
  ASSERT_TRUE(WriteNpy(dir + "/v.npy", testing::MakeFloat(Shape{1}, {7})).ok());
  EXPECT_EQ(ReadNpy(dir + "/v.npy")->shape(), Shape{1});
}

std::string NpyBytes(int major, const std::string& header_dict, const std::string& data) {
  std::string h = header_dict;
  size_t prefix = major == 1 ? 10 : 12;
  h.append((64 - (prefix + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  if (major == 1) {
    out += static_cast<char>(h.size() & 0xff);
    out += static_cast<char>(h.size() >> 8);
  } else {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  }
  return out + h + data;
}

TEST(Npy, Versions2And3AreRead) {
  float v[2] = {1.25f, -4};
  std::string data(reinterpret_cast<const char*>(v), 8);
  for (int major : {2, 3}) {
    auto t = ParseNpy(NpyBytes(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data), "x");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(testing::Values(*t), (std::vector<double>{1.25, -4}));
  }
}

TEST(Npy, MalformedFilesAreRejected) {
  std::string data(8, '\0');
  auto expect_bad = [](const std::string& bytes, const std::string& fragment) {
    auto t = ParseNpy(bytes, "f.npy");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
    EXPECT_NE(t.status().message().find(fragment), std::string::npos) << t.status().message();
  };
  expect_bad("not numpy", "magic");
  expect_bad(NpyBytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data), "unsupported dtype");
  expect_bad(NpyBytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", data), "Fortran");
  expect_bad(NpyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", data), "expected 12 bytes");
  expect_bad(NpyBytes(1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", data), "unsupported dtype");
  expect_bad(NpyBytes(1, "{'descr': '<f4', 'shape': (2,), }", data), "lacks");
  expect_bad(NpyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (9999999999999999999,), }", data), "bad shape");
  expect_bad(NpyBytes(9, "{}", data), "version");
  // Found by npy_fuzzer: an empty shape value (std::out_of_range from substr), a bare descr.
  expect_bad(NpyBytes(1, "{'descr': '|b1', 'fortran_order': False, 'shape':,() 2, }", data), "is not a tuple");
  expect_bad(NpyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': 2, }", data), "is not a tuple");
  std::string truncated = NpyBytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data);
  expect_bad(truncated.substr(0, 20), "truncated");
  EXPECT_EQ(ReadNpy("/nonexistent/x.npy").status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace graphjit
