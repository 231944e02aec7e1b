#include "jit/ir_builder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace graphjit::emitter {

namespace {

// Every op's name and the types it takes, in one table.
enum class Domain { kFloat, kInteger, kBits };  // kInteger: integers (not i1) or indices
struct OpInfo {
  const char* name;
  int arity;
  Domain domain;
};

const OpInfo& InfoOf(Op op) {
  static const OpInfo kOps[] = {
      {"arith.addf", 2, Domain::kFloat},     {"arith.subf", 2, Domain::kFloat},     {"arith.mulf", 2, Domain::kFloat},
      {"arith.divf", 2, Domain::kFloat},     {"arith.remf", 2, Domain::kFloat},     {"arith.negf", 1, Domain::kFloat},
      {"arith.maximumf", 2, Domain::kFloat}, {"arith.minimumf", 2, Domain::kFloat}, {"math.fma", 3, Domain::kFloat},
      {"math.powf", 2, Domain::kFloat},      {"math.copysign", 2, Domain::kFloat},  {"math.absf", 1, Domain::kFloat},
      {"math.exp", 1, Domain::kFloat},       {"math.log", 1, Domain::kFloat},       {"math.log1p", 1, Domain::kFloat},
      {"math.tanh", 1, Domain::kFloat},      {"math.sin", 1, Domain::kFloat},       {"math.cos", 1, Domain::kFloat},
      {"math.tan", 1, Domain::kFloat},       {"math.asin", 1, Domain::kFloat},      {"math.acos", 1, Domain::kFloat},
      {"math.atan", 1, Domain::kFloat},      {"math.atan2", 2, Domain::kFloat},     {"math.sinh", 1, Domain::kFloat},
      {"math.cosh", 1, Domain::kFloat},      {"math.asinh", 1, Domain::kFloat},     {"math.acosh", 1, Domain::kFloat},
      {"math.atanh", 1, Domain::kFloat},     {"math.expm1", 1, Domain::kFloat},     {"math.sqrt", 1, Domain::kFloat},
      {"math.floor", 1, Domain::kFloat},     {"math.ceil", 1, Domain::kFloat},      {"math.roundeven", 1, Domain::kFloat},
      {"arith.addi", 2, Domain::kInteger},   {"arith.subi", 2, Domain::kInteger},   {"arith.muli", 2, Domain::kInteger},
      {"arith.divsi", 2, Domain::kInteger},  {"arith.divui", 2, Domain::kInteger},  {"arith.remui", 2, Domain::kInteger},
      {"arith.maxsi", 2, Domain::kInteger},  {"arith.minsi", 2, Domain::kInteger},  {"arith.maxui", 2, Domain::kInteger},
      {"arith.minui", 2, Domain::kInteger},  {"math.absi", 1, Domain::kInteger},    {"arith.andi", 2, Domain::kBits},
      {"arith.ori", 2, Domain::kBits},       {"arith.xori", 2, Domain::kBits},
  };
  static_assert(sizeof kOps / sizeof kOps[0] == static_cast<size_t>(Op::kXOrI) + 1);
  return kOps[static_cast<size_t>(op)];
}

struct PredInfo {
  const char* name;
  bool of_floats;
};
const PredInfo& InfoOf(Pred pred) {
  static const PredInfo kPreds[] = {
      {"oeq", true},  {"ogt", true},  {"oge", true},  {"olt", true},  {"ole", true},  {"une", true},
      {"uno", true},  {"eq", false},  {"ne", false},  {"slt", false}, {"sle", false}, {"sgt", false},
      {"sge", false}, {"ult", false}, {"ule", false}, {"ugt", false}, {"uge", false},
  };
  static_assert(sizeof kPreds / sizeof kPreds[0] == static_cast<size_t>(Pred::kUge) + 1);
  return kPreds[static_cast<size_t>(pred)];
}

const char* NameOf(Cast cast) {
  static const char* const kCasts[] = {"arith.extf",   "arith.truncf", "arith.extui",  "arith.extsi",   "arith.trunci",
                                       "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.bitcast", "arith.index_cast"};
  static_assert(sizeof kCasts / sizeof kCasts[0] == static_cast<size_t>(Cast::kIndexCast) + 1);
  return kCasts[static_cast<size_t>(cast)];
}

// Whether `cast` takes `from` to `to`.
bool Casts(Cast cast, Type from, Type to) {
  const bool ints = from.IsInteger() && to.IsInteger();
  const bool floats = from.IsFloat() && to.IsFloat();
  switch (cast) {
    case Cast::kExtF: return floats && to.bits() > from.bits();
    case Cast::kTruncF: return floats && to.bits() < from.bits();
    case Cast::kExtUI:
    case Cast::kExtSI: return ints && to.bits() > from.bits();
    case Cast::kTruncI: return ints && to.bits() < from.bits();
    case Cast::kSIToFP:
    case Cast::kUIToFP: return from.IsInteger() && to.IsFloat();
    case Cast::kFPToSI: return from.IsFloat() && to.IsInteger();
    case Cast::kBitcast: return from.IsScalar() && to.IsScalar() && from.bits() == to.bits() && !(from == to);
    case Cast::kIndexCast:
      return (from.kind() == Type::Kind::kIndex && to.IsInteger()) || (from.IsInteger() && to.kind() == Type::Kind::kIndex);
  }
  return false;
}

std::string Names(const std::vector<Value>& values) {
  std::string s;
  for (const Value& v : values) s += (s.empty() ? "" : ", ") + v.name;
  return s;
}

std::string Types(const std::vector<Value>& values) {
  std::string s;
  for (const Value& v : values) s += (s.empty() ? "" : ", ") + v.type.str();
  return s;
}

bool SameTypes(const std::vector<Value>& a, const std::vector<Value>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i].type == b[i].type)) return false;
  return true;
}

std::string FastmathText(unsigned flags) {
  std::string s;
  auto add = [&](unsigned flag, const char* name) {
    if (flags & flag) s += (s.empty() ? "" : ",") + std::string(name);
  };
  add(kReassoc, "reassoc");
  add(kNnan, "nnan");
  add(kNsz, "nsz");
  add(kAfn, "afn");
  return s.empty() ? "" : " fastmath<" + s + ">";
}

}  // namespace

Type Type::MemRef(std::vector<int64_t> dims, Type element, bool workgroup) {
  Type t(Kind::kMemRef);
  t.element_ = element.kind_;
  t.dims_ = std::move(dims);
  t.space_ = workgroup ? 3 : 0;
  return t;
}

Type Type::Ptr(int address_space) {
  Type t(Kind::kPtr);
  t.space_ = address_space;
  return t;
}

int Type::bits() const {
  switch (kind_) {
    case Kind::kI1: return 1;
    case Kind::kI8: return 8;
    case Kind::kI16:
    case Kind::kF16:
    case Kind::kBF16: return 16;
    case Kind::kI32:
    case Kind::kF32: return 32;
    case Kind::kI64:
    case Kind::kIndex: return 64;
    default: return 0;
  }
}

std::string Type::str() const {
  switch (kind_) {
    case Kind::kNone: return "<no type>";
    case Kind::kI1: return "i1";
    case Kind::kI8: return "i8";
    case Kind::kI16: return "i16";
    case Kind::kI32: return "i32";
    case Kind::kI64: return "i64";
    case Kind::kIndex: return "index";
    case Kind::kF16: return "f16";
    case Kind::kBF16: return "bf16";
    case Kind::kF32: return "f32";
    case Kind::kPtr: return space_ ? "!llvm.ptr<" + std::to_string(space_) + ">" : "!llvm.ptr";
    case Kind::kMemRef: {
      std::string s = "memref<";
      for (int64_t d : dims_) s += (d < 0 ? "?" : std::to_string(d)) + "x";
      s += element().str();
      return s + (space_ == 3 ? ", #gpu.address_space<workgroup>>" : ">");
    }
  }
  return "";
}

int LevelOf(const Index& index) {
  int level = 0;
  for (const Value& v : index) level = std::max(level, v.level);
  return level;
}

std::string FloatLiteral(double v, Type t) {
  char buf[32];
  if (t.kind() == Type::Kind::kF32) {
    const float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    std::snprintf(buf, sizeof buf, "0x%08X", bits);
    return buf;
  }
  return "<no literal of " + t.str() + ">";
}

// --- The function and its scopes.
void Builder::StartFunction() {
  code_ = {{}};
  floor_ = 0;
  constants_.clear();
  workgroup_.clear();
  dynamic_shared_ = false;
  slot_ = {};
  IndexConst(0);
  IndexConst(1);
}

Block Builder::CloseScope() {
  Block body = std::move(code_.back());
  code_.pop_back();
  return body;
}

std::string Builder::Text(const Block& block, bool locations) {
  std::string text;
  for (const Line& line : block) {
    text += line.text;
    if (locations && !line.location.empty()) {
      text += " loc(\"";
      for (unsigned char c : line.location) {  // MLIR's string escapes: \" \\ and \XX for other bytes
        if (c == '"' || c == '\\') {
          text += '\\';
          text += static_cast<char>(c);
        } else if (c < 0x20 || c >= 0x7f) {
          char hex[4];
          std::snprintf(hex, sizeof hex, "\\%02X", c);
          text += hex;
        } else {
          text += static_cast<char>(c);
        }
      }
      text += "\")";
    }
    text += "\n";
  }
  return text;
}

std::string Builder::Parameters(const std::vector<FunctionParam>& params) {
  std::string text;
  for (const FunctionParam& p : params) {
    std::string facts;
    auto add = [&](const std::string& fact) { facts += (facts.empty() ? "" : ", ") + fact; };
    if (p.noalias) add("llvm.noalias");
    if (p.dereferenceable > 0) add("llvm.dereferenceable = " + std::to_string(p.dereferenceable) + " : i64");
    if (p.align > 0) add("llvm.align = " + std::to_string(p.align) + " : i64");
    text += (text.empty() ? "" : ", ") + p.value.name + ": " + p.value.type.str() + (facts.empty() ? "" : " {" + facts + "}");
  }
  return text;
}

std::string Builder::Function(const std::string& name, const std::vector<FunctionParam>& params, bool locations) const {
  return "func.func @" + name + "(" + Parameters(params) + ") {\n" + Text(code_.front(), locations) + "return\n}\n";
}

std::string Builder::GpuKernel(const std::string& name, const std::vector<FunctionParam>& params, int64_t block) const {
  std::string workgroup;
  for (const Value& w : workgroup_)
    workgroup += (workgroup.empty() ? "" : ", ") + w.name + " : " + w.type.str() + " {llvm.align = 16 : i64}";
  if (!workgroup.empty()) workgroup = " workgroup(" + workgroup + ")";
  return "gpu.func @" + name + "(" + Parameters(params) + ")" + workgroup +
         " kernel attributes {gpu.known_block_size = array<i32: " + std::to_string(std::max<int64_t>(block, 1)) + ", 1, 1>} {\n" +
         Text(code_.front(), /*locations=*/true) + "gpu.return\n}\n";
}

bool Builder::Check(bool ok, const char* op, const std::string& what) {
  if (!ok && status_.ok())
    status_ = Internal(emitter_ + ": " + op + ": " + what + (location_.empty() ? "" : " (node '" + location_ + "')"));
  return ok;
}

int Builder::LevelFor(const std::vector<Value>& x, int level) const {
  if (level != kAuto) return std::max(level, floor_);
  int d = floor_;
  for (const Value& v : x) d = std::max(d, v.level);
  return d;
}

void Builder::Write(const std::string& op) { code_.back().push_back({op, location_}); }

Value Builder::Let(int level, const std::string& rhs, Type t) {
  Value v{Fresh("%v"), t, level, Innermost()};
  Write(v.name + " = " + rhs);
  return v;
}

Value Builder::Parameter(const std::string& name, Type t) { return {name, t, 0, 0}; }
Value Builder::InductionVar(const std::string& name) {
  return {name.empty() ? Fresh("%x") : name, Type::Index(), Innermost(), Innermost()};
}
Value Builder::CarriedArg(Type t) { return {Fresh("%a"), t, Innermost(), Innermost()}; }

std::string Builder::GpuModule(const std::string& kernels) {
  return "module attributes {gpu.container_module} {\ngpu.module @kernels {\n" + kernels + "}\n}\n";
}

// --- Constants.
Value Builder::Float(double v, Type t) {
  Check(t.kind() == Type::Kind::kF32, "arith.constant", "a float constant of " + t.str());
  const float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  auto [it, added] = constants_.try_emplace({static_cast<int>(t.kind()), bits});
  if (added) {
    it->second = {Fresh("%f"), t, 0, 0};
    code_[0].push_back({it->second.name + " = arith.constant " + FloatLiteral(v, t) + " : " + t.str()});
  }
  return it->second;
}

Value Builder::Int(int64_t v, Type t) {
  Check(t.IsInteger() || t.kind() == Type::Kind::kIndex, "arith.constant", "an integer constant of " + t.str());
  auto [it, added] = constants_.try_emplace({static_cast<int>(t.kind()), v});
  if (added) {
    const bool index = t.kind() == Type::Kind::kIndex;
    it->second = {index ? "%i" + std::to_string(v) : Fresh("%c"), t, 0, 0};
    const std::string literal = t.kind() == Type::Kind::kI1 ? (v ? "true" : "false") : std::to_string(v);
    code_[0].push_back({it->second.name + " = arith.constant " + literal + (t.kind() == Type::Kind::kI1 ? "" : " : " + t.str())});
  }
  return it->second;
}

Value Builder::Bool(bool v) { return Int(v ? 1 : 0, Type::I1()); }

// --- Scalar ops.
Value Builder::Apply(Op op, const std::vector<Value>& x, unsigned fastmath) {
  const OpInfo& info = InfoOf(op);
  const Type t = x.empty() ? Type() : x[0].type;
  bool ok = static_cast<int>(x.size()) == info.arity;
  for (const Value& v : x) ok = ok && v.type == t;
  Check(ok, info.name, "operands of types " + Types(x));
  switch (info.domain) {
    case Domain::kFloat: Check(t.IsFloat(), info.name, "an op on floats of " + t.str()); break;
    case Domain::kInteger:
      Check((t.IsInteger() && t.kind() != Type::Kind::kI1) || t.kind() == Type::Kind::kIndex, info.name,
            "an op on integers of " + t.str());
      break;
    case Domain::kBits: Check(t.IsInteger(), info.name, "a bitwise op of " + t.str()); break;
  }
  Check(fastmath == kExact || info.domain == Domain::kFloat, info.name, "fast-math flags on integers");
  return Let(LevelFor(x), std::string(info.name) + " " + Names(x) + FastmathText(fastmath) + " : " + t.str(), t);
}

Value Builder::Cmp(Pred pred, const Value& a, const Value& b) {
  const PredInfo& info = InfoOf(pred);
  const char* op = info.of_floats ? "arith.cmpf" : "arith.cmpi";
  Check(a.type == b.type, op, "operands of types " + a.type.str() + " and " + b.type.str());
  Check(info.of_floats ? a.type.IsFloat() : (a.type.IsInteger() || a.type.kind() == Type::Kind::kIndex), op,
        std::string("predicate ") + info.name + " on " + a.type.str());
  return Let(LevelFor({a, b}), std::string(op) + " " + info.name + ", " + a.name + ", " + b.name + " : " + a.type.str(),
             Type::I1());
}

Value Builder::Select(const Value& cond, const Value& a, const Value& b) {
  Check(cond.type == Type::I1(), "arith.select", "a condition of type " + cond.type.str());
  Check(a.type == b.type && a.type.IsScalar(), "arith.select", "operands of types " + a.type.str() + " and " + b.type.str());
  return Let(LevelFor({cond, a, b}), "arith.select " + Names({cond, a, b}) + " : " + a.type.str(), a.type);
}

Value Builder::Convert(Cast cast, const Value& x, Type to) {
  Check(Casts(cast, x.type, to), NameOf(cast), "from " + x.type.str() + " to " + to.str());
  return Let(LevelFor({x}), std::string(NameOf(cast)) + " " + x.name + " : " + x.type.str() + " to " + to.str(), to);
}

// --- Memory.
std::string Builder::Access(const Value& memref, const Index& at, const char* op) {
  if (Check(memref.type.IsMemRef(), op, "a memory access of " + memref.type.str())) {
    bool indices = at.size() == memref.type.dims().size();
    for (const Value& i : at) indices = indices && i.type == Type::Index();
    Check(indices, op, memref.type.str() + " at [" + Types(at) + "]");
  }
  return memref.name + "[" + Names(at) + "] : " + memref.type.str();
}

void Builder::OpenLoadSlot(std::vector<std::string> ready) {
  slot_.scope = Innermost();
  slot_.position = code_.back().size();
  slot_.ready = std::move(ready);
}

Value Builder::Load(const Value& memref, const Index& at, int level) {
  std::vector<Value> read = at;
  read.push_back(memref);
  const int d = LevelFor(read, level);
  const std::string rhs = "memref.load " + Access(memref, at, "memref.load");
  const bool early = slot_.scope == Innermost() && d == Innermost() && std::all_of(at.begin(), at.end(), [&](const Value& i) {
                       return i.level < d || std::count(slot_.ready.begin(), slot_.ready.end(), i.name);
                     });
  if (!early) return Let(d, rhs, memref.type.element());
  Value v{Fresh("%v"), memref.type.element(), d, d};
  Block& code = code_.back();
  code.insert(code.begin() + static_cast<std::ptrdiff_t>(slot_.position++), {v.name + " = " + rhs, location_});
  return v;
}

void Builder::Store(const Value& v, const Value& memref, const Index& at) {
  Check(v.type == memref.type.element(), "memref.store", v.type.str() + " into " + memref.type.str());
  Write("memref.store " + v.name + ", " + Access(memref, at, "memref.store"));
}

void Builder::Prefetch(const Value& memref, const Index& at) {
  Access(memref, at, "memref.prefetch");
  Write("memref.prefetch " + memref.name + "[" + Names(at) + "], read, locality<3>, data : " + memref.type.str());
}

Value Builder::Alloca(Type memref, const std::string& name) {
  Check(memref.IsMemRef(), "memref.alloca", "of " + memref.str());
  code_[0].push_back({name + " = memref.alloca() : " + memref.str()});
  return {name, memref, 0, 0};
}

// --- Regions.
std::vector<Value> Builder::For(const Value& iv, const Value& lower, const Value& upper, const Value& step,
                                const std::vector<Value>& args, const std::vector<Value>& inits, Block body,
                                const std::vector<Value>& yields) {
  bool bounds = true;
  for (const Value& v : {iv, lower, upper, step}) bounds = bounds && v.type == Type::Index();
  Check(bounds, "scf.for", "bounds of types " + Types({iv, lower, upper, step}));
  Check(SameTypes(args, inits) && SameTypes(args, yields), "scf.for",
        "carries (" + Types(args) + ") from (" + Types(inits) + ") yielding (" + Types(yields) + ")");
  std::vector<Value> out;
  std::string lhs;
  if (!inits.empty()) {
    const std::string name = Fresh("%v");
    for (size_t i = 0; i < inits.size(); ++i)
      out.push_back({inits.size() == 1 ? name : name + "#" + std::to_string(i), inits[i].type, Innermost(), Innermost()});
    lhs = (inits.size() == 1 ? name : name + ":" + std::to_string(inits.size())) + " = ";
  }
  std::string head = lhs + "scf.for " + iv.name + " = " + lower.name + " to " + upper.name + " step " + step.name;
  if (!inits.empty()) {
    std::string carried;
    for (size_t i = 0; i < inits.size(); ++i) carried += (i ? ", " : "") + args[i].name + " = " + inits[i].name;
    head += " iter_args(" + carried + ") -> (" + Types(inits) + ")";
  }
  Block& code = code_.back();
  code.push_back({head + " {"});
  code.insert(code.end(), std::make_move_iterator(body.begin()), std::make_move_iterator(body.end()));
  if (!inits.empty()) code.push_back({"scf.yield " + Names(yields) + " : " + Types(yields)});
  code.push_back({"}"});
  return out;
}

std::vector<Value> Builder::If(const Value& cond, Block then, const std::vector<Value>& then_yields, Block otherwise,
                               const std::vector<Value>& otherwise_yields, int level) {
  Check(cond.type == Type::I1(), "scf.if", "a condition of type " + cond.type.str());
  Check(SameTypes(then_yields, otherwise_yields), "scf.if",
        "branches yielding (" + Types(then_yields) + ") and (" + Types(otherwise_yields) + ")");
  std::vector<Value> out;
  std::string lhs, results;
  if (!then_yields.empty()) {
    const std::string name = Fresh("%v");
    for (size_t i = 0; i < then_yields.size(); ++i)
      out.push_back({then_yields.size() == 1 ? name : name + "#" + std::to_string(i), then_yields[i].type,
                     level == kAuto ? Innermost() : LevelFor({}, level), Innermost()});
    lhs = (out.size() == 1 ? name : name + ":" + std::to_string(out.size())) + " = ";
    results = " -> (" + Types(then_yields) + ")";
  }
  Block& code = code_.back();
  auto branch = [&](Block& body, const std::vector<Value>& yields) {
    code.insert(code.end(), std::make_move_iterator(body.begin()), std::make_move_iterator(body.end()));
    if (!yields.empty()) code.push_back({"scf.yield " + Names(yields) + " : " + Types(yields)});
  };
  code.push_back({lhs + "scf.if " + cond.name + results + " {"});
  branch(then, then_yields);
  if (!otherwise.empty() || !otherwise_yields.empty()) {
    code.push_back({"} else {"});
    branch(otherwise, otherwise_yields);
  }
  code.push_back({"}"});
  return out;
}

// --- GPU.
Value Builder::ThreadId() { return Let(0, "gpu.thread_id x", Type::Index()); }
Value Builder::BlockId() { return Let(0, "gpu.block_id x", Type::Index()); }

Value Builder::ShuffleXor(const Value& v, const Value& offset, const Value& width) {
  Check(offset.type == Type::I32() && width.type == Type::I32() && v.type.IsScalar() && v.type.bits() == 32, "gpu.shuffle",
        "of " + v.type.str() + " by " + offset.type.str() + " in " + width.type.str());
  const std::string name = Fresh("%v");
  Write(name + ":2 = gpu.shuffle xor " + Names({v, offset, width}) + " : " + v.type.str());
  return {name + "#0", v.type, Innermost(), Innermost()};
}

void Builder::Barrier() { Write("gpu.barrier"); }

void Builder::ClusterArriveAndWait() {
  Write("nvvm.cluster.arrive");
  Write("nvvm.cluster.wait");
}

Value Builder::Workgroup(Type memref) {
  Check(memref.InWorkgroupMemory(), "gpu.func", "a workgroup array of " + memref.str());
  workgroup_.push_back({"%ws" + std::to_string(workgroup_.size()), memref, 0});
  return workgroup_.back();
}

Value Builder::SharedView(int64_t offset, Type memref, const std::string& name) {
  const std::string bytes = Type::MemRef({-1}, Type::I8(), /*workgroup=*/true).str();
  if (!dynamic_shared_) code_[0].push_back({"%dsm = gpu.dynamic_shared_memory : " + bytes});
  dynamic_shared_ = true;
  code_[0].push_back({name + " = memref.view %dsm[" + IndexConst(offset).name + "][] : " + bytes + " to " + memref.str()});
  return {name, memref, 0};
}

Value Builder::GenericPointer(const Value& memref) {
  Check(memref.type.InWorkgroupMemory(), "llvm.addrspacecast", "the address of " + memref.type.str());
  const int level = LevelFor({memref});
  const Value address = Let(
      level, "memref.extract_aligned_pointer_as_index " + memref.name + " : " + memref.type.str() + " -> index", Type::Index());
  const Value integer = Convert(Cast::kIndexCast, address, Type::I64());
  const Value shared = Let(level, "llvm.inttoptr " + integer.name + " : i64 to !llvm.ptr<3>", Type::Ptr(3));
  return Let(level, "llvm.addrspacecast " + shared.name + " : !llvm.ptr<3> to !llvm.ptr", Type::Ptr());
}

Value Builder::InClusterBlock(const Value& ptr, const Value& rank) {
  Check(ptr.type == Type::Ptr() && rank.type == Type::I32(), "nvvm.mapa",
        "of " + ptr.type.str() + " in block " + rank.type.str());
  return Let(LevelFor({ptr, rank}),
             "llvm.call_intrinsic \"llvm.nvvm.mapa\"(" + ptr.name + ", " + rank.name + ") : (!llvm.ptr, i32) -> !llvm.ptr",
             Type::Ptr());
}

Value Builder::LoadPointer(const Value& ptr, Type t) {
  Check(ptr.type == Type::Ptr() && t.IsScalar(), "llvm.load", t.str() + " from " + ptr.type.str());
  return Let(Innermost(), "llvm.load " + ptr.name + " : !llvm.ptr -> " + t.str(), t);
}

}  // namespace graphjit::emitter
