#include "compiler/AstBuilder.h"

namespace msc {

using CP = msc_grammar::ContractParser;

llvm::SMRange AstBuilder::rangeOf(antlr4::Token *token) const {
  if (!token || token->getType() == antlr4::Token::EOF || token->getStartIndex() == INVALID_INDEX)
    return {};
  return {map_(token->getStartIndex()), map_(token->getStopIndex() + 1)};
}

llvm::SMRange AstBuilder::rangeOf(antlr4::tree::TerminalNode *node) const {
  return node ? rangeOf(node->getSymbol()) : llvm::SMRange();
}

llvm::SMRange AstBuilder::rangeOf(antlr4::ParserRuleContext *ctx) const {
  if (!ctx || !ctx->getStart())
    return {};
  llvm::SMRange first = rangeOf(ctx->getStart());
  llvm::SMRange last = rangeOf(ctx->getStop());
  if (!first.isValid())
    return {};
  if (!last.isValid() || last.End.getPointer() < first.Start.getPointer())
    return first;
  return {first.Start, last.End};
}

std::string unescapeString(llvm::StringRef quoted) {
  if (quoted.size() >= 2 && quoted.front() == '"' && quoted.back() == '"')
    quoted = quoted.drop_front().drop_back();
  std::string out;
  out.reserve(quoted.size());
  for (size_t i = 0; i < quoted.size(); ++i) {
    char c = quoted[i];
    if (c != '\\' || i + 1 == quoted.size()) {
      out += c;
      continue;
    }
    char next = quoted[++i];
    switch (next) {
    case 'n': out += '\n'; break;
    case 't': out += '\t'; break;
    default: out += next; break;
    }
  }
  return out;
}

std::unique_ptr<ast::File> AstBuilder::transformFile(CP::FileContext &ctx) {
  auto file = std::make_unique<ast::File>();
  for (CP::ImportDeclContext *imp : ctx.importDecl()) {
    if (!imp->STRING())
      continue;
    file->imports.push_back({unescapeString(imp->STRING()->getText()), rangeOf(imp->STRING())});
  }
  for (CP::DeclarationContext *decl : ctx.declaration()) {
    std::unique_ptr<ast::Declaration> d;
    if (decl->profileDecl())
      d = transformProfile(*decl->profileDecl());
    else if (decl->contractDecl())
      d = transformContract(*decl->contractDecl());
    if (d)
      file->declarations.push_back(std::move(d));
  }
  return file;
}

std::unique_ptr<ast::Declaration> AstBuilder::transformProfile(CP::ProfileDeclContext &ctx) {
  if (!ctx.name)
    return nullptr;
  auto decl = std::make_unique<ast::Declaration>();
  decl->kind = ast::Declaration::Kind::Profile;
  decl->name = ctx.name->getText();
  decl->nameRange = rangeOf(ctx.name);
  if (ctx.base) {
    decl->base = ctx.base->getText();
    decl->baseRange = rangeOf(ctx.base);
  }
  decl->range = rangeOf(&ctx);
  transformBlock(ctx.block(), decl->body);
  return decl;
}

std::unique_ptr<ast::Declaration> AstBuilder::transformContract(CP::ContractDeclContext &ctx) {
  if (!ctx.name)
    return nullptr;
  auto decl = std::make_unique<ast::Declaration>();
  decl->kind = ast::Declaration::Kind::Contract;
  decl->name = ctx.name->getText();
  decl->nameRange = rangeOf(ctx.name);
  if (ctx.profile) {
    decl->base = ctx.profile->getText();
    decl->baseRange = rangeOf(ctx.profile);
  }
  decl->range = rangeOf(&ctx);
  transformBlock(ctx.block(), decl->body);
  return decl;
}

void AstBuilder::transformBlock(CP::BlockContext *ctx, ast::Block &out) {
  if (!ctx)
    return;
  out.range = rangeOf(ctx);
  for (CP::MemberContext *member : ctx->member()) {
    ast::Member m;
    if (CP::AssignmentContext *a = member->assignment()) {
      if (!a->ident())
        continue;
      auto assignment = std::make_unique<ast::Assignment>();
      assignment->field = a->ident()->getText();
      assignment->fieldRange = rangeOf(a->ident());
      assignment->value = transformValue(a->value());
      assignment->range = rangeOf(a);
      if (!assignment->value)
        continue; // the parser already reported what is missing
      m.assignment = std::move(assignment);
    } else if (CP::SectionContext *s = member->section()) {
      if (!s->ident())
        continue;
      auto section = std::make_unique<ast::Section>();
      section->name = s->ident()->getText();
      section->nameRange = rangeOf(s->ident());
      section->body = std::make_unique<ast::Block>();
      transformBlock(s->block(), *section->body);
      m.section = std::move(section);
    } else {
      continue;
    }
    out.members.push_back(std::move(m));
  }
}

ast::ValuePtr AstBuilder::transformValue(CP::ValueContext *ctx) {
  if (!ctx)
    return nullptr;
  if (ctx->range())
    return transformRange(*ctx->range());
  if (ctx->quantity())
    return transformQuantity(*ctx->quantity());
  if (ctx->list())
    return transformList(*ctx->list());
  if (ctx->call())
    return transformCall(*ctx->call());
  auto value = std::make_unique<ast::Value>();
  value->range = rangeOf(ctx);
  if (ctx->STRING()) {
    value->kind = ast::Value::Kind::String;
    value->text = unescapeString(ctx->STRING()->getText());
  } else if (ctx->TRUE() || ctx->FALSE()) {
    value->kind = ast::Value::Kind::Bool;
    value->boolean = ctx->TRUE() != nullptr;
    value->text = value->boolean ? "true" : "false";
  } else if (ctx->PCI_ADDR()) {
    value->kind = ast::Value::Kind::PciAddress;
    value->text = ctx->PCI_ADDR()->getText();
  } else if (ctx->ident()) {
    value->kind = ast::Value::Kind::Ident;
    value->text = ctx->ident()->getText();
  } else {
    return nullptr;
  }
  return value;
}

ast::ValuePtr AstBuilder::transformQuantity(CP::QuantityContext &ctx) {
  if (!ctx.NUMBER())
    return nullptr;
  auto value = std::make_unique<ast::Value>();
  value->kind = ast::Value::Kind::Number;
  value->range = rangeOf(&ctx);
  value->text = ctx.NUMBER()->getText();
  if (ctx.unit()) {
    value->unit = ctx.unit()->getText();
    value->unitRange = rangeOf(ctx.unit());
  }
  return value;
}

ast::ValuePtr AstBuilder::transformRange(CP::RangeContext &ctx) {
  if (ctx.NUMBER().size() != 2)
    return nullptr;
  auto value = std::make_unique<ast::Value>();
  value->kind = ast::Value::Kind::Range;
  value->range = rangeOf(&ctx);
  value->lowText = ctx.NUMBER(0)->getText();
  value->lowRange = rangeOf(ctx.NUMBER(0));
  value->highText = ctx.NUMBER(1)->getText();
  value->highRange = rangeOf(ctx.NUMBER(1));
  if (ctx.low) {
    value->lowUnit = ctx.low->getText();
    value->lowUnitRange = rangeOf(ctx.low);
  }
  if (ctx.high) {
    value->highUnit = ctx.high->getText();
    value->highUnitRange = rangeOf(ctx.high);
  }
  return value;
}

ast::ValuePtr AstBuilder::transformList(CP::ListContext &ctx) {
  auto value = std::make_unique<ast::Value>();
  value->kind = ast::Value::Kind::List;
  value->range = rangeOf(&ctx);
  for (CP::ValueContext *element : ctx.value())
    if (ast::ValuePtr v = transformValue(element))
      value->elements.push_back(std::move(v));
  return value;
}

ast::ValuePtr AstBuilder::transformCall(CP::CallContext &ctx) {
  if (!ctx.ident())
    return nullptr;
  auto value = std::make_unique<ast::Value>();
  value->kind = ast::Value::Kind::Call;
  value->range = rangeOf(&ctx);
  value->callee = ctx.ident()->getText();
  for (CP::ArgumentContext *arg : ctx.argument()) {
    ast::Argument a;
    if (arg->ident()) {
      a.name = arg->ident()->getText();
      a.nameRange = rangeOf(arg->ident());
    }
    a.value = transformValue(arg->value());
    if (a.value)
      value->arguments.push_back(std::move(a));
  }
  return value;
}

} // namespace msc
