// Runs a model compiled by `graphjit aot` on .npy inputs and writes its results as .npy:
//   aot_<Class> NAME=in.npy ... OUT_DIR
// Built once per generated header (GRAPHJIT_AOT_HEADER, GRAPHJIT_AOT_CLASS) by this
// folder's CMakeLists.txt. Reads and writes little-endian, C-order .npy files whose dtype and
// shape are the argument's.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include GRAPHJIT_AOT_HEADER

namespace {

const char* NpyDescr(const std::string& dtype) {
  if (dtype == "float32") return "<f4";
  if (dtype == "float64") return "<f8";
  if (dtype == "int32") return "<i4";
  if (dtype == "int64") return "<i8";
  if (dtype == "uint8") return "|u1";
  if (dtype == "bool") return "|b1";
  return nullptr;
}

std::string ShapeText(const int64_t* dims) {
  std::string s = "(";
  int n = 0;
  for (; dims[n] >= 0; ++n) s += std::to_string(dims[n]) + (dims[n + 1] >= 0 || n > 0 ? ", " : ",");
  if (n > 1) s.resize(s.size() - 2);
  return s + ")";
}

// The data of an .npy file, if its header says `descr` and `shape`.
bool ReadNpy(const std::string& path, const char* descr, const int64_t* dims, void* data, int64_t bytes) {
  std::ifstream in(path, std::ios::binary);
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) return false;
  uint32_t header_size = 0;
  if (magic[6] == 1) {
    uint16_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 2);
    header_size = n;
  } else {
    in.read(reinterpret_cast<char*>(&header_size), 4);
  }
  std::string header(header_size, '\0');
  in.read(&header[0], header_size);
  std::string compact;
  for (char c : header)
    if (c != ' ') compact += c;
  std::string want_shape = ShapeText(dims);
  std::string want_compact;
  for (char c : want_shape)
    if (c != ' ') want_compact += c;
  if (compact.find(std::string("'descr':'") + descr + "'") == std::string::npos ||
      compact.find("'fortran_order':False") == std::string::npos ||
      compact.find("'shape':" + want_compact) == std::string::npos) {
    std::fprintf(stderr, "%s: expected %s of shape %s, header %s\n", path.c_str(), descr, want_shape.c_str(), header.c_str());
    return false;
  }
  return static_cast<bool>(in.read(static_cast<char*>(data), bytes));
}

bool WriteNpy(const std::string& path, const char* descr, const int64_t* dims, const void* data, int64_t bytes) {
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + ShapeText(dims) + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const uint16_t n = static_cast<uint16_t>(header.size());
  out.write("\x93NUMPY\x01\x00", 8);
  out.write(reinterpret_cast<const char*>(&n), 2);
  out << header;
  out.write(static_cast<const char*>(data), bytes);
  return static_cast<bool>(out.flush());
}

}  // namespace

int main(int argc, char** argv) {
  GRAPHJIT_AOT_CLASS model;
  if (argc != GRAPHJIT_AOT_CLASS::kNumArguments + 2) {
    std::fprintf(stderr, "usage: %s NAME=in.npy (one per argument) OUT_DIR\n", argv[0]);
    return 2;
  }
  for (int a = 1; a + 1 < argc; ++a) {
    const std::string arg = argv[a];
    const size_t eq = arg.find('=');
    int i = 0;
    while (i < GRAPHJIT_AOT_CLASS::kNumArguments && arg.substr(0, eq) != GRAPHJIT_AOT_CLASS::argument_name(i)) ++i;
    const char* descr = i < GRAPHJIT_AOT_CLASS::kNumArguments ? NpyDescr(GRAPHJIT_AOT_CLASS::argument_dtype(i)) : nullptr;
    if (eq == std::string::npos || descr == nullptr ||
        !ReadNpy(arg.substr(eq + 1), descr, GRAPHJIT_AOT_CLASS::argument_shape(i), model.argument_data(i),
                 model.argument_bytes(i))) {
      std::fprintf(stderr, "%s: bad argument '%s'\n", argv[0], arg.c_str());
      return 2;
    }
  }
  model.Run();
  const std::string out = argv[argc - 1];
  for (int i = 0; i < GRAPHJIT_AOT_CLASS::kNumResults; ++i) {
    std::string file = GRAPHJIT_AOT_CLASS::result_name(i);
    for (char& c : file)
      if (c == '/' || c == ':') c = '_';
    const char* descr = NpyDescr(GRAPHJIT_AOT_CLASS::result_dtype(i));
    if (descr == nullptr || !WriteNpy(out + "/" + file + ".npy", descr, GRAPHJIT_AOT_CLASS::result_shape(i), model.result_data(i),
                                      model.result_bytes(i))) {
      std::fprintf(stderr, "%s: cannot write %s/%s.npy\n", argv[0], out.c_str(), file.c_str());
      return 1;
    }
    std::printf("%s/%s.npy\n", out.c_str(), file.c_str());
  }
  return 0;
}
