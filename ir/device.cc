#include "ir/device.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

namespace graphjit {

namespace {

bool ParseIndex(std::string_view s, int* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size() && *out >= 0;
}

std::string Upper(std::string_view s) {
  std::string u(s);
  std::transform(u.begin(), u.end(), u.begin(), [](unsigned char c) { return std::toupper(c); });
  return u;
}

}  // namespace

StatusOr<DeviceKind> ParseDeviceKind(std::string_view name) {
  if (name.empty() || name == "cpu") return DeviceKind::kCpu;
  if (name == "gpu") return DeviceKind::kGpu;
  if (name == "gpu-emu") return DeviceKind::kGpuEmu;
  return InvalidArgument("the device must be cpu, gpu or gpu-emu, got '" + std::string(name) + "'");
}

const char* DeviceKindName(DeviceKind kind) {
  switch (kind) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kGpu: return "gpu";
    case DeviceKind::kGpuEmu: return "gpu-emu";
  }
  return "?";
}

StatusOr<Device> ParseDevice(std::string_view name) {
  Device d;
  const size_t colon = name.find(':');
  GJ_ASSIGN_OR_RETURN(d.kind, ParseDeviceKind(name.substr(0, colon)));
  if (colon == std::string_view::npos) return d;
  const std::string_view number = name.substr(colon + 1);
  auto bad = [&] {
    return InvalidArgument("the device must be cpu, gpu, gpu-emu, gpu:N or gpu-emu:N (N a GPU's number, from 0), got '" +
                           std::string(name) + "'");
  };
  if (d.kind == DeviceKind::kCpu || number.empty() || number.size() > 2) return bad();
  for (char c : number)
    if (c < '0' || c > '9') return bad();
  d.index = std::stoi(std::string(number));
  return d;
}

std::string DeviceLabel(DeviceKind kind, int index) {
  return kind == DeviceKind::kCpu ? "cpu" : std::string(DeviceKindName(kind)) + ":" + std::to_string(index);
}

StatusOr<DeviceName> ParseDeviceName(std::string_view device) {
  DeviceName out;
  auto bad = [&](const std::string& why) { return InvalidArgument("invalid device '" + std::string(device) + "': " + why); };
  std::vector<std::string_view> parts;
  size_t pos = 0;
  while (pos <= device.size()) {
    size_t slash = device.find('/', pos);
    if (slash == std::string_view::npos) slash = device.size();
    if (slash > pos) parts.push_back(device.substr(pos, slash - pos));
    pos = slash + 1;
  }
  for (std::string_view part : parts) {
    size_t colon = part.find(':');
    if (colon == std::string_view::npos) return bad("expected 'key:value' in '" + std::string(part) + "'");
    std::string_view key = part.substr(0, colon), value = part.substr(colon + 1);
    int index = 0;
    if (key == "job") {
      if (value != "localhost") return bad("only the local job 'localhost' exists");
    } else if (key == "replica" || key == "task") {
      if (!ParseIndex(value, &index) || index != 0) return bad("only " + std::string(key) + " 0 exists");
    } else if (key == "device") {
      size_t c2 = value.rfind(':');
      if (c2 == std::string_view::npos) return bad("expected 'device:TYPE:INDEX'");
      if (value.substr(c2 + 1) == "*") {
        index = 0;
      } else if (!ParseIndex(value.substr(c2 + 1), &index)) {
        return bad("bad device index");
      }
      out.type = Upper(value.substr(0, c2));
      out.index = index;
    } else if (key == "cpu" || key == "gpu" || key == "CPU" || key == "GPU") {
      // Legacy form "/cpu:0".
      if (value == "*") {
        index = 0;
      } else if (!ParseIndex(value, &index)) {
        return bad("bad device index");
      }
      out.type = Upper(key);
      out.index = index;
    } else {
      return bad("unknown field '" + std::string(key) + "'");
    }
  }
  if (out.type.empty()) return bad("empty device type");
  return out;
}

}  // namespace graphjit
