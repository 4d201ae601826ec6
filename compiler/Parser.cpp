#include "compiler/Parser.h"

#include "ContractLexer.h"
#include "ContractParser.h"
#include "compiler/AstBuilder.h"
#include "compiler/TokenCache.h"
#include "support/ContentCache.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/ConvertUTF.h>
#include <llvm/Support/SourceMgr.h>

#include <regex>

namespace msc {

using CP = msc_grammar::ContractParser;

bool checkSourceBytes(llvm::StringRef bytes, llvm::StringRef where, DiagnosticEngine &diags,
                      const ParseLimits &limits) {
  Location file{{}, where.str(), 0};
  if (bytes.size() > limits.maxBytes) {
    diags.report(DiagCode::ERR_SYN_007, file) << static_cast<uint64_t>(bytes.size())
                                              << static_cast<uint64_t>(limits.maxBytes);
    return false;
  }
  size_t nul = bytes.find('\0');
  const llvm::UTF8 *begin = reinterpret_cast<const llvm::UTF8 *>(bytes.data());
  const llvm::UTF8 *end = begin + bytes.size();
  const llvm::UTF8 *bad = nullptr;
  if (nul != llvm::StringRef::npos) {
    bad = begin + nul;
  } else if (!llvm::isLegalUTF8String(&begin, end)) {
    bad = begin; // isLegalUTF8String advances to the first bad byte
  }
  if (bad) {
    size_t offset = static_cast<size_t>(bad - reinterpret_cast<const llvm::UTF8 *>(bytes.data()));
    file.line = 1 + static_cast<unsigned>(bytes.take_front(offset).count('\n'));
    diags.report(DiagCode::ERR_SYN_006, file) << llvm::toHex(llvm::ArrayRef<uint8_t>(bad, 1), /*LowerCase=*/true)
                                              << static_cast<uint64_t>(offset);
    return false;
  }
  return true;
}

namespace {

// Maps ANTLR code-point indices back to byte offsets (they differ once non-ASCII text appears).
class CodePointMap {
public:
  explicit CodePointMap(llvm::StringRef text) : base_(text.data()) {
    bool ascii = llvm::all_of(text, [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    if (ascii)
      return;
    for (size_t i = 0; i < text.size(); ++i)
      if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80)
        offsets_.push_back(static_cast<uint32_t>(i));
    offsets_.push_back(static_cast<uint32_t>(text.size()));
  }
  llvm::SMLoc operator()(size_t index) const {
    if (offsets_.empty())
      return llvm::SMLoc::getFromPointer(base_ + index);
    size_t clamped = std::min(index, offsets_.size() - 1);
    return llvm::SMLoc::getFromPointer(base_ + offsets_[clamped]);
  }

private:
  const char *base_;
  std::vector<uint32_t> offsets_;
};

// Friendly names for the lexer's symbolic token names in ANTLR's messages.
std::string friendlyTokens(std::string message) {
  static const std::pair<const char *, const char *> names[] = {
      {"PCI_ADDR", "PCI address"}, {"NUMBER", "number"},  {"IDENT", "identifier"},
      {"STRING", "string"},        {"<EOF>", "end of file"}, {"UNTERMINATED_STRING", "string"},
      {"ERROR_CHAR", "character"}};
  for (const auto &[from, to] : names) {
    std::regex word(from[0] == '<' ? std::string(from) : std::string("\\b") + from + "\\b");
    message = std::regex_replace(message, word, to);
  }
  return message;
}

// Rewrites ANTLR's messages into our style: "expected X, found 'Y'".
std::string rewriteSyntaxMessage(const std::string &msg) {
  std::smatch m;
  static const std::regex mismatched("^mismatched input (.*) expecting (.*)$");
  static const std::regex extraneous("^extraneous input (.*) expecting (.*)$");
  static const std::regex missing("^missing (.*) at (.*)$");
  static const std::regex noViable("^no viable alternative at input (.*)$");
  if (std::regex_match(msg, m, mismatched))
    return friendlyTokens("expected " + m[2].str() + ", found " + m[1].str());
  if (std::regex_match(msg, m, extraneous))
    return friendlyTokens("unexpected " + m[1].str() + ", expected " + m[2].str());
  if (std::regex_match(msg, m, missing))
    return friendlyTokens("missing " + m[1].str() + " before " + m[2].str());
  if (std::regex_match(msg, m, noViable)) {
    // ANTLR quotes the whole run of input it tried; the last token is the one that failed.
    return friendlyTokens("unexpected input " + m[1].str());
  }
  return friendlyTokens(msg);
}

class SyntaxErrorListener : public antlr4::BaseErrorListener {
public:
  SyntaxErrorListener(DiagnosticEngine &diags, const CodePointMap &map, const std::vector<size_t> &lexErrorLines)
      : diags_(diags), map_(map), lexErrorLines_(lexErrorLines) {}

  void syntaxError(antlr4::Recognizer *recognizer, antlr4::Token *offending, size_t line, size_t,
                   const std::string &msg, std::exception_ptr) override {
    // A lexical error already explains the trouble on this line; one message is enough.
    for (size_t l : lexErrorLines_)
      if (line == l || line == l + 1)
        return;
    ++count_;
    llvm::SMRange range;
    if (offending && offending->getStartIndex() != INVALID_INDEX && offending->getType() != antlr4::Token::EOF)
      range = {map_(offending->getStartIndex()), map_(offending->getStopIndex() + 1)};
    else if (offending && offending->getStartIndex() != INVALID_INDEX)
      range = {map_(offending->getStartIndex()), map_(offending->getStartIndex())};
    bool yamlColon = offending && offending->getText() == ":";
    std::string message = yamlColon ? "expected '=' to set a field, found ':'" : rewriteSyntaxMessage(msg);
    auto *parser = dynamic_cast<antlr4::Parser *>(recognizer);
    // "cpu_cores = 2<newline> rdma_qps = 1;" parses "rdma_qps" as the unit of 2; a unit is never
    // on the next line, so the user forgot the ';' after the number.
    if (parser) {
      antlr4::Token *unit = parser->getTokenStream()->LT(-1);
      antlr4::Token *number = parser->getTokenStream()->LT(-2);
      if (unit && number && unit->getType() == msc_grammar::ContractLexer::IDENT &&
          number->getType() == msc_grammar::ContractLexer::NUMBER && unit->getLine() > number->getLine()) {
        llvm::SMLoc after = map_(number->getStopIndex() + 1);
        diags_.report(DiagCode::ERR_SYN_001, llvm::SMRange(after, after))
                .fixIt({{after, after}, ";"})
            << ("missing ';' after '" + number->getText() + "'");
        return;
      }
    }
    DiagBuilder builder = diags_.report(DiagCode::ERR_SYN_001, range);
    builder << message;
    // Two mistakes with an obvious intent get fix-its: a missing ';' and a YAML-style ':'.
    if (parser && msg.rfind("missing ';'", 0) == 0) {
      antlr4::Token *previous = parser->getTokenStream()->LT(-1);
      if (previous && previous->getStopIndex() != INVALID_INDEX) {
        llvm::SMLoc after = map_(previous->getStopIndex() + 1);
        builder.fixIt({{after, after}, ";"});
      }
    } else if (yamlColon) {
      builder.fixIt({range, "="});
    }
  }
  unsigned count() const { return count_; }

private:
  DiagnosticEngine &diags_;
  const CodePointMap &map_;
  const std::vector<size_t> &lexErrorLines_;
  unsigned count_ = 0;
};

} // namespace

std::unique_ptr<ast::File> parseContract(unsigned bufferId, llvm::SourceMgr &sm, DiagnosticEngine &diags,
                                         const ParseLimits &limits, const ContentCache *cache) {
  const llvm::MemoryBuffer *buffer = sm.getMemoryBuffer(bufferId);
  llvm::StringRef text = buffer->getBuffer();
  llvm::StringRef name = buffer->getBufferIdentifier();
  if (!checkSourceBytes(text, name, diags, limits))
    return nullptr;

  CodePointMap map(text);
  antlr4::ANTLRInputStream input(text.data(), text.size());
  msc_grammar::ContractLexer lexer(&input);
  lexer.removeErrorListeners();
  // A file this build has lexed before (by its bytes) gets its token stream from the cache.
  constexpr llvm::StringLiteral kCacheKind = "tokens";
  std::string cacheKey = cache && !cache->disabled() ? ContentCache::key(kCacheKind, text) : std::string();
  std::unique_ptr<CachedTokenSource> cached;
  if (!cacheKey.empty())
    if (std::optional<std::string> bytes = cache->load(kCacheKind, cacheKey))
      cached = CachedTokenSource::decode(*bytes, input, lexer.getVocabulary().getMaxTokenType());
  antlr4::CommonTokenStream tokens(cached ? static_cast<antlr4::TokenSource *>(cached.get()) : &lexer);
  tokens.fill();

  // Lexical errors, nesting depth and emptiness are checked on the token stream, before the
  // recursive-descent parser can recurse on hostile input.
  std::vector<size_t> lexErrorLines;
  unsigned depth = 0;
  bool anyToken = false;
  bool tooDeep = false;
  for (antlr4::Token *token : tokens.getTokens()) {
    size_t type = token->getType();
    if (type == antlr4::Token::EOF)
      break;
    anyToken = true;
    llvm::SMRange range{map(token->getStartIndex()), map(token->getStopIndex() + 1)};
    if (type == msc_grammar::ContractLexer::ERROR_CHAR) {
      lexErrorLines.push_back(token->getLine());
      std::string shown = token->getText();
      diags.report(DiagCode::ERR_SYN_003, range) << llvm::StringRef(shown);
    } else if (type == msc_grammar::ContractLexer::UNTERMINATED_STRING) {
      lexErrorLines.push_back(token->getLine());
      diags.report(DiagCode::ERR_SYN_002, range);
    } else if (type == msc_grammar::ContractLexer::LBRACE || type == msc_grammar::ContractLexer::LBRACKET ||
               type == msc_grammar::ContractLexer::LPAREN) {
      if (++depth > limits.maxNesting && !tooDeep) {
        tooDeep = true;
        diags.report(DiagCode::ERR_SYN_004, range) << limits.maxNesting;
      }
    } else if (type == msc_grammar::ContractLexer::RBRACE || type == msc_grammar::ContractLexer::RBRACKET ||
               type == msc_grammar::ContractLexer::RPAREN) {
      if (depth)
        --depth;
    }
  }
  if (tooDeep)
    return nullptr;
  if (!anyToken && lexErrorLines.empty()) {
    diags.report(DiagCode::ERR_SYN_005, Location{{}, name.str(), 0});
    return nullptr;
  }

  msc_grammar::ContractParser parser(&tokens);
  parser.removeErrorListeners();
  SyntaxErrorListener listener(diags, map, lexErrorLines);
  parser.addErrorListener(&listener);
  CP::FileContext *tree = parser.file();
  if (listener.count() || !lexErrorLines.empty())
    return nullptr;

  // Only a stream that parsed without a problem is kept: a cached stream then always parses.
  if (!cached && !cacheKey.empty())
    cache->store(kCacheKind, cacheKey, encodeTokens(tokens.getTokens()));

  AstBuilder builder([&map](size_t index) { return map(index); });
  std::unique_ptr<ast::File> file = builder.transformFile(*tree);
  file->path = name.str();
  return file;
}

} // namespace msc
