// A PTX module decoded for execution: kernels as arrays of instructions whose operands
// are all slots of a warp's register file (registers, special registers, immediates and
// symbol addresses alike), so the executor never looks at text.
#ifndef GRAPHJIT_CUDA_EMULATOR_PTX_H_
#define GRAPHJIT_CUDA_EMULATOR_PTX_H_

#include <cstdint>
#include <string>
#include <vector>

namespace cuemu {

enum class Type : uint8_t {
  kNone,
  kPred,
  kB8,
  kB16,
  kB32,
  kB64,
  kU8,
  kU16,
  kU32,
  kU64,
  kS8,
  kS16,
  kS32,
  kS64,
  kF16,
  kF16x2,
  kBF16,
  kBF16x2,
  kF32,
  kF64,
};
constexpr int Bytes(Type t) {
  switch (t) {
    case Type::kNone: return 0;
    case Type::kPred:
    case Type::kB8:
    case Type::kU8:
    case Type::kS8: return 1;
    case Type::kB16:
    case Type::kU16:
    case Type::kS16:
    case Type::kF16:
    case Type::kBF16: return 2;
    case Type::kB32:
    case Type::kU32:
    case Type::kS32:
    case Type::kF32:
    case Type::kF16x2:
    case Type::kBF16x2: return 4;
    case Type::kB64:
    case Type::kU64:
    case Type::kS64:
    case Type::kF64: return 8;
  }
  return 0;
}
constexpr bool IsFloat(Type t) {
  return t == Type::kF16 || t == Type::kF16x2 || t == Type::kBF16 || t == Type::kBF16x2 || t == Type::kF32 || t == Type::kF64;
}
constexpr bool IsSigned(Type t) { return t == Type::kS8 || t == Type::kS16 || t == Type::kS32 || t == Type::kS64; }
const char* TypeName(Type t);

enum class Space : uint8_t { kGeneric, kGlobal, kShared, kLocal, kParam, kConst };

enum class Op : uint8_t {
  kNop,
  kMov,
  kAdd,
  kSub,
  kMul,
  kMad,
  kFma,
  kDiv,
  kRem,
  kAbs,
  kNeg,
  kMin,
  kMax,
  kAnd,
  kOr,
  kXor,
  kNot,
  kCnot,
  kShl,
  kShr,
  kShf,
  kSetp,
  kSelp,
  kCvt,
  kCvta,
  kLd,
  kSt,
  kAtom,
  kRed,
  kShfl,
  kVote,
  kRedux,
  kBar,
  kBarWarp,
  kBra,
  kRet,
  kExit,
  kEx2,
  kLg2,
  kRcp,
  kSqrt,
  kRsqrt,
  kSin,
  kCos,
  kTanh,
  kPopc,
  kClz,
  kBrev,
  kBfe,
  kBfi,
  kPrmt,
  kCopysign,
  kTestp,
  kActivemask,
  kPack,
  kUnpack,
  kClock,
  kTrap,
  kBfind,
  kLop3,
  kSad,
  kMatch,
  kBarCluster,
  kMapa,
};

// Modifiers, as bits of Instr::flags.
enum : uint32_t {
  kFtz = 1 << 0,
  kSat = 1 << 1,
  kApprox = 1 << 2,
  kHi = 1 << 3,
  kLo = 1 << 4,
  kWide = 1 << 5,
  kNaN = 1 << 6,
  kCc = 1 << 7,
  kShfLeft = 1 << 8,
  kShfWrap = 1 << 9,
  kTo = 1 << 10,        // cvta.to: from generic to the state space
  kNegated0 = 1 << 11,  // source i (0..2) is a negated predicate (!%p): kNegated0 << i
  kShiftAmt = 1 << 14,  // bfind.shiftamt
  kMatchAll = 1 << 15,  // match.all (else match.any)
  kCarryIn = 1 << 16,   // addc, subc, madc: CC.CF added (a borrow for subc)
};
enum class Cmp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kLo, kLs, kHi, kHs, kEqu, kNeu, kLtu, kLeu, kGtu, kGeu, kNum, kNan };
enum class BoolOp : uint8_t { kNone, kAnd, kOr, kXor };
enum class Round : uint8_t { kDefault, kRn, kRz, kRm, kRp, kRni, kRzi, kRmi, kRpi };
enum class ShflMode : uint8_t { kUp, kDown, kBfly, kIdx };
enum class VoteMode : uint8_t { kAll, kAny, kUni, kBallot };
enum class AtomOp : uint8_t { kAdd, kMin, kMax, kAnd, kOr, kXor, kExch, kCas, kInc, kDec };
enum class BarClusterMode : uint8_t { kArrive, kWait };
enum class TestpMode : uint8_t { kFinite, kInfinite, kNumber, kNotANumber, kNormal, kSubnormal };

struct Instr {
  Op op = Op::kNop;
  Type type = Type::kNone;   // the instruction's type (the destination's for cvt)
  Type type2 = Type::kNone;  // cvt: the source's type
  Space space = Space::kGeneric;
  uint8_t mode = 0;  // Cmp, ShflMode, VoteMode, AtomOp, TestpMode or Round
  BoolOp bool_op = BoolOp::kNone;
  uint8_t vec = 1;  // ld/st: elements per access
  uint8_t ndst = 0, nsrc = 0;
  uint32_t flags = 0;  // kCc: writes CC.CF, the carry (or borrow) out
  int32_t guard = -1;  // predicate slot, -1 when unguarded
  bool guard_negated = false;
  int32_t dst[4] = {-1, -1, -1, -1};
  int32_t dst2 = -1;                      // the second destination of `a|p` (shfl, setp)
  int32_t src[5] = {-1, -1, -1, -1, -1};  // st.v4: the address and four values
  int64_t offset = 0;                     // ld/st/atom: added to the address in src[0]
  int32_t target = -1;                    // bra: the index of the target instruction
  int32_t line = 0;                       // in the PTX text, for messages
};

// A symbol whose address an instruction takes: fixed up when the module is loaded.
struct GlobalVar {
  std::string name;
  Space space = Space::kGlobal;  // kGlobal or kConst
  uint64_t size = 0;
  int align = 1;
  std::vector<uint8_t> init;  // empty: uninitialized
};

struct Param {
  std::string name;
  int size = 0;
  int align = 0;
  int offset = 0;  // in the parameter buffer, at the natural alignment
};

// A slot holding a value that is the same for every thread.
struct Constant {
  int32_t slot = 0;
  uint64_t value = 0;
  int32_t global = -1;  // when >= 0: value is an offset from that global's address
};

// The special registers every warp has, in this order after the kernel's registers.
enum Special : int {
  kTidX,
  kTidY,
  kTidZ,
  kNtidX,
  kNtidY,
  kNtidZ,
  kCtaidX,
  kCtaidY,
  kCtaidZ,
  kNctaidX,
  kNctaidY,
  kNctaidZ,
  kLaneid,
  kWarpid,
  kNwarpid,
  kSmid,
  kNsmid,
  kGridid,
  kLanemaskEq,
  kLanemaskLe,
  kLanemaskLt,
  kLanemaskGe,
  kLanemaskGt,
  kDynamicSmemSize,
  kTotalSmemSize,
  // Thread-block clusters (sm_90): the block's rank in its cluster and the cluster's size,
  // the block's index in its cluster, the cluster's dims, its index in the grid, the grid's
  // dims in clusters.
  kClusterCtarank,
  kClusterNctarank,
  kClusterCtaidX,
  kClusterCtaidY,
  kClusterCtaidZ,
  kClusterNctaidX,
  kClusterNctaidY,
  kClusterNctaidZ,
  kClusteridX,
  kClusteridY,
  kClusteridZ,
  kNclusteridX,
  kNclusteridY,
  kNclusteridZ,
  kNumSpecials,
};

struct Kernel {
  std::string name;
  std::vector<Param> params;
  int param_bytes = 0;
  std::vector<Instr> code;
  int num_registers = 0;  // slots [0, num_registers)
  int special_base = 0;   // slots [special_base, special_base + kNumSpecials)
  int num_slots = 0;      // registers, specials, then constants
  std::vector<Constant> constants;
  int static_shared_bytes = 0;    // the shared variables this kernel uses, laid out
  int dynamic_shared_offset = 0;  // where extern .shared starts
  int local_bytes = 0;            // .local variables, per thread
  int reqntid[3] = {0, 0, 0};
  int maxntid[3] = {0, 0, 0};
};

struct Module {
  int ptx_major = 0, ptx_minor = 0;
  std::string target;  // sm_80, sm_90, ...
  std::vector<Kernel> kernels;
  std::vector<GlobalVar> globals;
};

// Parses and decodes PTX text. On failure returns false with "line N: what" in *error;
// an instruction or modifier the emulator does not implement is such a failure, naming it.
bool ParsePtx(const std::string& text, Module* module, std::string* error);

}  // namespace cuemu

#endif  // GRAPHJIT_CUDA_EMULATOR_PTX_H_
