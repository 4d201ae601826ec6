// The token cache of the parser (compiler/TokenCache.h): a file parsed with the cache gives the
// same AST as without it, a second parse reads the entry, a corrupt or forged entry is ignored and
// rebuilt, a file with errors leaves nothing, and a disabled cache is never touched.
#include "compiler/Frontend.h"
#include "compiler/TokenCache.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <gtest/gtest.h>

#include <fstream>

namespace msc {
namespace {

std::string readFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(bool(buffer)) << path.str();
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

class TokenCacheTest : public ::testing::Test {
protected:
  TokenCacheTest() {
    llvm::SmallString<128> dir;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("msc-token-cache", dir));
    dir_ = std::string(dir);
  }
  ~TokenCacheTest() override { llvm::sys::fs::remove_directories(dir_); }

  // The AST dump of `text` parsed with `cache` (null: none); "" when the parse failed.
  static std::string parse(const std::string &text, const ContentCache *cache, unsigned *errors = nullptr) {
    llvm::SourceMgr sm;
    CollectingConsumer consumer;
    DiagnosticEngine diags(&sm, consumer);
    unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, "f.msc"), llvm::SMLoc());
    std::unique_ptr<ast::File> file = parseContract(id, sm, diags, {}, cache);
    if (errors)
      *errors = static_cast<unsigned>(consumer.diags.size());
    if (!file)
      return "";
    std::string out;
    llvm::raw_string_ostream os(out);
    ast::dump(*file, sm, os);
    return out;
  }
  std::string entry(const std::string &text) const {
    return ContentCache(dir_).entryPath("tokens", ContentCache::key("tokens", text));
  }
  bool isEmpty() const {
    std::error_code ec;
    return llvm::sys::fs::directory_iterator(dir_, ec) == llvm::sys::fs::directory_iterator();
  }

  std::string dir_;
};

TEST_F(TokenCacheTest, SameAstWithAndWithoutTheCacheForTheStdlibAndExamples) {
  ContentCache cache(dir_);
  ASSERT_FALSE(executableBuildId().empty()) << "the test binary has no build ID";
  for (const char *path : {"/stdlib/profiles/mlvm.msc", "/stdlib/profiles/models.msc",
                           "/examples/contracts/qwen-vl-chat.msc", "/examples/contracts/jureca-a100.msc"}) {
    SCOPED_TRACE(path);
    std::string text = readFile(std::string(MSC_SOURCE_DIR) + path);
    std::string reference = parse(text, nullptr);
    ASSERT_FALSE(reference.empty());
    EXPECT_EQ(parse(text, &cache), reference); // lexed, then stored
    ASSERT_TRUE(llvm::sys::fs::exists(entry(text)));
    EXPECT_EQ(parse(text, &cache), reference); // from the cache
  }
}

TEST_F(TokenCacheTest, SecondParseReadsTheEntry) {
  // Proof that the entry is read: tokens lexed from another text of the same length, stored under
  // this text's key, split this text where the other one's tokens were ("ab" becomes "a").
  ContentCache cache(dir_);
  std::string text = "contract ab { }";
  std::string other = "contract a  { }";
  ASSERT_EQ(text.size(), other.size());
  std::string bytes;
  {
    // What the parser stores for `other`, taken from its own entry.
    ASSERT_FALSE(parse(other, &cache).empty());
    auto stored = cache.load("tokens", ContentCache::key("tokens", other));
    ASSERT_TRUE(stored);
    bytes = *stored;
  }
  cache.store("tokens", ContentCache::key("tokens", text), bytes);
  std::string fromCache = parse(text, &cache);
  ASSERT_FALSE(fromCache.empty());
  EXPECT_EQ(fromCache.find("ab"), std::string::npos) << fromCache;
  EXPECT_NE(parse(text, nullptr).find("ab"), std::string::npos);
}

TEST_F(TokenCacheTest, CorruptOrForgedEntryIsIgnoredAndRebuilt) {
  ContentCache cache(dir_);
  std::string text = readFile(MSC_SOURCE_DIR "/examples/contracts/qwen-vl-chat.msc");
  std::string reference = parse(text, &cache);
  ASSERT_FALSE(reference.empty());
  std::string good = readFile(entry(text));
  ASSERT_FALSE(good.empty());

  std::string flipped = good;
  flipped[flipped.size() - 7] ^= 0x01;
  for (const std::string &bad : {flipped, good.substr(0, good.size() / 2), std::string()}) {
    {
      std::ofstream out(entry(text), std::ios::binary | std::ios::trunc);
      out << bad;
    }
    EXPECT_EQ(parse(text, &cache), reference);
    EXPECT_EQ(readFile(entry(text)), good) << "the bad entry was not rebuilt";
  }

  // Intact entries (right key, right checksum) whose tokens do not fit the text: refused too.
  std::string key = ContentCache::key("tokens", text);
  antlr4::CommonToken outside(1);
  outside.setStartIndex(text.size() + 10);
  outside.setStopIndex(text.size() + 20);
  antlr4::CommonToken eof(antlr4::Token::EOF);
  eof.setStartIndex(text.size());
  eof.setStopIndex(text.size() - 1);
  antlr4::CommonToken badType(100000);
  badType.setStartIndex(0);
  badType.setStopIndex(1);
  for (const std::vector<antlr4::Token *> &forged : std::vector<std::vector<antlr4::Token *>>{
           {&outside, &eof}, {&badType, &eof}, {&eof, &eof}, {&badType}}) {
    cache.store("tokens", key, encodeTokens(forged));
    EXPECT_EQ(parse(text, &cache), reference);
    EXPECT_EQ(readFile(entry(text)), good);
  }
}

TEST_F(TokenCacheTest, FileWithErrorsLeavesNothing) {
  ContentCache cache(dir_);
  unsigned errors = 0;
  EXPECT_EQ(parse("contract c { io_topology { d { gpu = ; } }", &cache, &errors), "");
  EXPECT_GT(errors, 0u);
  EXPECT_TRUE(isEmpty());
  // And with the same text again the same diagnostics come (nothing cached to skip them).
  unsigned again = 0;
  parse("contract c { io_topology { d { gpu = ; } }", &cache, &again);
  EXPECT_EQ(again, errors);
}

TEST_F(TokenCacheTest, DisabledCacheIsNotTouched) {
  ContentCache disabled("");
  ASSERT_TRUE(disabled.disabled());
  std::string text = readFile(MSC_SOURCE_DIR "/examples/contracts/qwen-vl-chat.msc");
  EXPECT_EQ(parse(text, &disabled), parse(text, nullptr));
  EXPECT_TRUE(isEmpty());
}

TEST(ContentCacheEnvironment, NoCacheVariableTurnsItOff) {
  ::setenv("MSCALE_CACHE_DIR", "/tmp/msc-cache-env-test", 1);
  ::setenv("MSCALE_NO_CACHE", "1", 1);
  EXPECT_TRUE(ContentCache::fromEnvironment().disabled());
  ::setenv("MSCALE_NO_CACHE", "0", 1);
  EXPECT_EQ(ContentCache::fromEnvironment().directory(), "/tmp/msc-cache-env-test");
  ::unsetenv("MSCALE_NO_CACHE");
  ::unsetenv("MSCALE_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(ContentCache::fromEnvironment().directory(), "/tmp/xdg/mscale");
  ::unsetenv("XDG_CACHE_HOME");
}

} // namespace
} // namespace msc
