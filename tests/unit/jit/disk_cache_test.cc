// jit/disk_cache: compiled kernels kept on disk across processes (--cache_dir). The
// directory's entries on their own, then whole processes of the command line sharing one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "ir/graphdef.h"
#include "jit/disk_cache.h"
#include "jit/jit.h"
#include "runtime/npy.h"
#include "tests/support/test_util.h"

namespace graphjit {
namespace {

namespace fs = std::filesystem;
using testing::RunGraphjit;
using testing::TestData;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(DiskCache, WhatIsStoredLoadsInAnotherInstance) {
  const std::string dir = testing::TempDir() + "/cache";
  {
    DiskCache cache(dir, 1 << 20);
    EXPECT_FALSE(cache.Load("sig-a").has_value());
    cache.Store("sig-a", {"interface a\n", std::string("code\0with nul", 13)});
    cache.Store("sig-b", {"", ""});
  }
  DiskCache again(dir, 1 << 20);
  const std::optional<DiskEntry> a = again.Load("sig-a"), b = again.Load("sig-b");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->interface, "interface a\n");
  EXPECT_EQ(a->code, std::string("code\0with nul", 13));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->interface, "");
  EXPECT_EQ(b->code, "");
  EXPECT_FALSE(again.Load("sig-c").has_value());
  EXPECT_EQ(Entries(dir).size(), 2u);  // no temporary files left
}

// Each way an entry can be bad: it is dropped (removed) and reads as absent.
TEST(DiskCache, CorruptTruncatedAndForeignEntriesAreDropped) {
  const std::string dir = testing::TempDir() + "/cache";
  DiskCache cache(dir, 1 << 20);
  const DiskEntry code{"kernel 0 fusion_0\n", std::string(1000, 'x')};
  const std::map<std::string, std::function<std::string(std::string)>> damage = {
      {"a flipped byte",
       [](std::string b) {
         b[b.size() / 2] ^= 1;
         return b;
       }},
      {"truncated", [](std::string b) { return b.substr(0, b.size() - 9); }},
      {"empty", [](std::string) { return std::string(); }},
      {"longer", [](std::string b) { return b + "tail"; }},
      {"foreign", [](std::string b) { return std::string(b.size(), 'z'); }},
      {"another format",
       [](std::string b) {
         b[4] = 9;
         return b;
       }},
  };
  const int64_t dropped = cache.stats().dropped;
  for (const auto& [what, f] : damage) {
    SCOPED_TRACE(what);
    cache.Store("sig", code);
    const std::string path = cache.PathOf("sig");
    Spit(path, f(Slurp(path)));
    EXPECT_FALSE(cache.Load("sig").has_value());
    EXPECT_FALSE(fs::exists(path));
  }
  EXPECT_EQ(cache.stats().dropped - dropped, static_cast<int64_t>(damage.size()));
  // A whole entry of another signature in this one's file (a hash collision, or a file
  // copied in): not this signature's code.
  cache.Store("other", code);
  fs::copy_file(cache.PathOf("other"), cache.PathOf("sig"), fs::copy_options::overwrite_existing);
  EXPECT_FALSE(cache.Load("sig").has_value());
  EXPECT_EQ(cache.Load("other")->code, code.code);
}

TEST(DiskCache, TheLeastRecentlyUsedEntriesGoFirstBeyondTheBound) {
  const std::string dir = testing::TempDir() + "/cache";
  const DiskEntry code{"", std::string(3000, 'c')};
  DiskCache cache(dir, 10000);  // three entries fit, four do not
  const auto past = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (int i = 0; i < 3; ++i) {
    cache.Store("sig" + std::to_string(i), code);
    fs::last_write_time(cache.PathOf("sig" + std::to_string(i)), past + std::chrono::minutes(i));
  }
  ASSERT_TRUE(cache.Load("sig0").has_value());  // used now: sig1 is the least recent
  cache.Store("sig3", code);
  EXPECT_TRUE(fs::exists(cache.PathOf("sig0")));
  EXPECT_FALSE(fs::exists(cache.PathOf("sig1")));
  EXPECT_TRUE(fs::exists(cache.PathOf("sig2")));
  EXPECT_TRUE(fs::exists(cache.PathOf("sig3")));
}

TEST(DiskCache, TheBuildIdNamesThisBinary) {
  const std::string& id = BuildId();
  EXPECT_NE(id.find("graphjit "), std::string::npos) << id;
  EXPECT_TRUE(std::regex_search(id, std::regex(" build [0-9a-f]{40} llvm 19\\."))) << id;
}

// A session's own cache_dir (the C++ API): a compile there writes its entry.
TEST(DiskCache, ASessionOptionNamesTheDirectory) {
  RegisterJit();
  const std::string dir = testing::TempDir() + "/cache";
  testing::GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {3, 37});  // a shape no other test of this process compiles
  b.Op("relu", "Relu", {"x"});
  b.Op("y", "Tanh", {"relu"});
  SessionOptions options;
  options.jit_level = JitLevel::kOn2;
  options.cache_dir = dir;
  auto session = testing::MakeSession(b.graph_def(), options);
  const JitStats before = GetJitStats();
  testing::RunOrDie(*session, {{"x", testing::MakeFloat(Shape{3, 37}, std::vector<float>(111, 0.5f))}}, {"y"});
  const JitStats after = GetJitStats();
  EXPECT_EQ(after.compiles - before.compiles, 1);
  EXPECT_EQ(after.disk_writes - before.disk_writes, 1);
  EXPECT_EQ(Entries(dir).size(), 1u);
}

// ---- processes --------------------------------------------------------------------------

std::string Transformer() {
  const std::string d = TestData("transformer_block");
  return "run " + d + "/model.pb --feed x=" + d + "/x.npy --jit on --stats";
}

int64_t Stat(const testing::CommandResult& r, const std::string& name) {
  const std::string err = r.out + r.err;
  std::smatch m;
  if (!std::regex_search(err, m, std::regex(" " + name + "=([0-9]+)"))) {
    ADD_FAILURE() << "no " << name << " in " << err;
    return -1;
  }
  return std::stoll(m[1]);
}

// Fetch's values as written by `--out dir`.
std::vector<double> Values(const std::string& dir, const std::string& fetch) {
  auto t = ReadNpy(dir + "/" + fetch + ".npy");
  EXPECT_TRUE(t.ok()) << dir << "/" << fetch;
  std::vector<double> v;
  for (int64_t i = 0; t.ok() && i < t->num_elements(); ++i) v.push_back(t->ValueAsDouble(i));
  return v;
}

// The transformer block's 7 clusters: compiled by the first process, loaded by the second.
TEST(DiskCacheCli, ASecondProcessCompilesNothing) {
  const std::string dir = testing::TempDir();
  const std::string flags = "GRAPHJIT_FLAGS=--cache_dir=" + dir + "/cache";
  auto first = RunGraphjit(Transformer() + " --out " + dir + "/first", flags);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(Stat(first, "compiles"), 7);
  EXPECT_EQ(Stat(first, "disk_writes"), 7);
  EXPECT_EQ(Entries(dir + "/cache").size(), 7u);
  auto second = RunGraphjit(Transformer() + " --out " + dir + "/second", flags);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(Stat(second, "compiles"), 0);
  EXPECT_EQ(Stat(second, "disk_hits"), 7);
  EXPECT_EQ(Stat(second, "disk_writes"), 0);
  EXPECT_EQ(Slurp(dir + "/second/Identity.npy"), Slurp(dir + "/first/Identity.npy"));
  // Another binary, or the same one rebuilt from other code, has another build id: it
  // never takes these entries (checked here through the signature's other parts: a
  // session on another CPU target).
  auto other = RunGraphjit(Transformer() + " --out " + dir + "/other",
                           "GRAPHJIT_FLAGS='--cache_dir=" + dir + "/cache --jit_cpu=x86-64-v3'");
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(Stat(other, "compiles"), 7);
  EXPECT_EQ(Stat(other, "disk_hits"), 0);
}

// On the GPU (here the CUDA emulator) the entry is the module's PTX: the second process
// loads it into the driver without compiling.
TEST(DiskCacheCli, GpuCodeIsKeptToo) {
  const std::string dir = testing::TempDir();
  const std::string flags = "GRAPHJIT_FLAGS='--cache_dir=" + dir + "/cache --device=gpu-emu'";
  auto first = RunGraphjit(Transformer() + " --out " + dir + "/first", flags);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  // (One run: each cluster's first call launches its kernels one by one, before any capture.)
  EXPECT_GT(Stat(first, "gpu_launches"), 0);
  EXPECT_EQ(Stat(first, "graph_launches"), 0);
  EXPECT_EQ(Stat(first, "disk_writes"), Stat(first, "compiles"));
  const std::vector<std::string> entries = Entries(dir + "/cache");
  ASSERT_FALSE(entries.empty());
  EXPECT_NE(Slurp(entries[0]).find(".target sm_"), std::string::npos);
  auto second = RunGraphjit(Transformer() + " --out " + dir + "/second", flags);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(Stat(second, "compiles"), 0);
  EXPECT_EQ(Stat(second, "disk_hits"), static_cast<int64_t>(entries.size()));
  EXPECT_EQ(Slurp(dir + "/second/Identity.npy"), Slurp(dir + "/first/Identity.npy"));
}

// A GEMM's cuBLASLt algorithm, timed by the first process (the emulator's stand-in offers
// three for k = 256), is kept with its kernel: the second process times nothing and
// computes the same bits; autotuning off is another target, whose kernel takes the
// heuristic's first algorithm untimed.
TEST(DiskCacheCli, GemmAlgorithmsAreKeptToo) {
  const std::string dir = testing::TempDir();
  testing::GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 256});
  std::vector<float> w(256 * 24), x(9 * 256);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37 * i);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.11 * i);
  b.Const("w", testing::MakeFloat(Shape{256, 24}, w));
  b.Op("y", "MatMul", {"x", "w"});
  b.Op("r", "Relu", {"y"});
  ASSERT_TRUE(WriteGraphDefFile(b.graph_def(), dir + "/g.pbtxt").ok());
  ASSERT_TRUE(WriteNpy(dir + "/x.npy", testing::MakeFloat(Shape{9, 256}, x)).ok());
  auto run = [&](const std::string& out, const std::string& flags) {
    return RunGraphjit(
        "run " + dir + "/g.pbtxt --feed x=" + dir + "/x.npy --fetch r --jit on --stats --out " + dir + "/" + out,
        "GRAPHJIT_FLAGS='--cache_dir=" + dir + "/cache --device=gpu-emu --gpu_tf32=off --min_cluster_size=1" + flags + "'");
  };
  auto first = run("first", "");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(Stat(first, "gemms_autotuned"), 1);
  EXPECT_EQ(Stat(first, "disk_writes"), 1);
  const std::vector<std::string> entries = Entries(dir + "/cache");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(std::regex_search(Slurp(entries[0]), std::regex("graphjit library algorithms: [012] -1\n")))
      << "the GEMM's algorithm, then the ReLU's kernel";
  auto second = run("second", "");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(Stat(second, "gemms_autotuned"), 0);
  EXPECT_EQ(Stat(second, "compiles"), 0);
  EXPECT_EQ(Stat(second, "disk_hits"), 1);
  EXPECT_EQ(Slurp(dir + "/second/r.npy"), Slurp(dir + "/first/r.npy"));
  auto untuned = run("untuned", " --gpu_autotune=off");
  ASSERT_EQ(untuned.exit_code, 0) << untuned.err;
  EXPECT_EQ(Stat(untuned, "gemms_autotuned"), 0);
  EXPECT_EQ(Stat(untuned, "compiles"), 1);
  EXPECT_EQ(Entries(dir + "/cache").size(), 2u);
  const std::vector<double> tuned = Values(dir + "/first", "r"), plain = Values(dir + "/untuned", "r");
  ASSERT_EQ(tuned.size(), 9u * 24u);
  for (size_t i = 0; i < tuned.size(); ++i) {
    double want = 0;
    for (int p = 0; p < 256; ++p) want += static_cast<double>(x[i / 24 * 256 + p]) * w[p * 24 + i % 24];
    want = std::max(want, 0.0);
    EXPECT_NEAR(tuned[i], want, 1e-4) << i;
    EXPECT_NEAR(plain[i], want, 1e-4) << i;
  }
}

// The same for a convolution's cuDNN algorithm (the stand-in offers three for a plain
// forward convolution): kept with the kernel, so a second process times nothing and
// computes the same bits.
TEST(DiskCacheCli, ConvAlgorithmsAreKeptToo) {
  const std::string dir = testing::TempDir();
  testing::GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {-1, 6, 7, 3});
  std::vector<float> w(3 * 3 * 3 * 4), x(2 * 6 * 7 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37 * i);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.11 * i);
  b.Const("w", testing::MakeFloat(Shape{3, 3, 3, 4}, w));
  tensorflow::NodeDef* conv = b.Op("y", "Conv2D", {"x", "w"});
  testing::SetAttrInts(conv, "strides", {1, 1, 1, 1});
  testing::SetAttrString(conv, "padding", "VALID");
  b.Op("r", "Sigmoid", {"y"});
  ASSERT_TRUE(WriteGraphDefFile(b.graph_def(), dir + "/g.pbtxt").ok());
  ASSERT_TRUE(WriteNpy(dir + "/x.npy", testing::MakeFloat(Shape{2, 6, 7, 3}, x)).ok());
  auto run = [&](const std::string& out) {
    return RunGraphjit("run " + dir + "/g.pbtxt --feed x=" + dir + "/x.npy --fetch r --jit on --stats --out " + dir + "/" + out,
                       "GRAPHJIT_FLAGS='--cache_dir=" + dir + "/cache --device=gpu-emu --gpu_tf32=off --min_cluster_size=1'");
  };
  auto first = run("first");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(Stat(first, "convs_autotuned"), 1);
  const std::vector<std::string> entries = Entries(dir + "/cache");
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_TRUE(std::regex_search(Slurp(entries[0]), std::regex("graphjit library algorithms: [012] -1\n")))
      << "the convolution's algorithm, then the sigmoid's kernel";
  auto second = run("second");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(Stat(second, "convs_autotuned"), 0);
  EXPECT_EQ(Stat(second, "compiles"), 0);
  EXPECT_EQ(Stat(second, "disk_hits"), 1);
  EXPECT_EQ(Slurp(dir + "/second/r.npy"), Slurp(dir + "/first/r.npy"));
}

// Every entry damaged one way: each is dropped with one warning, compiled again and
// rewritten; the answers do not change.
TEST(DiskCacheCli, DamagedEntriesAreCompiledAgain) {
  const std::string dir = testing::TempDir();
  const std::string flags = "GRAPHJIT_FLAGS=--cache_dir=" + dir + "/cache";
  auto first = RunGraphjit(Transformer() + " --out " + dir + "/first", flags);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::map<std::string, std::function<std::string(std::string)>> damage = {
      {"corrupt",
       [](std::string b) {
         b[b.size() / 3] ^= 0x40;
         return b;
       }},
      {"truncated", [](std::string b) { return b.substr(0, b.size() / 2); }},
      {"foreign",
       [](std::string b) {
         return "\x7f"
                "ELF not an entry at all";
       }},
  };
  for (const auto& [what, f] : damage) {
    SCOPED_TRACE(what);
    for (const std::string& path : Entries(dir + "/cache")) Spit(path, f(Slurp(path)));
    auto r = RunGraphjit(Transformer() + " --out " + dir + "/" + what, flags);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(Stat(r, "disk_dropped"), 7);
    EXPECT_EQ(Stat(r, "compiles"), 7);
    EXPECT_EQ(Stat(r, "disk_writes"), 7);
    int warnings = 0;
    for (size_t at = r.err.find("from the kernel cache: "); at != std::string::npos;
         at = r.err.find("from the kernel cache: ", at + 1))
      ++warnings;
    EXPECT_EQ(warnings, 7) << r.err;
    EXPECT_EQ(Slurp(dir + "/" + what + "/Identity.npy"), Slurp(dir + "/first/Identity.npy"));
  }
  auto after = RunGraphjit(Transformer(), flags);
  EXPECT_EQ(Stat(after, "disk_hits"), 7) << after.err;
  EXPECT_EQ(Stat(after, "compiles"), 0);
}

// x -> Neg (n) -> Tanh (t) -> Relu (r), and its input x = [1, -2, 3, -4], in `dir`.
std::string NegTanhRelu(const std::string& dir) {
  testing::GraphBuilder b;
  b.Placeholder("x", DType::kFloat, {4});
  b.Op("n", "Neg", {"x"});
  b.Op("t", "Tanh", {"n"});
  b.Op("r", "Relu", {"t"});
  EXPECT_TRUE(WriteGraphDefFile(b.graph_def(), dir + "/g.pbtxt").ok());
  EXPECT_TRUE(WriteNpy(dir + "/x.npy", testing::MakeFloat(Shape{4}, {1, -2, 3, -4})).ok());
  return "run " + dir + "/g.pbtxt --feed x=" + dir + "/x.npy --jit on --stats";
}

void ExpectNegTanhRelu(const std::string& out, const std::vector<std::string>& fetches) {
  const std::vector<double> x = {1, -2, 3, -4};
  for (const std::string& f : fetches) {
    const std::vector<double> got = Values(out, f);
    ASSERT_EQ(got.size(), 4u) << f;
    for (int i = 0; i < 4; ++i) {
      const double want = f == "n" ? -x[i] : f == "t" ? std::tanh(-x[i]) : std::max(std::tanh(-x[i]), 0.0);
      EXPECT_NEAR(got[i], want, 2e-6) << out << ": " << f << " element " << i;
    }
  }
}

// One cluster body with other outputs, in three processes sharing one cache: each set of
// outputs is its own entry, and every fetch has its own values (the entry of the body
// fetched for n and r gave t the values of n).
TEST(DiskCacheCli, ClustersOfOneBodyWithOtherOutputsAreOtherEntries) {
  const std::string dir = testing::TempDir();
  const std::string run = NegTanhRelu(dir);
  const std::string flags = "GRAPHJIT_FLAGS=--cache_dir=" + dir + "/cache";
  const std::vector<std::vector<std::string>> fetch_sets = {{"r"}, {"n", "r"}, {"t", "r"}};
  for (int round = 0; round < 2; ++round) {  // the second round loads every entry
    for (size_t k = 0; k < fetch_sets.size(); ++k) {
      std::string args = run + " --out " + dir + "/out" + std::to_string(round) + std::to_string(k);
      for (const std::string& f : fetch_sets[k]) args += " --fetch " + f;
      auto r = RunGraphjit(args, flags);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
      EXPECT_EQ(Stat(r, round == 0 ? "compiles" : "disk_hits"), 1);
      EXPECT_EQ(Stat(r, "disk_dropped"), 0);
      ExpectNegTanhRelu(dir + "/out" + std::to_string(round) + std::to_string(k), fetch_sets[k]);
    }
  }
  EXPECT_EQ(Entries(dir + "/cache").size(), 3u);
}

// An entry's parts: its signature, interface and code (the format of jit/disk_cache.cc).
struct EntryParts {
  std::string head, signature, interface, code;
};
EntryParts Split(const std::string& bytes) {
  EntryParts parts;
  size_t at = 8;  // magic, format
  parts.head = bytes.substr(0, at);
  for (std::string* field : {&parts.signature, &parts.interface, &parts.code}) {
    uint64_t size = 0;
    std::memcpy(&size, bytes.data() + at, sizeof size);
    *field = bytes.substr(at + 8, size);
    at += 8 + size;
  }
  return parts;
}
std::string Join(const EntryParts& parts) {
  std::string bytes = parts.head;
  for (const std::string* field : {&parts.signature, &parts.interface, &parts.code}) {
    const uint64_t size = field->size();
    bytes.append(reinterpret_cast<const char*>(&size), sizeof size);
    bytes += *field;
  }
  const uint64_t checksum = Fnv1a(bytes.data(), bytes.size());
  bytes.append(reinterpret_cast<const char*>(&checksum), sizeof checksum);
  return bytes;
}

// A whole, well-formed entry under the right signature whose code is another cluster's (as
// a signature that leaves out what the code depends on would make): its interface tells,
// and it is dropped with a warning, never run.
TEST(DiskCacheCli, AnEntryWhoseCodeIsNotItsClustersIsDropped) {
  const std::string dir = testing::TempDir();
  const std::string run = NegTanhRelu(dir);
  const std::string flags = "GRAPHJIT_FLAGS=--cache_dir=" + dir + "/cache";
  ASSERT_EQ(RunGraphjit(run + " --fetch r", flags).exit_code, 0);
  const std::string r_only = Entries(dir + "/cache").at(0);
  ASSERT_EQ(RunGraphjit(run + " --fetch t --fetch r", flags).exit_code, 0);
  std::string t_and_r;
  for (const std::string& path : Entries(dir + "/cache"))
    if (path != r_only) t_and_r = path;
  ASSERT_FALSE(t_and_r.empty());
  // The (t, r) entry with the (r) entry's interface and code.
  EntryParts forged = Split(Slurp(t_and_r));
  const EntryParts other = Split(Slurp(r_only));
  ASSERT_NE(forged.signature, other.signature);
  EXPECT_NE(forged.interface.find("output 1 "), std::string::npos) << forged.interface;
  EXPECT_EQ(other.interface.find("output 1 "), std::string::npos) << other.interface;
  forged.interface = other.interface;
  forged.code = other.code;
  Spit(t_and_r, Join(forged));
  auto r = RunGraphjit(run + " --fetch t --fetch r --out " + dir + "/out", flags);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("from the kernel cache: its code is not this cluster's: the code's '"), std::string::npos) << r.err;
  EXPECT_EQ(Stat(r, "disk_dropped"), 1);
  EXPECT_EQ(Stat(r, "disk_hits"), 0);
  EXPECT_EQ(Stat(r, "compiles"), 1);
  EXPECT_EQ(Stat(r, "disk_writes"), 1);
  ExpectNegTanhRelu(dir + "/out", {"t", "r"});
}

// Two processes filling one empty directory at once: both run, nothing is torn, and a
// third finds every kernel.
TEST(DiskCacheCli, TwoProcessesWriteAtOnce) {
  const std::string dir = testing::TempDir();
  const std::string flags = "GRAPHJIT_FLAGS=--cache_dir=" + dir + "/cache";
  testing::CommandResult a, b;
  std::thread other([&] { b = RunGraphjit(Transformer() + " --out " + dir + "/b", flags); });
  a = RunGraphjit(Transformer() + " --out " + dir + "/a", flags);
  other.join();
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(Stat(a, "disk_dropped") + Stat(b, "disk_dropped"), 0);
  EXPECT_EQ(Stat(a, "disk_hits") + Stat(a, "compiles"), 7);
  EXPECT_EQ(Slurp(dir + "/a/Identity.npy"), Slurp(dir + "/b/Identity.npy"));
  EXPECT_EQ(Entries(dir + "/cache").size(), 7u);  // and no temporary files
  auto third = RunGraphjit(Transformer(), flags);
  EXPECT_EQ(Stat(third, "disk_hits"), 7) << third.err;
  EXPECT_EQ(Stat(third, "compiles"), 0);
  EXPECT_EQ(Stat(third, "disk_dropped"), 0);
}

}  // namespace
}  // namespace graphjit
