// The lexer's output for a source file, kept in the content cache (support/ContentCache.h) so that
// a file already lexed by this build (the stdlib profiles: most of their bytes are comments, which
// ANTLR's lexer walks character by character) is not lexed again. The grammar stays the only
// definition of the language: a cached stream is exactly what the generated lexer produced for the
// same bytes, and the parser runs on it as it would on the lexer. Only Parser.cpp uses this.
#pragma once

#include <antlr4-runtime.h>
#include <llvm/ADT/StringRef.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace msc {

// Every token of a stream, EOF included: type, channel, start, stop, line, column.
std::string encodeTokens(const std::vector<antlr4::Token *> &tokens);

// Hands out decoded tokens in order, as the lexer would; the tokens read their text from `input`.
class CachedTokenSource : public antlr4::TokenSource {
public:
  // nullopt unless `bytes` is a whole encoding whose tokens all lie inside `input`, have a type up
  // to `maxType` and end with EOF.
  static std::unique_ptr<CachedTokenSource> decode(llvm::StringRef bytes, antlr4::CharStream &input,
                                                   size_t maxType);

  std::unique_ptr<antlr4::Token> nextToken() override;
  size_t getLine() const override;
  size_t getCharPositionInLine() override;
  antlr4::CharStream *getInputStream() override { return &input_; }
  std::string getSourceName() override { return input_.getSourceName(); }
  antlr4::TokenFactory<antlr4::CommonToken> *getTokenFactory() override {
    return antlr4::CommonTokenFactory::DEFAULT.get();
  }

private:
  explicit CachedTokenSource(antlr4::CharStream &input) : input_(input) {}

  antlr4::CharStream &input_;
  std::vector<std::unique_ptr<antlr4::CommonToken>> tokens_;
  size_t next_ = 0;
};

} // namespace msc
