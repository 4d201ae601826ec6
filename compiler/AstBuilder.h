// Private to the frontend: turns ANTLR parse-tree contexts into AST nodes. Included only by
// Parser.cpp and AstBuilder.cpp, so the generated headers stay inside compiler/.
#pragma once

#include "ContractParser.h"
#include "compiler/AST.h"

#include <llvm/Support/SMLoc.h>

#include <functional>

namespace msc {

class AstBuilder {
public:
  // Maps a token's code-point index in the input stream to a source location.
  using LocationMap = std::function<llvm::SMLoc(size_t codePointIndex)>;
  explicit AstBuilder(LocationMap map) : map_(std::move(map)) {}

  std::unique_ptr<ast::File> transformFile(msc_grammar::ContractParser::FileContext &ctx);

private:
  std::unique_ptr<ast::Declaration> transformProfile(msc_grammar::ContractParser::ProfileDeclContext &ctx);
  std::unique_ptr<ast::Declaration> transformContract(msc_grammar::ContractParser::ContractDeclContext &ctx);
  void transformBlock(msc_grammar::ContractParser::BlockContext *ctx, ast::Block &out);
  ast::ValuePtr transformValue(msc_grammar::ContractParser::ValueContext *ctx);
  ast::ValuePtr transformQuantity(msc_grammar::ContractParser::QuantityContext &ctx);
  ast::ValuePtr transformRange(msc_grammar::ContractParser::RangeContext &ctx);
  ast::ValuePtr transformList(msc_grammar::ContractParser::ListContext &ctx);
  ast::ValuePtr transformCall(msc_grammar::ContractParser::CallContext &ctx);

  llvm::SMRange rangeOf(antlr4::ParserRuleContext *ctx) const;
  llvm::SMRange rangeOf(antlr4::Token *token) const;
  llvm::SMRange rangeOf(antlr4::tree::TerminalNode *node) const;

  LocationMap map_;
};

// Unescapes a STRING token's text (with its quotes).
std::string unescapeString(llvm::StringRef quoted);

} // namespace msc
