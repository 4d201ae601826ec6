// Token streams as bytes: a u32 count, then per token six u32 (type, channel, start, stop, line,
// column), little-endian. EOF's type (size_t -1) and an empty token's stop (start - 1, which is
// size_t -1 at offset 0) are stored as u32 -1 and widened back.
#include "compiler/TokenCache.h"

#include <llvm/Support/Endian.h>

namespace msc {
namespace {

constexpr llvm::StringLiteral kMagic = "MSCTOK01";
constexpr size_t kFields = 6, kTokenBytes = kFields * 4;

uint32_t narrow(size_t v) { return v == static_cast<size_t>(-1) ? UINT32_MAX : static_cast<uint32_t>(v); }
size_t widen(uint32_t v) { return v == UINT32_MAX ? static_cast<size_t>(-1) : v; }

} // namespace

std::string encodeTokens(const std::vector<antlr4::Token *> &tokens) {
  std::string out(kMagic);
  out.resize(kMagic.size() + 4 + tokens.size() * kTokenBytes);
  char *p = out.data() + kMagic.size();
  llvm::support::endian::write32le(p, static_cast<uint32_t>(tokens.size()));
  p += 4;
  for (const antlr4::Token *t : tokens) {
    for (size_t v : {t->getType(), t->getChannel(), t->getStartIndex(), t->getStopIndex(), t->getLine(),
                     t->getCharPositionInLine()}) {
      llvm::support::endian::write32le(p, narrow(v));
      p += 4;
    }
  }
  return out;
}

std::unique_ptr<CachedTokenSource> CachedTokenSource::decode(llvm::StringRef bytes, antlr4::CharStream &input,
                                                             size_t maxType) {
  if (!bytes.consume_front(kMagic) || bytes.size() < 4)
    return nullptr;
  uint32_t count = llvm::support::endian::read32le(bytes.data());
  bytes = bytes.drop_front(4);
  if (count == 0 || bytes.size() != uint64_t(count) * kTokenBytes)
    return nullptr;
  std::unique_ptr<CachedTokenSource> source(new CachedTokenSource(input));
  source->tokens_.reserve(count);
  const size_t size = input.size();
  const char *p = bytes.data();
  for (uint32_t i = 0; i < count; ++i, p += kTokenBytes) {
    size_t f[kFields];
    for (size_t k = 0; k < kFields; ++k)
      f[k] = widen(llvm::support::endian::read32le(p + 4 * k));
    auto [type, channel, start, stop, line, column] = f;
    bool eof = type == antlr4::Token::EOF;
    if (eof != (i + 1 == count))
      return nullptr; // EOF last, and only last
    if (!eof && (type > maxType || start >= size || (stop != start - 1 && (stop < start || stop >= size))))
      return nullptr;
    if (eof && start > size)
      return nullptr;
    auto token = std::make_unique<antlr4::CommonToken>(std::make_pair(source.get(), &input), type, channel, start, stop);
    token->setLine(line);
    token->setCharPositionInLine(column);
    source->tokens_.push_back(std::move(token));
  }
  return source;
}

std::unique_ptr<antlr4::Token> CachedTokenSource::nextToken() {
  // After EOF the lexer keeps answering EOF; so does this.
  if (next_ + 1 < tokens_.size())
    return std::move(tokens_[next_++]);
  return std::make_unique<antlr4::CommonToken>(tokens_.back().get());
}

// CommonToken's constructor asks its source for the position while decode() is still filling
// tokens_: 0 then (decode sets each token's own line and column right after).
size_t CachedTokenSource::getLine() const {
  if (tokens_.empty())
    return 0;
  return next_ < tokens_.size() ? tokens_[next_]->getLine() : tokens_.back()->getLine();
}

size_t CachedTokenSource::getCharPositionInLine() {
  if (tokens_.empty())
    return 0;
  return next_ < tokens_.size() ? tokens_[next_]->getCharPositionInLine() : tokens_.back()->getCharPositionInLine();
}

} // namespace msc
