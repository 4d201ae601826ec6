// The frontend API on in-memory sources: parseContract + buildModule (+ ir::verify), profile
// chains, diagnostics with their locations; and loadSources on files for imports.
#include "compiler/Frontend.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <gtest/gtest.h>

namespace msc {
namespace {

class Frontend : public ::testing::Test {
protected:
  // Parses each buffer (the first is the main file) and builds the module; null on any error.
  std::optional<ir::Module> compile(std::vector<std::pair<std::string, std::string>> files,
                                    const ParseLimits &limits = {}) {
    SourceSet sources;
    for (auto &[name, text] : files) {
      unsigned id = sm.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, name), llvm::SMLoc());
      std::unique_ptr<ast::File> file = parseContract(id, sm, diags, limits);
      if (!file)
        return std::nullopt;
      sources.files.push_back(std::move(file));
    }
    if (diags.hasErrors())
      return std::nullopt;
    auto module = buildModule(sources, diags);
    if (module) {
      EXPECT_TRUE(ir::verify(*module).empty());
    }
    return module;
  }
  std::optional<ir::Module> compile(std::string text) { return compile({{"main.msc", std::move(text)}}); }

  std::vector<DiagCode> codes() const {
    std::vector<DiagCode> out;
    for (const Diagnostic &d : consumer.diags)
      out.push_back(d.code);
    return out;
  }
  ResolvedLoc where(size_t i) const { return resolve(consumer.diags.at(i).loc, &sm); }

  static std::string readFile(llvm::StringRef path) {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    EXPECT_TRUE(bool(buffer)) << path.str();
    return buffer ? (*buffer)->getBuffer().str() : std::string();
  }

  llvm::SourceMgr sm;
  CollectingConsumer consumer;
  DiagnosticEngine diags{&sm, consumer};
};

TEST_F(Frontend, TypicalContractWithTheStdlibFromMemory) {
  std::string stdlib = readFile(MSC_SOURCE_DIR "/stdlib/profiles/mlvm.msc");
  std::string contract = readFile(MSC_SOURCE_DIR "/examples/contracts/qwen-vl-chat.msc");
  auto module = compile({{"qwen-vl-chat.msc", contract}, {"mlvm.msc", stdlib}});
  ASSERT_TRUE(module) << (consumer.diags.empty() ? "" : consumer.diags[0].message);
  EXPECT_TRUE(consumer.diags.empty());
  ASSERT_EQ(module->contracts.size(), 1u);
  const ir::Contract &c = module->contracts[0];
  EXPECT_EQ(c.name, "qwen_vl_train");
  EXPECT_EQ(c.profile, "mlvm_light");
  EXPECT_EQ(c.chain, (std::vector<std::string>{"mlvm_light", "mlvm_base"}));
  ASSERT_EQ(c.body.roles.size(), 3u);
  EXPECT_EQ(c.body.roles[0].fields.cpu_cores->value, (std::vector<uint32_t>{2, 3, 4, 5}));
  EXPECT_EQ(c.body.faultTolerance.heartbeat->value.value, 200000000u); // 200ms, from mlvm_base
  EXPECT_EQ(c.body.faultTolerance.heartbeat->origin.declaration, "profile mlvm_base");
  EXPECT_EQ(c.body.scaling.scale_up_below->value.value, 70000);
  EXPECT_EQ(c.body.scaling.density_deviation->value.value, 150000u);
  EXPECT_EQ(module->profiles.size(), 4u);
  EXPECT_TRUE(module->profile("mlvm_base")->imported);
}

TEST_F(Frontend, ThreeLevelChainWithContractOverrides) {
  auto module = compile(R"(
    profile base { cpu_cores = 2; rdma_qps = 1; nvme_queues = 1; scaling { window = 10s; windows = 3; } }
    profile mid extends base { rdma_qps = 2; scaling { window = 20s; } }
    profile top extends mid { cpu_cores = 4; }
    contract c uses profile top { nvme_queues = 8; io_topology { data { cpu_cores = [1]; } } }
  )");
  ASSERT_TRUE(module);
  const ir::Profile *top = module->profile("top");
  ASSERT_TRUE(top);
  EXPECT_EQ(top->chain, (std::vector<std::string>{"top", "mid", "base"}));
  EXPECT_EQ(top->base, "mid");
  const ir::Contract &c = module->contracts.at(0);
  EXPECT_EQ(c.chain, (std::vector<std::string>{"top", "mid", "base"}));
  const ir::ComputeFields &f = c.body.compute;
  EXPECT_EQ(f.cpu_cores->value, 4);
  EXPECT_EQ(f.cpu_cores->origin.declaration, "profile top");
  EXPECT_EQ(f.rdma_qps->value, 2);
  EXPECT_EQ(f.rdma_qps->origin.declaration, "profile mid");
  EXPECT_EQ(f.nvme_queues->value, 8);
  EXPECT_EQ(f.nvme_queues->origin.declaration, "contract c");
  EXPECT_EQ(c.body.scaling.window->value.value, 20000000000u);
  EXPECT_EQ(c.body.scaling.windows->origin.declaration, "profile base");
  // Origins keep source ranges, so later diagnostics can point at the line that set a value.
  ResolvedLoc at = resolve(f.rdma_qps->origin.range, &sm);
  EXPECT_EQ(at.line, 3u);
  EXPECT_EQ(resolve(f.rdma_qps->origin.fieldRange, &sm).column, 32u);
}

TEST_F(Frontend, NormalisesUnits) {
  auto module = compile(R"(
    contract c {
      gpu_memory = 1.5GiB;
      io_topology { d { cpu_cores = [0..2, 7]; memory_pool = hugepages(2MiB, count = 4); io_limit = 2.5Gbps;
                        gpu = 10000:00:04.0; pcie_domain = "10000:00"; rdma_port = "mlx5_1:2"; } }
      fault_tolerance { recovery_point = every(30min); heartbeat = 1.5ms; }
      scaling { throttle_at = 70.5C; density_deviation = 12.5%; }
    })");
  ASSERT_TRUE(module);
  const ir::Body &b = module->contracts.at(0).body;
  EXPECT_EQ(b.compute.gpu_memory->value.value, 1610612736u);
  const ir::RoleFields &r = b.roles.at(0).fields;
  EXPECT_EQ(r.cpu_cores->value, (std::vector<uint32_t>{0, 1, 2, 7}));
  EXPECT_EQ(r.memory_pool->value, (ir::HugepagePool{ir::Bytes{2u << 20}, 4}));
  EXPECT_EQ(r.io_limit->value.value, 2500000000u);
  EXPECT_EQ(r.gpu->value.form, ir::GpuRef::Form::Pci);
  EXPECT_EQ(r.gpu->value.pci, (PciAddress{0x10000, 0, 4, 0}));
  EXPECT_EQ(r.pcie_domain->value, (PciBus{0x10000, 0}));
  EXPECT_EQ(r.rdma_port->value, (ir::RdmaPortRef{"mlx5_1", 2}));
  EXPECT_EQ(b.faultTolerance.recovery_point->value.interval.value, 1800000000000u);
  EXPECT_EQ(b.faultTolerance.heartbeat->value.value, 1500000u);
  EXPECT_EQ(b.scaling.throttle_at->value.value, 70500);
  EXPECT_EQ(b.scaling.density_deviation->value.value, 125000u);
}

TEST_F(Frontend, GpuWithoutDomainIsRemembered) {
  auto module = compile("contract c { io_topology { d { gpu = 81:00.0; } } }");
  ASSERT_TRUE(module);
  const ir::GpuRef &gpu = module->contracts.at(0).body.roles.at(0).fields.gpu->value;
  EXPECT_EQ(gpu.pci, (PciAddress{0, 0x81, 0, 0}));
  EXPECT_FALSE(gpu.domainGiven);
}

TEST_F(Frontend, InheritanceCycleIsReportedOnce) {
  EXPECT_FALSE(compile(R"(
profile a extends b { cpu_cores = 2; }
profile b extends c { }
profile c extends a { }
contract x uses profile b { io_topology { d { cpu_cores = [1]; } } }
)"));
  ASSERT_EQ(codes(), (std::vector<DiagCode>{DiagCode::ERR_SEM_003}));
  EXPECT_EQ(consumer.diags[0].message, "profile 'a' inherits from itself");
  EXPECT_EQ(where(0).line, 2u);
  EXPECT_EQ(where(0).column, 19u);
}

TEST_F(Frontend, SelfInheritance) {
  EXPECT_FALSE(compile("profile p extends p { }"));
  ASSERT_EQ(codes(), (std::vector<DiagCode>{DiagCode::ERR_SEM_003}));
}

TEST_F(Frontend, UnknownProfileSuggestsAnotherProfileButNeverItself) {
  EXPECT_FALSE(compile("profile light { }\nprofile p extends lightt { }\nprofile q extends p2 { }"));
  ASSERT_EQ(codes(), (std::vector<DiagCode>{DiagCode::ERR_SEM_002, DiagCode::ERR_SEM_002}));
  ASSERT_EQ(consumer.diags[0].notes.size(), 1u);
  EXPECT_EQ(consumer.diags[0].notes[0].message, "did you mean 'light'?");
  // 'p2' is one edit from 'p' (a fine suggestion for q); what must never come is a profile itself.
  for (const DiagNote &note : consumer.diags[1].notes)
    EXPECT_NE(note.message, "did you mean 'q'?");
}

TEST_F(Frontend, UnknownFieldHasAFixItOnANote) {
  EXPECT_FALSE(compile("contract c {\n  io_topology { d { cpu_cores = [1]; numa_nod = 1; } }\n}"));
  ASSERT_EQ(codes(), (std::vector<DiagCode>{DiagCode::ERR_SEM_004}));
  const Diagnostic &d = consumer.diags[0];
  EXPECT_EQ(d.message, "unknown field 'numa_nod' in role 'd'");
  EXPECT_TRUE(d.fixits.empty()) << "fix-its for a guess belong on the note";
  ASSERT_EQ(d.notes.size(), 1u);
  ASSERT_EQ(d.notes[0].fixits.size(), 1u);
  EXPECT_EQ(d.notes[0].fixits[0].replacement, "numa_node");
  ResolvedLoc at = where(0);
  EXPECT_EQ(at.line, 2u);
  EXPECT_EQ(at.column, 38u);
  EXPECT_EQ(at.endColumn, 46u);
}

TEST_F(Frontend, AFieldErrorDoesNotCascadeIntoAMissingResource) {
  EXPECT_FALSE(compile("contract c { io_topology { d { cpu_cores = [3..1]; } } }"));
  EXPECT_EQ(codes(), (std::vector<DiagCode>{DiagCode::ERR_SEM_014}));
}

TEST_F(Frontend, ContractsOfImportedFilesAreNotCompiled) {
  auto module = compile({{"main.msc", "profile p { cpu_cores = 1; }"},
                         {"lib.msc", "contract lib_contract { io_topology { d { cpu_cores = [1]; } } }"}});
  ASSERT_TRUE(module);
  EXPECT_TRUE(module->contracts.empty());
}

TEST_F(Frontend, SyntaxErrorsRecover) {
  EXPECT_FALSE(compile("profile a { cpu_cores = 2 }\nprofile b { x: 1; }\nprofile c { y = ; }\n"));
  EXPECT_EQ(codes(), (std::vector<DiagCode>{DiagCode::ERR_SYN_001, DiagCode::ERR_SYN_001, DiagCode::ERR_SYN_001}));
  EXPECT_EQ(where(0).line, 1u);
  EXPECT_EQ(where(1).line, 2u);
  EXPECT_EQ(where(2).line, 3u);
  ASSERT_EQ(consumer.diags[0].fixits.size(), 1u);
  EXPECT_EQ(consumer.diags[0].fixits[0].replacement, ";");
}

TEST_F(Frontend, EmptyInput) {
  EXPECT_FALSE(compile("  // nothing\n /* at all */\n"));
  ASSERT_EQ(codes(), (std::vector<DiagCode>{DiagCode::ERR_SYN_005}));
  EXPECT_EQ(consumer.diags[0].loc.file, "main.msc");
}

TEST_F(Frontend, NestingLimitIsConfigurable) {
  ParseLimits limits;
  limits.maxNesting = 3;
  EXPECT_TRUE(compile({{"ok.msc", "profile p { scaling { window = 1s; } }"}}, limits));
  EXPECT_FALSE(compile({{"deep.msc", "profile p { x = [[[1]]]; }"}}, limits));
  ASSERT_EQ(codes(), (std::vector<DiagCode>{DiagCode::ERR_SYN_004}));
  EXPECT_EQ(consumer.diags[0].message, "nesting deeper than 3 levels");
  EXPECT_EQ(where(0).column, 19u);
}

TEST(CheckSourceBytes, RefusesOversizedBinaryAndNonUtf8Input) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  ParseLimits limits;
  limits.maxBytes = 8;
  EXPECT_TRUE(checkSourceBytes("12345678", "ok", diags, limits));
  EXPECT_TRUE(checkSourceBytes("größe", "utf8", diags, limits));
  EXPECT_FALSE(checkSourceBytes("123456789", "big", diags, limits));
  EXPECT_FALSE(checkSourceBytes(llvm::StringRef("a\nb\0c", 5), "nul", diags, limits));
  EXPECT_FALSE(checkSourceBytes("ab\n\n\xff", "latin1", diags, limits));
  EXPECT_FALSE(checkSourceBytes("ab\xc3", "cut", diags, limits));
  ASSERT_EQ(consumer.diags.size(), 4u);
  EXPECT_EQ(consumer.diags[0].code, DiagCode::ERR_SYN_007);
  EXPECT_EQ(consumer.diags[0].message, "file is too large (9 bytes; the limit is 8)");
  EXPECT_EQ(consumer.diags[0].loc.file, "big");
  EXPECT_EQ(consumer.diags[1].message, "file is not UTF-8 text (byte 0x00 at offset 3)");
  EXPECT_EQ(consumer.diags[1].loc.line, 2u);
  EXPECT_EQ(consumer.diags[2].message, "file is not UTF-8 text (byte 0xff at offset 4)");
  EXPECT_EQ(consumer.diags[2].loc.line, 3u);
  EXPECT_EQ(consumer.diags[3].message, "file is not UTF-8 text (byte 0xc3 at offset 2)");
}

TEST_F(Frontend, AstKeepsRangesAndSpellings) {
  unsigned id = sm.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy("import \"x.msc\";\nprofile p extends q { a = 1.5GiB; s { b = [1, 2..3]; } }",
                                           "ast.msc"),
      llvm::SMLoc());
  auto file = parseContract(id, sm, diags);
  ASSERT_TRUE(file);
  ASSERT_EQ(file->imports.size(), 1u);
  EXPECT_EQ(file->imports[0].path, "x.msc");
  ASSERT_EQ(file->declarations.size(), 1u);
  const ast::Declaration &p = *file->declarations[0];
  EXPECT_EQ(p.kind, ast::Declaration::Kind::Profile);
  EXPECT_EQ(p.base, "q");
  ASSERT_EQ(p.body.members.size(), 2u);
  const ast::Value &a = *p.body.members[0].assignment->value;
  EXPECT_EQ(a.kind, ast::Value::Kind::Number);
  EXPECT_EQ(a.text, "1.5");
  EXPECT_EQ(a.unit, "GiB");
  EXPECT_EQ(resolve(a.unitRange, &sm).column, 30u);
  const ast::Section &s = *p.body.members[1].section;
  EXPECT_EQ(s.name, "s");
  const ast::Value &list = *s.body->members[0].assignment->value;
  ASSERT_EQ(list.elements.size(), 2u);
  EXPECT_EQ(list.elements[1]->kind, ast::Value::Kind::Range);
  EXPECT_EQ(list.elements[1]->lowText, "2");
  EXPECT_EQ(list.elements[1]->highText, "3");

  std::string dumped;
  llvm::raw_string_ostream os(dumped);
  ast::dump(*file, sm, os);
  EXPECT_EQ(dumped, "File ast.msc\n"
                    "  Import <1:8> \"x.msc\"\n"
                    "  Profile <2:9> p extends q\n"
                    "    Assign <2:23> a\n"
                    "      Number <2:27> 1.5 unit=GiB\n"
                    "    Section <2:35> s\n"
                    "      Assign <2:39> b\n"
                    "        List <2:43>\n"
                    "          Number <2:44> 1\n"
                    "          Range <2:47> 2..3\n");
}

// Files on disk, for imports: a scratch directory removed at the end.
class FrontendFiles : public Frontend {
protected:
  void SetUp() override { ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("msc-frontend-test", dir)); }
  void TearDown() override { llvm::sys::fs::remove_directories(dir); }
  std::string write(llvm::StringRef name, llvm::StringRef text) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    EXPECT_FALSE(ec);
    os << text;
    return path.str().str();
  }
  llvm::SmallString<256> dir;
};

TEST_F(FrontendFiles, ImportCycle) {
  std::string a = write("a.msc", "import \"b.msc\";\nprofile pa { }\n");
  write("b.msc", "import \"a.msc\";\nprofile pb { }\n");
  FrontendOptions options;
  auto sources = loadSources(a, options, sm, diags);
  ASSERT_TRUE(sources);
  ASSERT_EQ(codes(), (std::vector<DiagCode>{DiagCode::ERR_SEM_011}));
  EXPECT_EQ(consumer.diags[0].message, "import cycle: a.msc -> b.msc -> a.msc");
  EXPECT_TRUE(llvm::StringRef(where(0).file).ends_with("b.msc"));
  EXPECT_EQ(where(0).line, 1u);
  EXPECT_EQ(where(0).column, 8u);
}

TEST_F(FrontendFiles, DiamondImportsLoadEachFileOnce) {
  std::string main = write("main.msc", "import \"l.msc\";\nimport \"r.msc\";\nprofile m extends l { }\n");
  write("l.msc", "import \"s.msc\";\nprofile l extends s { }\n");
  write("r.msc", "import \"s.msc\";\nprofile r extends s { }\n");
  write("s.msc", "profile s { cpu_cores = 1; }\n");
  FrontendOptions options;
  auto module = compileContractFile(main, options, sm, diags);
  ASSERT_TRUE(module);
  EXPECT_TRUE(consumer.diags.empty());
  EXPECT_EQ(module->profiles.size(), 4u);
  EXPECT_EQ(module->profile("m")->chain, (std::vector<std::string>{"m", "l", "s"}));
}

TEST_F(FrontendFiles, MissingImportListsTheSearchPath) {
  std::string main = write("main.msc", "import \"nope.msc\";\nprofile p { }\n");
  FrontendOptions options;
  options.includeDirs = {"inc"};
  options.stdlibDir = "std";
  auto sources = loadSources(main, options, sm, diags);
  ASSERT_TRUE(sources);
  ASSERT_EQ(codes(), (std::vector<DiagCode>{DiagCode::ERR_SEM_010}));
  ASSERT_EQ(consumer.diags[0].notes.size(), 1u);
  EXPECT_EQ(consumer.diags[0].notes[0].message, "searched: '" + dir.str().str() + "', 'inc', 'std'");
}

TEST_F(FrontendFiles, IncludeDirsAndStdlib) {
  write("site.msc", "profile site { rdma_qps = 3; }\n");
  std::string main = write("sub-main.msc", "import \"profiles/mlvm.msc\";\nimport \"site.msc\";\n"
                                           "profile both extends mlvm_heavy { }\n");
  llvm::SmallString<256> elsewhere(dir);
  llvm::sys::path::append(elsewhere, "elsewhere");
  ASSERT_FALSE(llvm::sys::fs::create_directory(elsewhere));
  llvm::SmallString<256> moved(elsewhere);
  llvm::sys::path::append(moved, "main.msc");
  ASSERT_FALSE(llvm::sys::fs::rename(main, moved));
  FrontendOptions options;
  options.includeDirs = {dir.str().str()};
  options.stdlibDir = MSC_SOURCE_DIR "/stdlib";
  auto module = compileContractFile(moved, options, sm, diags);
  ASSERT_TRUE(module) << (consumer.diags.empty() ? "" : consumer.diags[0].message);
  EXPECT_TRUE(module->profile("site"));
  EXPECT_EQ(module->profile("both")->chain, (std::vector<std::string>{"both", "mlvm_heavy", "mlvm_base"}));
}

TEST_F(FrontendFiles, SourceHashCoversImportsAndChangesWithThem) {
  write("lib.msc", "profile l { cpu_cores = 1; }\n");
  std::string main = write("main.msc", "import \"lib.msc\";\nprofile p extends l { }\n");
  FrontendOptions options;
  auto first = loadSources(main, options, sm, diags);
  auto again = loadSources(main, options, sm, diags);
  write("lib.msc", "profile l { cpu_cores = 2; }\n");
  auto changed = loadSources(main, options, sm, diags);
  ASSERT_TRUE(first && again && changed);
  EXPECT_EQ(first->files.size(), 2u);
  EXPECT_EQ(first->hash, again->hash);
  EXPECT_NE(first->hash, changed->hash);
}

TEST_F(FrontendFiles, UnreadableInputs) {
  FrontendOptions options;
  EXPECT_FALSE(loadSources(dir.str().str() + "/missing.msc", options, sm, diags));
  EXPECT_FALSE(loadSources(dir.str(), options, sm, diags));
  ASSERT_EQ(codes(), (std::vector<DiagCode>{DiagCode::ERR_DRV_001, DiagCode::ERR_DRV_001}));
  EXPECT_EQ(consumer.diags[1].message, "cannot read '" + dir.str().str() + "': is a directory");
}


// A file held in memory (a controller's submission) is read before the disk, imports the disk's
// files by the search path, and has no directory of its own to look beside: a file of the same
// name next to the process does not stand in for an import.
TEST_F(FrontendFiles, AFileInMemoryIsReadFirstAndImportsThroughTheSearchPathOnly) {
  write("lib.msc", "profile from_disk { cpu_cores = 2; }\n");
  std::map<std::string, std::string> memory = {
      {"job.msc", "import \"lib.msc\";\n"
                  "contract job uses profile from_disk { io_topology { r { cpu_cores = [1]; } } }\n"}};
  FrontendOptions options;
  options.memoryFiles = &memory;
  options.includeDirs = {dir.str().str()};
  auto module = compileContractFile("job.msc", options, sm, diags);
  ASSERT_TRUE(module) << (consumer.diags.empty() ? "" : consumer.diags[0].message);
  ASSERT_EQ(module->contracts.size(), 1u);
  EXPECT_EQ(module->contracts[0].profile, "from_disk");

  FrontendOptions noSearchPath;
  noSearchPath.memoryFiles = &memory;
  llvm::SmallString<256> cwd;
  ASSERT_FALSE(llvm::sys::fs::current_path(cwd));
  ASSERT_FALSE(llvm::sys::fs::set_current_path(dir)); // lib.msc is in the working directory now
  auto without = compileContractFile("job.msc", noSearchPath, sm, diags);
  ASSERT_FALSE(llvm::sys::fs::set_current_path(cwd));
  EXPECT_FALSE(without);
  EXPECT_EQ(codes().back(), DiagCode::ERR_SEM_010);
}

} // namespace
} // namespace msc
