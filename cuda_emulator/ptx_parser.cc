// PTX text -> cuemu::Module: a tokenizer, a statement parser, and a decoder that turns
// each instruction's opcode and operands into an Instr over register-file slots.
#include <bit>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>

#include "cuda_emulator/ptx.h"

namespace cuemu {

namespace {

const std::map<std::string, Type, std::less<>>& TypeNames() {
  static const auto* names = new std::map<std::string, Type, std::less<>>{
      {"pred", Type::kPred}, {"b8", Type::kB8},         {"b16", Type::kB16}, {"b32", Type::kB32}, {"b64", Type::kB64},
      {"u8", Type::kU8},     {"u16", Type::kU16},       {"u32", Type::kU32}, {"u64", Type::kU64}, {"s8", Type::kS8},
      {"s16", Type::kS16},   {"s32", Type::kS32},       {"s64", Type::kS64}, {"f16", Type::kF16}, {"f16x2", Type::kF16x2},
      {"bf16", Type::kBF16}, {"bf16x2", Type::kBF16x2}, {"f32", Type::kF32}, {"f64", Type::kF64}};
  return *names;
}

}  // namespace

const char* TypeName(Type t) {
  for (const auto& [name, type] : TypeNames())
    if (type == t) return name.c_str();
  return "none";
}

namespace {

// ---------------------------------------------------------------------------------------
// Tokens

struct Token {
  enum Kind { kWord, kNumber, kPunct, kString, kEnd } kind = kEnd;
  std::string text;
  int line = 0;
};

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%' || c == '.'; }

bool Tokenize(const std::string& s, std::vector<Token>* out, std::string* error) {
  int line = 1;
  size_t i = 0, n = s.size();
  while (i < n) {
    char c = s[i];
    if (c == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/')) line += s[i++] == '\n';
      i += 2;
      continue;
    }
    Token t;
    t.line = line;
    if (c == '"') {
      size_t j = i + 1;
      while (j < n && s[j] != '"') ++j;
      t.kind = Token::kString;
      t.text = s.substr(i + 1, j - i - 1);
      i = j + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < n && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' ||
                       ((s[j] == '+' || s[j] == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E') && s.compare(i, 2, "0x") != 0 &&
                        s.compare(i, 2, "0f") != 0 && s.compare(i, 2, "0d") != 0)))
        ++j;
      t.kind = Token::kNumber;
      t.text = s.substr(i, j - i);
      i = j;
    } else if (IsWordChar(c)) {
      size_t j = i;
      while (j < n && (IsWordChar(s[j]) || (s[j] == ':' && j + 1 < n && s[j + 1] == ':'))) {
        j += s[j] == ':' ? 2 : 1;
      }
      t.kind = Token::kWord;
      t.text = s.substr(i, j - i);
      i = j;
    } else if (std::strchr(",;:(){}[]<>+-|!@=", c)) {
      t.kind = Token::kPunct;
      t.text = std::string(1, c);
      ++i;
    } else {
      *error = "line " + std::to_string(line) + ": unexpected character '" + std::string(1, c) + "'";
      return false;
    }
    out->push_back(std::move(t));
  }
  Token end;
  end.line = line;
  out->push_back(end);
  return true;
}

// ---------------------------------------------------------------------------------------
// Raw operands, as written

struct RawOperand {
  enum Kind { kName, kInt, kFloat, kAddress, kVector, kPair } kind = kName;
  std::string name;               // kName, kAddress (base), kPair (first)
  std::string name2;              // kPair (second)
  uint64_t bits = 0;              // kInt; kFloat written as 0f/0d bits (float_bits_width 32/64)
  double value = 0;               // kFloat written in decimal
  int float_width = 0;            // 32: 0f..., 64: 0d..., 0: decimal
  int64_t offset = 0;             // kAddress, or a symbol+offset kName
  bool negated = false;           // !%p
  bool base_is_number = false;    // kAddress of an absolute address
  std::vector<RawOperand> elems;  // kVector
};

struct Statement {
  std::string guard;
  bool guard_negated = false;
  std::string opcode;
  std::vector<RawOperand> operands;
  int line = 0;
  int scope = 0;  // the { } block it is in
};

// Nested { } blocks of a function body: registers and labels declared in one shadow
// those outside it. A register declared in a nested block gets a unique name ("%r1#3");
// a label is looked up from the branch's block outward.
struct Scopes {
  std::vector<int> parent{-1};  // block 0: the function body
  std::vector<std::map<std::string, std::string>> renamed{{}};
  std::vector<int> open{0};
  std::map<std::pair<int, std::string>, int> labels;  // (block, name) -> instruction

  int current() const { return open.back(); }
  void Enter() {
    parent.push_back(current());
    renamed.emplace_back();
    open.push_back(static_cast<int>(parent.size()) - 1);
  }
  void Leave() { open.pop_back(); }
  std::string Declare(const std::string& name) {
    if (current() == 0) return name;
    return renamed[current()][name] = name + "#" + std::to_string(current());
  }
  std::string Resolve(const std::string& name) const {
    for (auto it = open.rbegin(); it != open.rend(); ++it) {
      auto found = renamed[*it].find(name);
      if (found != renamed[*it].end()) return found->second;
    }
    return name;
  }
  void Resolve(RawOperand* op) const {
    if (!op->name.empty()) op->name = Resolve(op->name);
    if (!op->name2.empty()) op->name2 = Resolve(op->name2);
    for (RawOperand& e : op->elems) Resolve(&e);
  }
  // The instruction a branch in `block` to `label` goes to, or -1.
  int Label(int block, const std::string& label) const {
    for (int b = block; b >= 0; b = parent[b]) {
      auto it = labels.find({b, label});
      if (it != labels.end()) return it->second;
    }
    return -1;
  }
};

class Parser {
 public:
  Parser(std::vector<Token> tokens, Module* module) : t_(std::move(tokens)), module_(module) {}

  bool Run(std::string* error);

 private:
  const Token& Peek(int k = 0) const { return t_[std::min(pos_ + k, t_.size() - 1)]; }
  const Token& Next() { return t_[std::min(pos_++, t_.size() - 1)]; }
  bool Is(const char* text, int k = 0) const { return Peek(k).text == text && Peek(k).kind != Token::kString; }
  bool Accept(const char* text) {
    if (!Is(text)) return false;
    ++pos_;
    return true;
  }
  bool Fail(const std::string& what) {
    if (error_.empty()) error_ = "line " + std::to_string(Peek().line) + ": " + what;
    return false;
  }
  bool FailAt(int line, const std::string& what) {
    if (error_.empty()) error_ = "line " + std::to_string(line) + ": " + what;
    return false;
  }
  bool Expect(const char* text) {
    if (Accept(text)) return true;
    return Fail(std::string("expected '") + text + "', found '" + Peek().text + "'");
  }
  bool ParseInt(int64_t* v) {
    bool neg = Accept("-");
    if (Peek().kind != Token::kNumber) return Fail("expected a number, found '" + Peek().text + "'");
    const std::string& s = Next().text;
    uint64_t u = std::strtoull(s.c_str(), nullptr, 0);
    *v = neg ? -static_cast<int64_t>(u) : static_cast<int64_t>(u);
    return true;
  }
  void SkipStatement() {
    int depth = 0;
    while (Peek().kind != Token::kEnd) {
      const Token& tok = Next();
      if (tok.text == "{") ++depth;
      if (tok.text == "}" && --depth <= 0) return;
      if (tok.text == ";" && depth == 0) return;
    }
  }

  bool ParseLiteral(Type type, uint64_t* bits);
  bool ParseVariable(bool is_extern, std::string* name, uint64_t* size, int* align, std::vector<uint8_t>* init);
  bool ParseKernel();
  bool ParseOperand(RawOperand* op);
  bool ParseBody(std::vector<Statement>* body, Scopes* scopes, std::vector<std::pair<std::string, Type>>* registers,
                 std::vector<GlobalVar>* locals);

  std::vector<Token> t_;
  size_t pos_ = 0;
  Module* module_;
  std::string error_;
  // Shared variables of the module (name -> size, align; size 0: extern, dynamic).
  struct SharedVar {
    uint64_t size;
    int align;
  };
  std::map<std::string, SharedVar, std::less<>> shared_;
  int extern_shared_align_ = 0;
  friend class Decoder;
};

// A number of an initializer, as the bits of a value of `type`: integers, 0f/0d hex
// floats, decimal floats.
bool Parser::ParseLiteral(Type type, uint64_t* bits) {
  const bool negative = Accept("-");
  if (Peek().kind != Token::kNumber) return Fail("expected a number, found '" + Peek().text + "'");
  const std::string t = Next().text;
  const char kind = t.size() > 2 && t[0] == '0' ? static_cast<char>(std::tolower(t[1])) : 0;
  double value;
  if (kind == 'f' || kind == 'd') {
    uint64_t raw = std::strtoull(t.c_str() + 2, nullptr, 16);
    value = kind == 'f' ? std::bit_cast<float>(static_cast<uint32_t>(raw)) : std::bit_cast<double>(raw);
  } else if (kind != 'x' && t.find_first_of(".eE") != std::string::npos) {
    value = std::strtod(t.c_str(), nullptr);
  } else {
    uint64_t u = std::strtoull(t.c_str(), nullptr, 0);
    *bits = negative ? ~u + 1 : u;
    if (type == Type::kF32) *bits = std::bit_cast<uint32_t>(static_cast<float>(static_cast<int64_t>(*bits)));
    if (type == Type::kF64) *bits = std::bit_cast<uint64_t>(static_cast<double>(static_cast<int64_t>(*bits)));
    return true;
  }
  if (negative) value = -value;
  if (type == Type::kF64)
    *bits = std::bit_cast<uint64_t>(value);
  else if (type == Type::kF32)
    *bits = std::bit_cast<uint32_t>(static_cast<float>(value));
  else
    *bits = static_cast<uint64_t>(static_cast<int64_t>(value));
  return true;
}

bool Parser::ParseVariable(bool is_extern, std::string* name, uint64_t* size, int* align, std::vector<uint8_t>* init) {
  // [.align N] .type name[[N]]... [= {...} | = value] ;
  *align = 0;
  Type type = Type::kNone;
  while (Peek().kind == Token::kWord && Peek().text[0] == '.') {
    std::string d = Next().text;
    if (d == ".align") {
      int64_t a;
      if (!ParseInt(&a)) return false;
      *align = static_cast<int>(a);
    } else if (d == ".v2" || d == ".v4") {
      return Fail("vector-typed variables are not supported: " + d);
    } else {
      auto it = TypeNames().find(std::string_view(d).substr(1));
      if (it == TypeNames().end()) return Fail("unsupported variable directive " + d);
      type = it->second;
    }
  }
  if (type == Type::kNone) return Fail("variable without a type");
  if (Peek().kind != Token::kWord) return Fail("expected a variable name");
  *name = Next().text;
  uint64_t count = 1;
  bool unsized = false;
  while (Accept("[")) {
    if (Accept("]")) {
      unsized = true;
      continue;
    }
    int64_t n;
    if (!ParseInt(&n) || !Expect("]")) return false;
    count *= static_cast<uint64_t>(n);
  }
  int elem = Bytes(type);
  if (*align == 0) *align = elem;
  *size = unsized ? 0 : count * elem;
  if (unsized && !is_extern && !Is("=")) return Fail("array '" + *name + "' without a size");
  if (Accept("=")) {
    std::vector<uint64_t> values;
    do {
      while (Accept("{")) {
      }
      uint64_t v;
      if (!ParseLiteral(type, &v)) return false;
      values.push_back(v);
      while (Accept("}")) {
      }
    } while (Accept(","));
    if (unsized) *size = values.size() * elem;
    init->assign(*size, 0);
    for (size_t i = 0; i < values.size() && (i + 1) * elem <= *size; ++i) std::memcpy(init->data() + i * elem, &values[i], elem);
  }
  return Expect(";");
}

bool Parser::ParseOperand(RawOperand* op) {
  if (Accept("!")) op->negated = true;
  if (Accept("[")) {
    op->kind = RawOperand::kAddress;
    if (Peek().kind == Token::kNumber) {
      int64_t v;
      if (!ParseInt(&v)) return false;
      op->base_is_number = true;
      op->bits = static_cast<uint64_t>(v);
    } else if (Peek().kind == Token::kWord) {
      op->name = Next().text;
    } else {
      return Fail("bad address operand");
    }
    if (Accept("+")) {
      if (!ParseInt(&op->offset)) return false;
    } else if (Is("-")) {
      if (!ParseInt(&op->offset)) return false;
    }
    return Expect("]");
  }
  if (Accept("{")) {
    op->kind = RawOperand::kVector;
    do {
      RawOperand e;
      if (!ParseOperand(&e)) return false;
      op->elems.push_back(std::move(e));
    } while (Accept(","));
    return Expect("}");
  }
  bool neg = false;
  if (Accept("-")) neg = true;
  if (Peek().kind == Token::kNumber) {
    std::string s = Next().text;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
      op->kind = RawOperand::kFloat;
      op->float_width = (s[1] == 'f' || s[1] == 'F') ? 32 : 64;
      op->bits = std::strtoull(s.c_str() + 2, nullptr, 16);
      if (neg) op->bits ^= op->float_width == 32 ? 0x80000000ull : 0x8000000000000000ull;
      return true;
    }
    bool is_hex = s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (!is_hex && s.find_first_of(".eE") != std::string::npos) {
      op->kind = RawOperand::kFloat;
      op->value = std::strtod(s.c_str(), nullptr) * (neg ? -1 : 1);
      return true;
    }
    op->kind = RawOperand::kInt;
    uint64_t u = std::strtoull(s.c_str(), nullptr, 0);
    op->bits = neg ? (~u + 1) : u;
    return true;
  }
  if (neg) return Fail("bad operand after '-'");
  if (Peek().kind != Token::kWord) return Fail("bad operand '" + Peek().text + "'");
  op->kind = RawOperand::kName;
  op->name = Next().text;
  if (Accept("|")) {
    if (Peek().kind != Token::kWord) return Fail("bad second destination");
    op->kind = RawOperand::kPair;
    op->name2 = Next().text;
  } else if (Accept("+")) {
    if (!ParseInt(&op->offset)) return false;
  }
  return true;
}

bool Parser::ParseBody(std::vector<Statement>* body, Scopes* scopes, std::vector<std::pair<std::string, Type>>* registers,
                       std::vector<GlobalVar>* locals) {
  int depth = 1;  // after the function's '{'
  while (depth > 0) {
    const Token& tok = Peek();
    if (tok.kind == Token::kEnd) return Fail("unexpected end of PTX inside a function");
    if (Accept("{")) {
      ++depth;
      scopes->Enter();
      continue;
    }
    if (Accept("}")) {
      if (--depth > 0) scopes->Leave();
      continue;
    }
    if (tok.kind == Token::kWord && Is(":", 1)) {
      scopes->labels[{scopes->current(), tok.text}] = static_cast<int>(body->size());
      pos_ += 2;
      continue;
    }
    if (tok.text == ".reg") {
      Next();
      Type type = Type::kNone;
      while (Peek().kind == Token::kWord && Peek().text[0] == '.') {
        std::string d = Next().text;
        if (d == ".v2" || d == ".v4") return Fail("vector registers are not supported");
        auto it = TypeNames().find(std::string_view(d).substr(1));
        if (it == TypeNames().end()) return Fail("unsupported register type " + d);
        type = it->second;
      }
      do {
        if (Peek().kind != Token::kWord) return Fail("expected a register name");
        std::string name = Next().text;
        if (Accept("<")) {
          int64_t n;
          if (!ParseInt(&n) || !Expect(">")) return false;
          for (int64_t i = 0; i < n; ++i) registers->push_back({scopes->Declare(name + std::to_string(i)), type});
        } else {
          registers->push_back({scopes->Declare(name), type});
        }
      } while (Accept(","));
      if (!Expect(";")) return false;
      continue;
    }
    if (tok.text == ".local" || tok.text == ".shared") {
      bool local = tok.text == ".local";
      Next();
      GlobalVar v;
      if (!ParseVariable(false, &v.name, &v.size, &v.align, &v.init)) return false;
      if (local)
        locals->push_back(v);
      else
        shared_[v.name] = {v.size, v.align};
      continue;
    }
    if (tok.text == ".param") return Fail("parameters declared in a function body (calls) are not supported");
    if (tok.text == ".loc" || tok.text == ".file") {  // no ';': the rest of the line
      Next();
      while (Peek().kind != Token::kEnd && Peek().line == tok.line) Next();
      continue;
    }
    if (tok.kind == Token::kWord && tok.text[0] == '.') {  // .pragma, ...
      SkipStatement();
      continue;
    }
    Statement st;
    st.line = tok.line;
    st.scope = scopes->current();
    if (Accept("@")) {
      if (Accept("!")) st.guard_negated = true;
      if (Peek().kind != Token::kWord) return Fail("expected a predicate after '@'");
      st.guard = scopes->Resolve(Next().text);
    }
    if (Peek().kind != Token::kWord) return Fail("expected an instruction, found '" + Peek().text + "'");
    st.opcode = Next().text;
    if (!Is(";")) {
      do {
        RawOperand op;
        if (!ParseOperand(&op)) return false;
        if (st.opcode.rfind("bra", 0) != 0) scopes->Resolve(&op);  // a branch's operand is a label
        st.operands.push_back(std::move(op));
      } while (Accept(","));
    }
    if (!Expect(";")) return false;
    body->push_back(std::move(st));
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// Decoding a function's statements into Instrs

class Decoder {
 public:
  Decoder(Parser* p, Kernel* k, const std::vector<std::pair<std::string, Type>>& registers, const std::vector<GlobalVar>& locals)
      : p_(p), k_(k) {
    for (const auto& [name, type] : registers) {
      if (!slots_.count(name)) slots_[name] = static_cast<int>(slots_.size());
    }
    k_->num_registers = static_cast<int>(slots_.size());
    k_->special_base = k_->num_registers;
    next_slot_ = k_->special_base + kNumSpecials;
    for (const GlobalVar& v : locals) {
      int a = std::max(v.align, 1);
      k_->local_bytes = (k_->local_bytes + a - 1) / a * a;
      locals_[v.name] = k_->local_bytes;
      k_->local_bytes += static_cast<int>(v.size);
    }
  }

  bool Decode(const std::vector<Statement>& body, const Scopes& scopes);

 private:
  bool Fail(int line, const std::string& what) { return p_->FailAt(line, what); }
  int Constant(uint64_t value, int global = -1);
  bool Source(const RawOperand& op, Type type, int line, int32_t* slot);
  bool Dest(const RawOperand& op, int line, int32_t* slot);
  bool Address(const RawOperand& op, Space space, int line, Instr* in);
  bool DecodeOne(const Statement& st, Instr* in);

  Parser* p_;
  Kernel* k_;
  std::unordered_map<std::string, int> slots_;
  std::map<std::string, int> locals_;
  std::map<std::string, int> shared_offsets_;
  std::map<std::pair<uint64_t, int>, int> constants_;
  std::vector<size_t> dynamic_shared_constants_;
  int next_slot_ = 0;
  std::vector<std::pair<size_t, std::string>> branches_;  // instruction, label
};

int Decoder::Constant(uint64_t value, int global) {
  auto key = std::make_pair(value, global);
  auto it = constants_.find(key);
  if (it != constants_.end()) return it->second;
  int slot = next_slot_++;
  k_->constants.push_back({slot, value, global});
  constants_[key] = slot;
  return slot;
}

int SpecialIndex(const std::string& name) {
  static const std::map<std::string, int> specials = {{"%tid.x", kTidX},
                                                      {"%tid.y", kTidY},
                                                      {"%tid.z", kTidZ},
                                                      {"%ntid.x", kNtidX},
                                                      {"%ntid.y", kNtidY},
                                                      {"%ntid.z", kNtidZ},
                                                      {"%ctaid.x", kCtaidX},
                                                      {"%ctaid.y", kCtaidY},
                                                      {"%ctaid.z", kCtaidZ},
                                                      {"%nctaid.x", kNctaidX},
                                                      {"%nctaid.y", kNctaidY},
                                                      {"%nctaid.z", kNctaidZ},
                                                      {"%laneid", kLaneid},
                                                      {"%warpid", kWarpid},
                                                      {"%nwarpid", kNwarpid},
                                                      {"%smid", kSmid},
                                                      {"%nsmid", kNsmid},
                                                      {"%gridid", kGridid},
                                                      {"%lanemask_eq", kLanemaskEq},
                                                      {"%lanemask_le", kLanemaskLe},
                                                      {"%lanemask_lt", kLanemaskLt},
                                                      {"%lanemask_ge", kLanemaskGe},
                                                      {"%lanemask_gt", kLanemaskGt},
                                                      {"%dynamic_smem_size", kDynamicSmemSize},
                                                      {"%total_smem_size", kTotalSmemSize},
                                                      {"%cluster_ctarank", kClusterCtarank},
                                                      {"%cluster_nctarank", kClusterNctarank},
                                                      {"%cluster_ctaid.x", kClusterCtaidX},
                                                      {"%cluster_ctaid.y", kClusterCtaidY},
                                                      {"%cluster_ctaid.z", kClusterCtaidZ},
                                                      {"%cluster_nctaid.x", kClusterNctaidX},
                                                      {"%cluster_nctaid.y", kClusterNctaidY},
                                                      {"%cluster_nctaid.z", kClusterNctaidZ},
                                                      {"%clusterid.x", kClusteridX},
                                                      {"%clusterid.y", kClusteridY},
                                                      {"%clusterid.z", kClusteridZ},
                                                      {"%nclusterid.x", kNclusteridX},
                                                      {"%nclusterid.y", kNclusteridY},
                                                      {"%nclusterid.z", kNclusteridZ}};
  auto it = specials.find(name);
  return it == specials.end() ? -1 : it->second;
}

uint64_t FloatBits(double v, Type type) {
  if (type == Type::kF64) return std::bit_cast<uint64_t>(v);
  return std::bit_cast<uint32_t>(static_cast<float>(v));
}

bool Decoder::Source(const RawOperand& op, Type type, int line, int32_t* slot) {
  switch (op.kind) {
    case RawOperand::kInt:
      *slot = Constant(IsFloat(type) && type != Type::kF16x2 && type != Type::kBF16x2 && op.bits != 0
                           ? FloatBits(static_cast<double>(static_cast<int64_t>(op.bits)), type)
                           : op.bits);
      return true;
    case RawOperand::kFloat: {
      uint64_t bits = op.bits;
      if (op.float_width == 0)
        bits = FloatBits(op.value, type);
      else if (op.float_width == 32 && type == Type::kF64)
        bits = std::bit_cast<uint64_t>(static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits))));
      else if (op.float_width == 64 && type == Type::kF32)
        bits = std::bit_cast<uint32_t>(static_cast<float>(std::bit_cast<double>(bits)));
      *slot = Constant(bits);
      return true;
    }
    case RawOperand::kName: {
      auto it = slots_.find(op.name);
      if (it != slots_.end()) {
        if (op.offset != 0) return Fail(line, "register with an offset: " + op.name);
        *slot = it->second;
        return true;
      }
      int special = SpecialIndex(op.name);
      if (special >= 0) {
        *slot = k_->special_base + special;
        return true;
      }
      if (op.name[0] == '%') {
        if (op.name == "%clock" || op.name == "%clock64" || op.name == "%globaltimer")
          return Fail(line, op.name + " may only be read by mov");
        return Fail(line, "unknown register " + op.name);
      }
      if (op.name == "WARP_SZ") {
        *slot = Constant(32);
        return true;
      }
      // A symbol: its address in its state space.
      if (auto l = locals_.find(op.name); l != locals_.end()) {
        *slot = Constant(l->second + op.offset);
        return true;
      }
      if (auto s = p_->shared_.find(op.name); s != p_->shared_.end()) {
        if (s->second.size == 0) {  // extern: the dynamic shared memory, placed after the static
          dynamic_shared_constants_.push_back(k_->constants.size());
          k_->constants.push_back({next_slot_, static_cast<uint64_t>(op.offset), -1});
          *slot = next_slot_++;
          return true;
        }
        auto [it2, fresh] = shared_offsets_.try_emplace(op.name, 0);
        if (fresh) {
          int a = std::max(s->second.align, 1);
          k_->static_shared_bytes = (k_->static_shared_bytes + a - 1) / a * a;
          it2->second = k_->static_shared_bytes;
          k_->static_shared_bytes += static_cast<int>(s->second.size);
        }
        *slot = Constant(it2->second + op.offset);
        return true;
      }
      for (size_t g = 0; g < p_->module_->globals.size(); ++g) {
        if (p_->module_->globals[g].name == op.name) {
          *slot = Constant(static_cast<uint64_t>(op.offset), static_cast<int>(g));
          return true;
        }
      }
      for (const Param& prm : k_->params) {
        if (prm.name == op.name) {
          *slot = Constant(prm.offset + op.offset);
          return true;
        }
      }
      return Fail(line, "unknown symbol " + op.name);
    }
    default: return Fail(line, "unexpected operand form");
  }
}

bool Decoder::Dest(const RawOperand& op, int line, int32_t* slot) {
  if (op.kind != RawOperand::kName && op.kind != RawOperand::kPair) return Fail(line, "a destination must be a register");
  auto it = slots_.find(op.name);
  if (it == slots_.end()) {
    if (op.name == "_") {  // the sink: a slot of its own that nothing reads
      *slot = next_slot_++;
      return true;
    }
    return Fail(line, "unknown destination register " + op.name);
  }
  *slot = it->second;
  return true;
}

bool Decoder::Address(const RawOperand& op, Space space, int line, Instr* in) {
  if (op.kind != RawOperand::kAddress) return Fail(line, "expected an address [..]");
  in->offset = op.offset;
  if (op.base_is_number) {
    in->src[0] = Constant(op.bits);
    return true;
  }
  RawOperand base;
  base.kind = RawOperand::kName;
  base.name = op.name;
  return Source(base, Type::kU64, line, &in->src[0]);
}

// Modifiers that do not change what the emulator computes (caching, memory ordering
// scopes: the emulator's memory is sequentially consistent).
bool IsIgnoredModifier(const std::string& m) {
  static const char* kIgnored[] = {"nc",
                                   "volatile",
                                   "relaxed",
                                   "acquire",
                                   "release",
                                   "acq_rel",
                                   "sc",
                                   "weak",
                                   "mmio",
                                   "gl",
                                   "gpu",
                                   "sys",
                                   "cta",
                                   "ca",
                                   "cg",
                                   "cs",
                                   "lu",
                                   "cv",
                                   "wb",
                                   "wt",
                                   "aligned",
                                   "uni",
                                   "sync",
                                   "L1::evict_normal",
                                   "L1::evict_unchanged",
                                   "L1::evict_first",
                                   "L1::evict_last",
                                   "L1::no_allocate",
                                   "L2::evict_normal",
                                   "L2::evict_first",
                                   "L2::evict_last",
                                   "L2::64B",
                                   "L2::128B",
                                   "L2::256B",
                                   "L2::cache_hint",
                                   "noftz"};
  for (const char* s : kIgnored)
    if (m == s) return true;
  return false;
}

bool Decoder::DecodeOne(const Statement& st, Instr* in) {
  const int line = st.line;
  in->line = line;
  if (!st.guard.empty()) {
    auto it = slots_.find(st.guard);
    if (it == slots_.end()) return Fail(line, "unknown predicate " + st.guard);
    in->guard = it->second;
    in->guard_negated = st.guard_negated;
  }
  // Split the opcode into its base and modifiers.
  std::vector<std::string> parts;
  {
    size_t start = 0;
    const std::string& s = st.opcode;
    for (size_t i = 0; i <= s.size(); ++i) {
      if (i == s.size() || (s[i] == '.' && !(i > 0 && s[i - 1] == ':'))) {
        if (i > start) parts.push_back(s.substr(start, i - start));
        start = i + 1;
      }
    }
  }
  std::string base = parts.empty() ? "" : parts[0];
  if (base == "addc" || base == "subc" || base == "madc") {  // the carry chain's later steps
    in->flags |= kCarryIn;
    base.pop_back();
  }
  std::vector<Type> types;
  bool to = false;
  bool bar_sync = false, bar_cluster = false, cluster_step = false;
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::string& m = parts[i];
    auto t = TypeNames().find(m);
    if (t != TypeNames().end()) {
      types.push_back(t->second);
      continue;
    }
    if (m == "global") {
      in->space = Space::kGlobal;
      continue;
    }
    if (m == "shared" || m == "shared::cta") {
      in->space = Space::kShared;
      continue;
    }
    if (m == "local") {
      in->space = Space::kLocal;
      continue;
    }
    if (m == "param") {
      in->space = Space::kParam;
      continue;
    }
    if (m == "const") {
      in->space = Space::kConst;
      continue;
    }
    if (m == "to") {
      to = true;
      continue;
    }
    if (m == "v2") {
      in->vec = 2;
      continue;
    }
    if (m == "v4") {
      in->vec = 4;
      continue;
    }
    if (base == "setp") {
      static const std::map<std::string, Cmp> cmps = {
          {"eq", Cmp::kEq},   {"ne", Cmp::kNe},   {"lt", Cmp::kLt},   {"le", Cmp::kLe},   {"gt", Cmp::kGt},   {"ge", Cmp::kGe},
          {"lo", Cmp::kLo},   {"ls", Cmp::kLs},   {"hi", Cmp::kHi},   {"hs", Cmp::kHs},   {"equ", Cmp::kEqu}, {"neu", Cmp::kNeu},
          {"ltu", Cmp::kLtu}, {"leu", Cmp::kLeu}, {"gtu", Cmp::kGtu}, {"geu", Cmp::kGeu}, {"num", Cmp::kNum}, {"nan", Cmp::kNan}};
      if (auto c = cmps.find(m); c != cmps.end()) {
        in->mode = static_cast<uint8_t>(c->second);
        continue;
      }
      if (m == "and") {
        in->bool_op = BoolOp::kAnd;
        continue;
      }
      if (m == "or") {
        in->bool_op = BoolOp::kOr;
        continue;
      }
      if (m == "xor") {
        in->bool_op = BoolOp::kXor;
        continue;
      }
    }
    if (base == "shfl") {
      static const std::map<std::string, ShflMode> modes = {
          {"up", ShflMode::kUp}, {"down", ShflMode::kDown}, {"bfly", ShflMode::kBfly}, {"idx", ShflMode::kIdx}};
      if (auto c = modes.find(m); c != modes.end()) {
        in->mode = static_cast<uint8_t>(c->second);
        continue;
      }
    }
    if (base == "vote") {
      static const std::map<std::string, VoteMode> modes = {
          {"all", VoteMode::kAll}, {"any", VoteMode::kAny}, {"uni", VoteMode::kUni}, {"ballot", VoteMode::kBallot}};
      if (auto c = modes.find(m); c != modes.end()) {
        in->mode = static_cast<uint8_t>(c->second);
        continue;
      }
    }
    if (base == "atom" || base == "red" || base == "redux") {
      static const std::map<std::string, AtomOp> ops = {
          {"add", AtomOp::kAdd}, {"min", AtomOp::kMin},   {"max", AtomOp::kMax}, {"and", AtomOp::kAnd}, {"or", AtomOp::kOr},
          {"xor", AtomOp::kXor}, {"exch", AtomOp::kExch}, {"cas", AtomOp::kCas}, {"inc", AtomOp::kInc}, {"dec", AtomOp::kDec}};
      if (auto c = ops.find(m); c != ops.end()) {
        in->mode = static_cast<uint8_t>(c->second);
        continue;
      }
    }
    if (base == "testp") {
      static const std::map<std::string, TestpMode> modes = {
          {"finite", TestpMode::kFinite},         {"infinite", TestpMode::kInfinite}, {"number", TestpMode::kNumber},
          {"notanumber", TestpMode::kNotANumber}, {"normal", TestpMode::kNormal},     {"subnormal", TestpMode::kSubnormal}};
      if (auto c = modes.find(m); c != modes.end()) {
        in->mode = static_cast<uint8_t>(c->second);
        continue;
      }
    }
    if (base == "bfind" && m == "shiftamt") {
      in->flags |= kShiftAmt;
      continue;
    }
    if (base == "match") {
      if (m == "any") continue;
      if (m == "all") {
        in->flags |= kMatchAll;
        continue;
      }
    }
    if (base == "shf") {
      if (m == "l") {
        in->flags |= kShfLeft;
        continue;
      }
      if (m == "r") continue;
      if (m == "wrap") {
        in->flags |= kShfWrap;
        continue;
      }
      if (m == "clamp") continue;
    }
    static const std::map<std::string, Round> rounds = {{"rn", Round::kRn},   {"rz", Round::kRz},   {"rm", Round::kRm},
                                                        {"rp", Round::kRp},   {"rni", Round::kRni}, {"rzi", Round::kRzi},
                                                        {"rmi", Round::kRmi}, {"rpi", Round::kRpi}};
    if (auto r = rounds.find(m); r != rounds.end() && base != "atom" && base != "red") {
      in->mode = static_cast<uint8_t>(r->second);
      continue;
    }
    if (m == "ftz") {
      in->flags |= kFtz;
      continue;
    }
    if (m == "sat") {
      in->flags |= kSat;
      continue;
    }
    if (m == "approx" || m == "full") {
      in->flags |= kApprox;
      continue;
    }
    if (m == "hi") {
      in->flags |= kHi;
      continue;
    }
    if (m == "lo") {
      in->flags |= kLo;
      continue;
    }
    if (m == "wide") {
      in->flags |= kWide;
      continue;
    }
    if (m == "NaN") {
      in->flags |= kNaN;
      continue;
    }
    if (m == "cc") {
      in->flags |= kCc;
      continue;
    }
    if (base == "bar" || base == "barrier") {
      if (m == "sync") {
        bar_sync = true;
        continue;
      }
      if (m == "warp") {
        in->op = Op::kBarWarp;
        continue;
      }
      if (m == "cluster") {
        bar_cluster = true;
        continue;
      }
      if (bar_cluster && (m == "arrive" || m == "wait")) {
        cluster_step = true;
        in->mode = static_cast<uint8_t>(m == "arrive" ? BarClusterMode::kArrive : BarClusterMode::kWait);
        continue;
      }
    }
    if (IsIgnoredModifier(m)) continue;
    return Fail(line, "unsupported modifier ." + m + " in '" + st.opcode + "'");
  }
  if (!types.empty()) in->type = types[0];
  if (types.size() > 1) in->type2 = types[1];
  if (in->flags & (kCc | kCarryIn)) {  // extended-precision integer arithmetic
    const bool integer32or64 =
        in->type == Type::kU32 || in->type == Type::kS32 || in->type == Type::kU64 || in->type == Type::kS64;
    const bool op = base == "add" || base == "sub" || (base == "mad" && (in->flags & (kLo | kHi)));
    if (!integer32or64 || !op || (in->flags & kSat))
      return Fail(line, "a carry chain is add, sub or mad.lo/.hi of 32- or 64-bit integers, without .sat: '" + st.opcode + "'");
  }

  const auto& ops = st.operands;
  auto need = [&](size_t n) {
    if (ops.size() == n) return true;
    return Fail(line, "'" + st.opcode + "' takes " + std::to_string(n) + " operands, found " + std::to_string(ops.size()));
  };
  // dst, then sources all of the instruction's type.
  auto simple = [&](Op op, size_t nsrc, Type src_type) {
    in->op = op;
    if (!need(nsrc + 1) || !Dest(ops[0], line, &in->dst[0])) return false;
    in->ndst = 1;
    in->nsrc = static_cast<uint8_t>(nsrc);
    for (size_t i = 0; i < nsrc; ++i) {
      if (!Source(ops[i + 1], src_type, line, &in->src[i])) return false;
      if (ops[i + 1].negated) return Fail(line, "'!' on a source of '" + st.opcode + "'");
    }
    return true;
  };
  static const std::map<std::string, Op> kArith = {
      {"add", Op::kAdd}, {"sub", Op::kSub}, {"mul", Op::kMul}, {"div", Op::kDiv}, {"rem", Op::kRem},          {"min", Op::kMin},
      {"max", Op::kMax}, {"and", Op::kAnd}, {"or", Op::kOr},   {"xor", Op::kXor}, {"copysign", Op::kCopysign}};
  static const std::map<std::string, Op> kUnary = {
      {"abs", Op::kAbs}, {"neg", Op::kNeg},   {"not", Op::kNot},   {"cnot", Op::kCnot},   {"ex2", Op::kEx2},
      {"lg2", Op::kLg2}, {"rcp", Op::kRcp},   {"sqrt", Op::kSqrt}, {"rsqrt", Op::kRsqrt}, {"sin", Op::kSin},
      {"cos", Op::kCos}, {"tanh", Op::kTanh}, {"popc", Op::kPopc}, {"clz", Op::kClz},     {"brev", Op::kBrev}};

  if (in->type == Type::kNone && base != "bra" && base != "ret" && base != "exit" && base != "bar" && base != "barrier" &&
      base != "membar" && base != "fence" && base != "trap" && base != "prefetch" && base != "nanosleep" && base != "pmevent" &&
      base != "call")
    return Fail(line, "instruction without a type: '" + st.opcode + "'");

  if (auto it = kArith.find(base); it != kArith.end()) {
    if ((in->flags & kWide) && base == "mul") {
      if (!simple(it->second, 2, in->type)) return false;
      return true;
    }
    return simple(it->second, 2, in->type);
  }
  if (auto it = kUnary.find(base); it != kUnary.end()) return simple(it->second, 1, in->type);
  if (base == "mad") return simple(Op::kMad, 3, in->type);
  if (base == "fma") return simple(Op::kFma, 3, in->type);
  if (base == "shl" || base == "shr")
    return simple(base == "shl" ? Op::kShl : Op::kShr, 2, Type::kU32) && Source(ops[1], in->type, line, &in->src[0]);
  if (base == "shf") return simple(Op::kShf, 3, Type::kU32);
  if (base == "bfe") return simple(Op::kBfe, 3, Type::kU32) && Source(ops[1], in->type, line, &in->src[0]);
  if (base == "bfi")
    return simple(Op::kBfi, 4, Type::kU32) && Source(ops[1], in->type, line, &in->src[0]) &&
           Source(ops[2], in->type, line, &in->src[1]);
  if (base == "prmt") return simple(Op::kPrmt, 3, Type::kU32);
  if (base == "bfind") return simple(Op::kBfind, 1, in->type);
  if (base == "lop3") return simple(Op::kLop3, 4, in->type);
  if (base == "sad") return simple(Op::kSad, 3, in->type);
  if (base == "match") {
    if (!simple(Op::kMatch, 2, in->type)) return false;
    if (ops[0].kind == RawOperand::kPair) {
      auto it = slots_.find(ops[0].name2);
      if (it == slots_.end()) return Fail(line, "unknown register " + ops[0].name2);
      in->dst2 = it->second;
    }
    return true;
  }
  if (base == "testp") return simple(Op::kTestp, 1, in->type);
  if (base == "activemask") return simple(Op::kActivemask, 0, in->type);
  if (base == "selp") {
    if (!simple(Op::kSelp, 3, in->type)) return false;
    return true;
  }
  if (base == "mov") {
    if (!need(2)) return false;
    if (ops[0].kind == RawOperand::kVector || ops[1].kind == RawOperand::kVector) {
      bool unpack = ops[0].kind == RawOperand::kVector;
      const RawOperand& vec = unpack ? ops[0] : ops[1];
      in->op = unpack ? Op::kUnpack : Op::kPack;
      in->vec = static_cast<uint8_t>(vec.elems.size());
      if (in->vec != 2 && in->vec != 4) return Fail(line, "mov with a vector of " + std::to_string(in->vec));
      for (int i = 0; i < in->vec; ++i) {
        if (unpack ? !Dest(vec.elems[i], line, &in->dst[i]) : !Source(vec.elems[i], Type::kU64, line, &in->src[i])) return false;
      }
      if (unpack) {
        in->ndst = in->vec;
        in->nsrc = 1;
        return Source(ops[1], in->type, line, &in->src[0]);
      }
      in->ndst = 1;
      in->nsrc = in->vec;
      return Dest(ops[0], line, &in->dst[0]);
    }
    if (ops[1].kind == RawOperand::kName &&
        (ops[1].name == "%clock" || ops[1].name == "%clock64" || ops[1].name == "%globaltimer")) {
      in->op = Op::kClock;
      in->ndst = 1;
      return Dest(ops[0], line, &in->dst[0]);
    }
    return simple(Op::kMov, 1, in->type);
  }
  if (base == "setp") {
    in->op = Op::kSetp;
    size_t n = in->bool_op == BoolOp::kNone ? 3 : 4;
    if (!need(n)) return false;
    if (!Dest(ops[0], line, &in->dst[0])) return false;
    in->ndst = 1;
    if (ops[0].kind == RawOperand::kPair) {
      auto it = slots_.find(ops[0].name2);
      if (it == slots_.end()) return Fail(line, "unknown register " + ops[0].name2);
      in->dst2 = it->second;
    }
    in->nsrc = static_cast<uint8_t>(n - 1);
    for (size_t i = 1; i < n; ++i) {
      if (!Source(ops[i], i == 3 ? Type::kPred : in->type, line, &in->src[i - 1])) return false;
      if (ops[i].negated) in->flags |= static_cast<uint32_t>(kNegated0 << (i - 1));
    }
    return true;
  }
  if (base == "cvt") {
    if (in->type2 == Type::kNone) return Fail(line, "cvt needs two types: '" + st.opcode + "'");
    in->op = Op::kCvt;
    // cvt.rn.f16x2.f32 d, a, b: two f32 values packed, a in the upper half.
    const bool pair = in->type == Type::kF16x2 || in->type == Type::kBF16x2;
    if (!need(pair ? 3 : 2) || !Dest(ops[0], line, &in->dst[0]) || !Source(ops[1], in->type2, line, &in->src[0])) return false;
    if (pair && !Source(ops[2], in->type2, line, &in->src[1])) return false;
    in->ndst = 1;
    in->nsrc = pair ? 2 : 1;
    return true;
  }
  if (base == "cvta") {
    in->op = Op::kCvta;
    if (in->space == Space::kGeneric) return Fail(line, "cvta without a state space");
    if (to) in->flags |= kTo;
    return simple(Op::kCvta, 1, in->type);
  }
  if (base == "ld" || base == "ldu" || base == "st") {
    bool load = base != "st";
    in->op = load ? Op::kLd : Op::kSt;
    if (!need(2)) return false;
    const RawOperand& data = load ? ops[0] : ops[1];
    if (!Address(load ? ops[1] : ops[0], in->space, line, in)) return false;
    if (data.kind == RawOperand::kVector) {
      if (data.elems.size() != in->vec)
        return Fail(line, "vector size does not match ." + std::string("v") + std::to_string(in->vec));
      for (int i = 0; i < in->vec; ++i) {
        if (load ? !Dest(data.elems[i], line, &in->dst[i]) : !Source(data.elems[i], in->type, line, &in->src[1 + i]))
          return false;
      }
    } else {
      if (in->vec != 1) return Fail(line, "a vector access needs {..}");
      if (load ? !Dest(data, line, &in->dst[0]) : !Source(data, in->type, line, &in->src[1])) return false;
    }
    if (load) {
      in->ndst = in->vec;
      in->nsrc = 1;
    } else {
      in->nsrc = static_cast<uint8_t>(1 + in->vec);
    }
    return true;
  }
  if (base == "atom" || base == "red") {
    bool atom = base == "atom";
    in->op = atom ? Op::kAtom : Op::kRed;
    bool cas = in->mode == static_cast<uint8_t>(AtomOp::kCas);
    size_t n = (atom ? 1 : 0) + 2 + (cas ? 1 : 0);
    if (!need(n)) return false;
    size_t a = atom ? 1 : 0;
    if (atom && !Dest(ops[0], line, &in->dst[0])) return false;
    in->ndst = atom ? 1 : 0;
    if (!Address(ops[a], in->space, line, in)) return false;
    if (!Source(ops[a + 1], in->type, line, &in->src[1])) return false;
    if (cas && !Source(ops[a + 2], in->type, line, &in->src[2])) return false;
    in->nsrc = static_cast<uint8_t>(cas ? 3 : 2);
    return true;
  }
  if (base == "shfl") {
    in->op = Op::kShfl;
    if (!need(5) || !Dest(ops[0], line, &in->dst[0])) return false;
    in->ndst = 1;
    if (ops[0].kind == RawOperand::kPair) {
      auto it = slots_.find(ops[0].name2);
      if (it == slots_.end()) return Fail(line, "unknown register " + ops[0].name2);
      in->dst2 = it->second;
    }
    in->nsrc = 4;
    for (int i = 0; i < 4; ++i)
      if (!Source(ops[i + 1], Type::kU32, line, &in->src[i])) return false;
    return true;
  }
  if (base == "vote") {
    in->op = Op::kVote;
    if (!need(3) || !Dest(ops[0], line, &in->dst[0]) || !Source(ops[1], Type::kPred, line, &in->src[0]) ||
        !Source(ops[2], Type::kU32, line, &in->src[1]))
      return false;
    if (ops[1].negated) in->flags |= kNegated0;
    in->ndst = 1;
    in->nsrc = 2;
    return true;
  }
  if (base == "redux") return simple(Op::kRedux, 2, in->type);
  // mapa.u64 d, a, rank: the generic address of `a`'s shared memory location in the block
  // of that rank in the cluster (the shared::cluster form is not supported).
  if (base == "mapa") {
    if (in->space != Space::kGeneric || in->type != Type::kU64)
      return Fail(line, "only the generic mapa.u64 is supported: '" + st.opcode + "'");
    return simple(Op::kMapa, 2, in->type) && Source(ops[2], Type::kU32, line, &in->src[1]);
  }
  if (base == "bar" || base == "barrier") {
    if (in->op == Op::kBarWarp) {
      if (!need(1) || !Source(ops[0], Type::kU32, line, &in->src[0])) return false;
      in->nsrc = 1;
      return true;
    }
    if (bar_cluster) {  // barrier.cluster.arrive / barrier.cluster.wait
      if (!cluster_step) return Fail(line, "barrier.cluster needs .arrive or .wait: '" + st.opcode + "'");
      in->op = Op::kBarCluster;
      return need(0);
    }
    if (!bar_sync) return Fail(line, "only bar.sync, barrier.sync and barrier.cluster are supported: '" + st.opcode + "'");
    in->op = Op::kBar;
    if (ops.empty() || ops.size() > 2) return Fail(line, "bar.sync takes a barrier and an optional count");
    for (size_t i = 0; i < ops.size(); ++i)
      if (!Source(ops[i], Type::kU32, line, &in->src[i])) return false;
    in->nsrc = static_cast<uint8_t>(ops.size());
    return true;
  }
  if (base == "bra") {
    in->op = Op::kBra;
    if (!need(1) || ops[0].kind != RawOperand::kName) return Fail(line, "bra needs a label");
    branches_.push_back({k_->code.size(), ops[0].name});
    return true;
  }
  if (base == "ret") {
    in->op = Op::kRet;
    return need(0);
  }
  if (base == "exit") {
    in->op = Op::kExit;
    return need(0);
  }
  if (base == "trap") {
    in->op = Op::kTrap;
    return true;
  }
  if (base == "membar" || base == "fence" || base == "prefetch" || base == "nanosleep" || base == "pmevent") {
    in->op = Op::kNop;
    return true;
  }
  if (base == "call") return Fail(line, "call (of a .func) is not supported by the emulator");
  return Fail(line, "unsupported instruction '" + st.opcode + "'");
}

bool Decoder::Decode(const std::vector<Statement>& body, const Scopes& scopes) {
  k_->code.reserve(body.size() + 1);
  for (const Statement& st : body) {
    Instr in;
    if (!DecodeOne(st, &in)) return false;
    k_->code.push_back(in);
  }
  // Falling off the end returns.
  Instr ret;
  ret.op = Op::kRet;
  ret.line = body.empty() ? 0 : body.back().line;
  k_->code.push_back(ret);
  for (const auto& [index, label] : branches_) {
    int target = scopes.Label(body[index].scope, label);
    if (target < 0) return Fail(k_->code[index].line, "unknown label " + label);
    k_->code[index].target = target;
  }
  // Dynamic shared memory starts after the static, at 16 bytes or the largest .align of
  // the extern declarations.
  int align = std::max(16, p_->extern_shared_align_);
  k_->dynamic_shared_offset = (k_->static_shared_bytes + align - 1) / align * align;
  for (size_t c : dynamic_shared_constants_) k_->constants[c].value += k_->dynamic_shared_offset;
  k_->num_slots = next_slot_;
  return true;
}

bool Parser::ParseKernel() {
  Kernel k;
  if (Peek().kind != Token::kWord) return Fail("expected a kernel name");
  k.name = Next().text;
  if (!Expect("(")) return false;
  int offset = 0;
  if (!Is(")")) {
    do {
      if (!Expect(".param")) return false;
      Param prm;
      Type type = Type::kNone;
      int64_t count = 1;
      while (Peek().kind == Token::kWord && Peek().text[0] == '.') {
        std::string d = Next().text;
        if (d == ".align") {
          int64_t a;
          if (!ParseInt(&a)) return false;
          prm.align = static_cast<int>(a);
        } else if (d == ".ptr" || d == ".global" || d == ".shared" || d == ".const" || d == ".local") {
        } else {
          auto it = TypeNames().find(std::string_view(d).substr(1));
          if (it == TypeNames().end()) return Fail("unsupported parameter directive " + d);
          type = it->second;
        }
      }
      if (Peek().kind != Token::kWord) return Fail("expected a parameter name");
      prm.name = Next().text;
      if (Accept("[")) {
        if (!ParseInt(&count) || !Expect("]")) return false;
      }
      int elem = Bytes(type);
      if (elem == 0) return Fail("parameter " + prm.name + " without a type");
      prm.size = static_cast<int>(elem * count);
      if (prm.align == 0) prm.align = elem;
      offset = (offset + prm.align - 1) / prm.align * prm.align;
      prm.offset = offset;
      offset += prm.size;
      k.params.push_back(prm);
    } while (Accept(","));
  }
  if (!Expect(")")) return false;
  k.param_bytes = offset;
  while (!Is("{")) {
    if (Peek().kind == Token::kEnd) return Fail("kernel " + k.name + " has no body");
    std::string d = Next().text;
    int* dims = d == ".reqntid" ? k.reqntid : d == ".maxntid" ? k.maxntid : nullptr;
    if (dims) {
      for (int i = 0; i < 3; ++i) dims[i] = 1;
      int i = 0;
      do {
        int64_t v;
        if (!ParseInt(&v)) return false;
        if (i < 3) dims[i++] = static_cast<int>(v);
      } while (Accept(","));
    } else if (d == ".pragma") {
      SkipStatement();
    } else if (d == ".minnctapersm" || d == ".maxnreg" || d == ".maxclusterrank" || d == ".explicitcluster" ||
               d == ".reqnctapercluster" || d == ".noreturn") {
      while (Peek().kind == Token::kNumber || Is(",")) Next();
    } else {
      return Fail("unsupported kernel directive " + d);
    }
  }
  Expect("{");
  std::vector<Statement> body;
  Scopes scopes;
  std::vector<std::pair<std::string, Type>> registers;
  std::vector<GlobalVar> locals;
  if (!ParseBody(&body, &scopes, &registers, &locals)) return false;
  Decoder decoder(this, &k, registers, locals);
  if (!decoder.Decode(body, scopes)) return false;
  module_->kernels.push_back(std::move(k));
  return true;
}

bool Parser::Run(std::string* error) {
  bool ok = true;
  while (ok && Peek().kind != Token::kEnd) {
    const std::string d = Next().text;
    if (d == ".version") {
      std::string v = Next().text;
      module_->ptx_major = std::atoi(v.c_str());
      size_t dot = v.find('.');
      module_->ptx_minor = dot == std::string::npos ? 0 : std::atoi(v.c_str() + dot + 1);
    } else if (d == ".target") {
      module_->target = Next().text;
      while (Accept(",")) Next();
    } else if (d == ".address_size") {
      int64_t bits;
      ok = ParseInt(&bits);
      if (ok && bits != 64) ok = Fail("only .address_size 64 is supported");
    } else if (d == ".visible" || d == ".weak" || d == ".common") {
      continue;
    } else if (d == ".extern") {
      if (Is(".shared")) {
        Next();
        GlobalVar v;
        ok = ParseVariable(true, &v.name, &v.size, &v.align, &v.init);
        if (ok) shared_[v.name] = {0, v.align};
        extern_shared_align_ = std::max(extern_shared_align_, v.align);
      } else if (Is(".func")) {
        SkipStatement();
      } else {
        ok = Fail("unsupported .extern declaration");
      }
    } else if (d == ".entry") {
      ok = ParseKernel();
    } else if (d == ".func") {
      // A device function: skipped; a call to it is an error when decoded.
      while (Peek().kind != Token::kEnd && !Is("{") && !Is(";")) Next();
      SkipStatement();
    } else if (d == ".global" || d == ".const") {
      GlobalVar v;
      v.space = d == ".global" ? Space::kGlobal : Space::kConst;
      ok = ParseVariable(false, &v.name, &v.size, &v.align, &v.init);
      if (ok) module_->globals.push_back(std::move(v));
    } else if (d == ".shared") {
      GlobalVar v;
      ok = ParseVariable(false, &v.name, &v.size, &v.align, &v.init);
      if (ok) shared_[v.name] = {v.size, v.align};
    } else if (d == ".file" || d == ".loc") {  // no ';': the rest of the line
      int line = t_[pos_ - 1].line;
      while (Peek().kind != Token::kEnd && Peek().line == line) Next();
    } else if (d == ".section" || d == ".pragma") {
      SkipStatement();
    } else {
      ok = Fail("unsupported directive '" + d + "'");
    }
  }
  if (!ok || !error_.empty()) {
    *error = error_;
    return false;
  }
  return true;
}

}  // namespace

bool ParsePtx(const std::string& text, Module* module, std::string* error) {
  std::vector<Token> tokens;
  if (!Tokenize(text, &tokens, error)) return false;
  Parser parser(std::move(tokens), module);
  return parser.Run(error);
}

}  // namespace cuemu
