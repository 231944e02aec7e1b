// The one typed layer through which jit/ writes MLIR (internal to jit/). Every value has a
// type known to C++ (Type), every op is made by a function that checks its operands' types
// as it is written, and op names and literals are printed here only. A mismatch does not
// reach MLIR's parser: the builder keeps the first error, naming the emitter that wrote it,
// the op and the TensorFlow node being emitted, and the emitter returns it as its Status
// (in every build type). Ops written while a node is being emitted carry its name as their
// location (loc("node")), so a diagnostic of the backends names the node, and the dumps
// show it.
//
// Code is kept per open scope (the function's entry, loop and branch bodies), as a list of
// ops; an op is written where it is asked for, in the innermost open scope. Moving what
// does not change along a loop out of it is MLIR's work in the backends (loop-invariant
// code motion, then CSE: backends/kernel_cleanup.h). A value knows the scope its op is
// written in (`scope`), and its level (`level`): the innermost scope whose values it reads
// (at least the floor: a branch's body keeps what it reads), so an emitter can tell what
// does not change along a loop (a divisor to take the reciprocal of once, a row to cache).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ir/status.h"

namespace graphjit::emitter {

// A type of the kernels' IR: a scalar, a memref (static dims, or one dynamic dim; in global
// or workgroup memory) or an LLVM pointer (in an address space).
class Type {
 public:
  enum class Kind : uint8_t { kNone, kI1, kI8, kI16, kI32, kI64, kIndex, kF16, kBF16, kF32, kMemRef, kPtr };
  Type() = default;
  static Type I1() { return Type(Kind::kI1); }
  static Type I8() { return Type(Kind::kI8); }
  static Type I32() { return Type(Kind::kI32); }
  static Type I64() { return Type(Kind::kI64); }
  static Type Index() { return Type(Kind::kIndex); }
  static Type F16() { return Type(Kind::kF16); }
  static Type BF16() { return Type(Kind::kBF16); }
  static Type F32() { return Type(Kind::kF32); }
  // dims: -1 is a dynamic dim.
  static Type MemRef(std::vector<int64_t> dims, Type element, bool workgroup = false);
  static Type Ptr(int address_space = 0);

  Kind kind() const { return kind_; }
  bool IsFloat() const { return kind_ == Kind::kF16 || kind_ == Kind::kBF16 || kind_ == Kind::kF32; }
  // i1 ... i64 (not index).
  bool IsInteger() const { return kind_ >= Kind::kI1 && kind_ <= Kind::kI64; }
  bool IsScalar() const { return IsFloat() || IsInteger() || kind_ == Kind::kIndex; }
  bool IsMemRef() const { return kind_ == Kind::kMemRef; }
  bool InWorkgroupMemory() const { return kind_ == Kind::kMemRef && space_ == 3; }
  // The bits of a scalar (index: 64).
  int bits() const;
  // A memref's element type and dims.
  Type element() const { return Type(element_); }
  const std::vector<int64_t>& dims() const { return dims_; }
  std::string str() const;
  bool operator==(const Type&) const = default;
  explicit operator bool() const { return kind_ != Kind::kNone; }

 private:
  explicit Type(Kind kind) : kind_(kind) {}
  Kind kind_ = Kind::kNone;
  Kind element_ = Kind::kNone;
  std::vector<int64_t> dims_;
  int space_ = 0;  // memref: 3 is workgroup memory; pointer: its address space
};

// A value of the IR: its SSA name, its type, its level (the innermost scope whose values
// it reads) and the scope its op is written in (a closed scope's values are gone).
struct Value {
  std::string name;
  Type type;
  int level = 0;
  int scope = 0;
};
using Index = std::vector<Value>;
int LevelOf(const Index& index);

// The ops whose operands and result share one type.
enum class Op : uint8_t {
  // Floats.
  kAddF,
  kSubF,
  kMulF,
  kDivF,
  kRemF,
  kNegF,
  kMaximumF,
  kMinimumF,
  kFma,
  kPowF,
  kCopySign,
  kAbsF,
  kExp,
  kLog,
  kLog1p,
  kTanh,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kAtan2,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kExpm1,
  kSqrt,
  kFloor,
  kCeil,
  kRoundEven,
  // Integers or indices.
  kAddI,
  kSubI,
  kMulI,
  kDivSI,
  kDivUI,
  kRemUI,
  kMaxSI,
  kMinSI,
  kMaxUI,
  kMinUI,
  kAbsI,
  // Bits: integers of any width, i1 included.
  kAndI,
  kOrI,
  kXOrI,
};
// The comparisons: ordered/unordered ones of floats, signed/unsigned ones of integers.
enum class Pred : uint8_t {
  kOeq,
  kOgt,
  kOge,
  kOlt,
  kOle,
  kUne,
  kUno,
  kEq,
  kNe,
  kSlt,
  kSle,
  kSgt,
  kSge,
  kUlt,
  kUle,
  kUgt,
  kUge,
};
enum class Cast : uint8_t { kExtF, kTruncF, kExtUI, kExtSI, kTruncI, kSIToFP, kUIToFP, kFPToSI, kBitcast, kIndexCast };
// Fast-math flags of a float op.
enum Fastmath : unsigned { kExact = 0, kReassoc = 1, kNnan = 2, kNsz = 4, kAfn = 8 };

// The literal of `v` in float type `t`, exact for every value: its bits (0x3F800000 : f32),
// Inf, NaN and subnormals included.
std::string FloatLiteral(double v, Type t);

// An op's line of text and its location (a TensorFlow node's name; empty: none); a
// region op is several lines. A block is a scope's code.
struct Line {
  std::string text;
  std::string location;
};
using Block = std::vector<Line>;

// A function's parameter and what LLVM may assume of the memory it points to.
struct FunctionParam {
  Value value;
  bool noalias = false;
  int64_t dereferenceable = 0;  // bytes; 0: not said
  int64_t align = 0;            // bytes; 0: not said
};

class Builder {
 public:
  // A level computed from what the op reads.
  static constexpr int kAuto = -1;

  explicit Builder(std::string emitter) : emitter_(std::move(emitter)) {}
  // Ok, or the first type error: "<emitter>: <op>: <what> (node 'N')".
  const Status& status() const { return status_; }
  void set_emitter(std::string emitter) { emitter_ = std::move(emitter); }

  // --- The function being written.
  // A new function: no code, constants or parameters (its status is kept).
  void StartFunction();
  int Innermost() const { return static_cast<int>(code_.size()) - 1; }
  int floor() const { return floor_; }
  void set_floor(int floor) { floor_ = floor; }
  void OpenScope() { code_.emplace_back(); }
  // The innermost scope's code, closed.
  Block CloseScope();
  // The function, its body the entry scope's code (once its scopes are closed): on the
  // CPU a func.func; on a GPU a kernel gpu.func of at most `block` threads, with the
  // workgroup arrays (16-byte aligned: LLVM reads them with 16-byte loads, ld.shared.v4).
  // Without `locations`, the function's canonical form: two functions of the same ops over
  // parameters of the same types print the same.
  std::string Function(const std::string& name, const std::vector<FunctionParam>& params, bool locations = true) const;
  std::string GpuKernel(const std::string& name, const std::vector<FunctionParam>& params, int64_t block) const;
  // GPU kernels' functions as one gpu.module (one PTX module) in a module.
  static std::string GpuModule(const std::string& kernels);

  // Ops written while the returned object lives carry `node`'s name as their location.
  class Located {
   public:
    Located(Builder* b, std::string node) : b_(b), saved_(std::move(b->location_)) { b_->location_ = std::move(node); }
    ~Located() { b_->location_ = std::move(saved_); }
    Located(const Located&) = delete;
    Located& operator=(const Located&) = delete;

   private:
    Builder* b_;
    std::string saved_;
  };
  [[nodiscard]] Located At(std::string node) { return Located(this, std::move(node)); }

  // --- Values made by the function's construct: its parameters (%b3), a loop's induction
  // variable and carried values (in the innermost scope).
  Value Parameter(const std::string& name, Type t);
  Value InductionVar(const std::string& name = "");
  Value CarriedArg(Type t);

  // --- Constants, in the entry scope, each written once.
  Value Float(double v, Type t = Type::F32());
  Value Int(int64_t v, Type t);
  Value IndexConst(int64_t v) { return Int(v, Type::Index()); }
  Value Bool(bool v);

  // --- Scalar ops.
  Value Apply(Op op, const std::vector<Value>& x, unsigned fastmath = kExact);
  Value Cmp(Pred pred, const Value& a, const Value& b);
  Value Select(const Value& cond, const Value& a, const Value& b);
  Value Convert(Cast cast, const Value& x, Type to);

  // --- Memory. A load of level `level` (kAuto: its subscript's); where a load slot is
  // open in the innermost scope, a load of the slot's level whose subscript is ready there
  // is written at the slot (before the code written since the slot was opened).
  Value Load(const Value& memref, const Index& at, int level = kAuto);
  void Store(const Value& v, const Value& memref, const Index& at);
  void Prefetch(const Value& memref, const Index& at);
  // A stack array, in the entry scope.
  Value Alloca(Type memref, const std::string& name);
  // Loads of the innermost scope's level whose subscript is defined before it or named in
  // `ready` go, from now on, to the end of the code written so far in that scope, until
  // CloseLoadSlot.
  void OpenLoadSlot(std::vector<std::string> ready);
  void CloseLoadSlot() { slot_ = {}; }

  // --- Regions.
  // scf.for iv = lower to upper step step, its carried `args` starting at `inits`, its body
  // `body` (a closed scope) yielding `yields`: the loop's results.
  std::vector<Value> For(const Value& iv, const Value& lower, const Value& upper, const Value& step,
                         const std::vector<Value>& args, const std::vector<Value>& inits, Block body,
                         const std::vector<Value>& yields);
  // scf.if cond, each branch's body and what it yields (none: an if without results or
  // else branch when `otherwise` is empty too); its results of level `level` (kAuto: the
  // innermost scope's).
  std::vector<Value> If(const Value& cond, Block then, const std::vector<Value>& then_yields, Block otherwise,
                        const std::vector<Value>& otherwise_yields, int level = kAuto);

  // --- GPU.
  Value ThreadId();
  Value BlockId();
  // gpu.shuffle xor: `v` of the lane `offset` away (i32 offset and width).
  Value ShuffleXor(const Value& v, const Value& offset, const Value& width);
  void Barrier();
  void ClusterArriveAndWait();
  // A workgroup array (a function attribution): its value.
  Value Workgroup(Type memref);
  const std::vector<Value>& workgroup() const { return workgroup_; }
  // Dynamic shared memory seen as `memref` from byte `offset`.
  Value SharedView(int64_t offset, Type memref, const std::string& name);
  // The generic address of a workgroup array's first element; that address in the block
  // of `rank` (i32) in the cluster (nvvm.mapa); a scalar loaded from an address.
  Value GenericPointer(const Value& memref);
  Value InClusterBlock(const Value& ptr, const Value& rank);
  Value LoadPointer(const Value& ptr, Type t);

 private:
  std::string Fresh(const char* prefix) { return prefix + std::to_string(next_++); }
  // The level of what reads `x` (or `level`), not below the floor.
  int LevelFor(const std::vector<Value>& x, int level = kAuto) const;
  // Writes `rhs` (an op and its operands) in the innermost scope, as a new value of type
  // `t` and level `level`.
  Value Let(int level, const std::string& rhs, Type t);
  void Write(const std::string& op);
  // Records the first error; false if `ok` is false.
  bool Check(bool ok, const char* op, const std::string& what);
  std::string Access(const Value& memref, const Index& at, const char* op);
  static std::string Parameters(const std::vector<FunctionParam>& params);
  static std::string Text(const Block& block, bool locations);

  std::string emitter_;
  Status status_ = Status::Ok();
  std::vector<Block> code_;
  int next_ = 0, floor_ = 0;
  std::string location_;
  std::map<std::tuple<int, int64_t>, Value> constants_;  // (type kind, value or bits) -> value
  std::vector<Value> workgroup_;
  bool dynamic_shared_ = false;
  struct {
    int scope = -1;
    size_t position = 0;
    std::vector<std::string> ready;
  } slot_;
};

}  // namespace graphjit::emitter
