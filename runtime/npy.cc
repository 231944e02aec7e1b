#include "runtime/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>

namespace graphjit {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct NpyType {
  const char* descr;
  DType dtype;
};
constexpr NpyType kTypes[] = {
    {"<f4", DType::kFloat}, {"<f8", DType::kDouble}, {"<f2", DType::kHalf}, {"<i4", DType::kInt32}, {"<i8", DType::kInt64},
    {"|b1", DType::kBool},  {"|u1", DType::kUInt8},  {"|i1", DType::kInt8}, {"<i2", DType::kInt16},
};

// Value of `key` in the header dict: the text after "'key':" up to the matching end.
bool FindValue(const std::string& header, const std::string& key, std::string* value) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) return false;
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) return false;
  size_t start = header.find_first_not_of(" ", colon + 1);
  if (start == std::string::npos) return false;
  size_t end;
  if (header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string::npos) return false;
    ++end;
  } else if (header[start] == '\'') {
    end = header.find('\'', start + 1);
    if (end == std::string::npos) return false;
    ++end;
  } else {
    end = header.find_first_of(",}", start);
    if (end == std::string::npos) return false;
  }
  *value = header.substr(start, end - start);
  return true;
}

}  // namespace

StatusOr<Tensor> ParseNpy(const std::string& bytes, const std::string& what) {
  auto bad = [&](const std::string& why) { return InvalidArgument("malformed .npy file '" + what + "': " + why); };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) return bad("missing the \\x93NUMPY magic");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return bad("truncated header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return bad("unsupported format version " + std::to_string(major));
  }
  if (header_start + header_len > bytes.size()) return bad("truncated header");
  std::string header = bytes.substr(header_start, header_len);

  std::string descr, fortran, shape_text;
  if (!FindValue(header, "descr", &descr) || !FindValue(header, "fortran_order", &fortran) ||
      !FindValue(header, "shape", &shape_text))
    return bad("header lacks descr, fortran_order or shape");
  if (fortran != "False") return bad("Fortran-order arrays are not supported; save with C order");
  if (descr.size() < 2 || descr.front() != '\'' || descr.back() != '\'') return bad("descr is not a quoted string");
  if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')')
    return bad("shape " + shape_text + " is not a tuple");
  descr = descr.substr(1, descr.size() - 2);  // strip quotes
  DType dtype = DType::kInvalid;
  for (const auto& t : kTypes)
    if (descr == t.descr || (descr[0] == '=' && descr.substr(1) == std::string(t.descr).substr(1))) dtype = t.dtype;
  if (dtype == DType::kInvalid)
    return bad("unsupported dtype '" + descr + "' (supported: little-endian f2/f4/f8, i1/i2/i4/i8, u1, b1)");

  std::vector<int64_t> dims;
  std::string inner = shape_text.substr(1, shape_text.size() - 2);
  std::stringstream ss(inner);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t b = item.find_first_not_of(" "), e = item.find_last_not_of(" ");
    if (b == std::string::npos) continue;
    item = item.substr(b, e - b + 1);
    int64_t d = 0;
    for (char ch : item) {
      if (ch < '0' || ch > '9' || d > (int64_t{1} << 50)) return bad("bad shape " + shape_text);
      d = d * 10 + (ch - '0');
    }
    dims.push_back(d);
  }
  auto checked = CheckedBytes(dims, static_cast<int64_t>(DTypeSize(dtype)));
  if (!checked.ok()) return bad(checked.status().message());
  size_t data_start = header_start + header_len;
  const size_t want = static_cast<size_t>(*checked);
  if (bytes.size() - data_start != want)
    return bad("expected " + std::to_string(want) + " bytes of data for shape " + Shape(dims).ToString() + ", found " +
               std::to_string(bytes.size() - data_start));
  GJ_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, Shape(dims)));
  if (want) std::memcpy(t.raw(), bytes.data() + data_start, want);
  if (dtype == DType::kBool) {
    for (int64_t i = 0; i < t.num_elements(); ++i)
      if (reinterpret_cast<const uint8_t*>(bytes.data() + data_start)[i] > 1) return bad("bool values must be 0 or 1");
  }
  return t;
}

StatusOr<Tensor> ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParseNpy(ss.str(), path);
}

Status WriteNpy(const std::string& path, const Tensor& input) {
  Tensor tensor = input;
  if (tensor.dtype() == DType::kBFloat16 || tensor.dtype() == DType::kHalf) {
    GJ_ASSIGN_OR_RETURN(tensor, CastTensor(input, DType::kFloat));
  }
  const char* descr = nullptr;
  for (const auto& t : kTypes)
    if (t.dtype == tensor.dtype()) descr = t.descr;
  if (descr == nullptr) return Unimplemented("cannot write " + DTypeName(tensor.dtype()) + " to .npy");
  std::string shape = "(";
  for (int i = 0; i < tensor.shape().rank(); ++i) shape += std::to_string(tensor.shape().dim(i)) + ",";
  if (tensor.shape().rank() > 1) shape.pop_back();
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, ending the header with '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(static_cast<const char*>(tensor.raw()), tensor.bytes());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f) return InvalidArgument("cannot write '" + path + "'");
  return Status::Ok();
}

}  // namespace graphjit
