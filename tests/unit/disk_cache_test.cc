// jit/disk_cache: compiled kernels kept on disk across processes (--cache_dir). The
// directory's entries on their own, then whole processes of the command line sharing one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "jit/disk_cache.h"
#include "jit/jit.h"
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
    cache.Store("sig-a", std::string("code\0with nul", 13));
    cache.Store("sig-b", "");
  }
  DiskCache again(dir, 1 << 20);
  EXPECT_EQ(again.Load("sig-a"), std::string("code\0with nul", 13));
  EXPECT_EQ(again.Load("sig-b"), std::string());
  EXPECT_FALSE(again.Load("sig-c").has_value());
  EXPECT_EQ(Entries(dir).size(), 2u);  // no temporary files left
}

// Each way an entry can be bad: it is dropped (removed) and reads as absent.
TEST(DiskCache, CorruptTruncatedAndForeignEntriesAreDropped) {
  const std::string dir = testing::TempDir() + "/cache";
  DiskCache cache(dir, 1 << 20);
  const std::string code(1000, 'x');
  const std::map<std::string, std::function<std::string(std::string)>> damage = {
      {"a flipped byte", [](std::string b) { b[b.size() / 2] ^= 1; return b; }},
      {"truncated", [](std::string b) { return b.substr(0, b.size() - 9); }},
      {"empty", [](std::string) { return std::string(); }},
      {"longer", [](std::string b) { return b + "tail"; }},
      {"foreign", [](std::string b) { return std::string(b.size(), 'z'); }},
      {"another format", [](std::string b) { b[4] = 9; return b; }},
  };
  const int64_t dropped = GetDiskCacheStats().dropped;
  for (const auto& [what, f] : damage) {
    SCOPED_TRACE(what);
    cache.Store("sig", code);
    const std::string path = cache.PathOf("sig");
    Spit(path, f(Slurp(path)));
    EXPECT_FALSE(cache.Load("sig").has_value());
    EXPECT_FALSE(fs::exists(path));
  }
  EXPECT_EQ(GetDiskCacheStats().dropped - dropped, static_cast<int64_t>(damage.size()));
  // A whole entry of another signature in this one's file (a hash collision, or a file
  // copied in): not this signature's code.
  cache.Store("other", code);
  fs::copy_file(cache.PathOf("other"), cache.PathOf("sig"), fs::copy_options::overwrite_existing);
  EXPECT_FALSE(cache.Load("sig").has_value());
  EXPECT_EQ(cache.Load("other"), code);
}

TEST(DiskCache, TheLeastRecentlyUsedEntriesGoFirstBeyondTheBound) {
  const std::string dir = testing::TempDir() + "/cache";
  const std::string code(3000, 'c');
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
  EXPECT_GT(Stat(first, "gpu_launches"), 0);
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

// Every entry damaged one way: each is dropped with one warning, compiled again and
// rewritten; the answers do not change.
TEST(DiskCacheCli, DamagedEntriesAreCompiledAgain) {
  const std::string dir = testing::TempDir();
  const std::string flags = "GRAPHJIT_FLAGS=--cache_dir=" + dir + "/cache";
  auto first = RunGraphjit(Transformer() + " --out " + dir + "/first", flags);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::map<std::string, std::function<std::string(std::string)>> damage = {
      {"corrupt", [](std::string b) { b[b.size() / 3] ^= 0x40; return b; }},
      {"truncated", [](std::string b) { return b.substr(0, b.size() / 2); }},
      {"foreign", [](std::string b) { return "\x7f" "ELF not an entry at all"; }},
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
