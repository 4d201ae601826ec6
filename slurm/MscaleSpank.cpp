// The SPANK plugin: `srun --mscale-contract=train.msc` enforces the contract in every step.
//   srun (local context): resolve the file (option, else MSCALE_CONTRACT), check that it can be read
//     and that it compiles as far as the IR, hand its absolute path to the step's environment.
//   slurmstepd (remote context, root, once per step and node), init_post_opt: compile it against the
//     node's live topology (mscalec, as the job's user), have the node's agent re-check it against what
//     it holds and apply it (mscale-cli contract submit), or only check and print the plan.
//   each task, before exec (task_init_privileged, root): move it into the contract (contract attach)
//     and give it the variables and descriptors (control page, pools) the agent's own workers get.
//   slurmstepd, when the step ends (exit; also after scancel or a crashed task): release it.
// Errors found before the tasks are deferred to task_init_privileged: that is what makes srun's
// exit code nonzero and shows them in the user's terminal (errors in user_init or init_post_opt of
// the remote context do not reach srun; pyxis does the same).
#include "slurm/AgentDescriptors.h"
#include "slurm/HelperProcess.h"
#include "slurm/SlurmDiagnostics.h"
#include "slurm/SpankArguments.h"

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

extern "C" {
// The plugin's identity for slurmstepd and srun, as SPANK_PLUGIN(mscale, 1) declares it in C: Slurm
// loads only a plugin built against its own version (SLURM_VERSION_NUMBER).
extern const char plugin_name[] __attribute__((visibility("default"))) = "mscale";
extern const char plugin_type[] __attribute__((visibility("default"))) = "spank";
extern const unsigned int plugin_version __attribute__((visibility("default"))) = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version __attribute__((visibility("default"))) = 1;
}

namespace {

using namespace msc::slurm;

constexpr const char *kFileVariable = "MSCALE_SLURM_CONTRACT_FILE"; // srun -> the step: the absolute path
constexpr const char *kModeVariable = "MSCALE_SLURM_CONTRACT_MODE"; // "apply" | "check"

// One plugin instance per process (srun, or one slurmstepd per step): plain statics, as SPANK expects.
struct Step {
  PluginConfig config;
  std::string optionValue; // --mscale-contract, as given
  bool optionGiven = false;
  bool checkOnly = false;  // --mscale-contract-check
  bool enabled = false;    // this step has a contract
  std::string file;        // the contract file, absolute
  std::string node;
  std::string stepName;    // "4711.0"
  uid_t uid = 0;
  gid_t gid = 0;
  std::string workDir;     // root's private directory for the plan file
  std::string planPath;
  std::string contract;    // its name once the agent admitted it
  bool admitted = false;
  uint32_t localTasks = 0; // tasks of the step on this node
  uint32_t exitedTasks = 0;
  std::vector<std::string> deferred; // error lines for task_init_privileged
  std::vector<std::string> planLines; // --mscale-contract-check: the node's plan, for the first task to print
};
Step step;

std::string tool(const char *name) { return step.config.bindir + "/" + name; }

std::vector<std::string> cliArgs(std::vector<std::string> args) {
  std::vector<std::string> argv = {tool("mscale-cli"), "contract"};
  argv.insert(argv.end(), args.begin(), args.end());
  if (!step.config.socket.empty())
    argv.push_back("--socket=" + socketForHost(step.config.socket, step.node));
  return argv;
}

HelperResult runTool(std::vector<std::string> argv, bool asUser) {
  HelperRun run;
  run.argv = std::move(argv);
  run.asUser = asUser;
  run.uid = step.uid;
  run.gid = step.gid;
  run.timeoutSeconds = step.config.timeoutSeconds;
  return runHelper(run);
}

// The tool's diagnostics, each line as the user would see it from the tool itself.
void forward(const HelperResult &r, std::vector<std::string> &into) {
  for (const std::string &line : nonEmptyLines(r.err))
    into.push_back("mscale: " + line);
}

// A tool that did not run to an exit status is ERR_SLURM_004; one that exited nonzero has said why,
// and its lines go to the user. A tool that succeeded may still have warned (a contract without a
// profile): those lines go to slurmd's log only, the user saw them from srun's own check.
bool succeeded(const HelperResult &r, const std::string &what, std::vector<std::string> &into) {
  if (r.ran && r.exitStatus == 0) {
    for (const std::string &line : nonEmptyLines(r.err))
      slurm_info("mscale: %s", line.c_str());
    return true;
  }
  forward(r, into);
  if (!r.ran)
    into.push_back(formatSlurmDiag(SlurmDiag::ERR_SLURM_004, {what, step.node, r.problem}));
  return false;
}

std::string hostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0)
    return "?";
  return name;
}

int onContract(int, const char *optarg, int) {
  step.optionValue = optarg ? optarg : "";
  step.optionGiven = true;
  return 0;
}

int onCheck(int, const char *, int) {
  step.checkOnly = true;
  return 0;
}

struct spank_option options[] = {
    {const_cast<char *>("mscale-contract"), const_cast<char *>("FILE"),
     const_cast<char *>("Enforce the MegaScale-Omni contract FILE in every task of the step (default: "
                        "$MSCALE_CONTRACT)"),
     1, 0, onContract},
    {const_cast<char *>("mscale-contract-check"), nullptr,
     const_cast<char *>("Only check the contract on each node and print its plan; apply nothing"), 0, 0, onCheck},
    SPANK_OPTIONS_TABLE_END,
};

// srun: the file must be readable here and compile as far as the IR (syntax, names, units), so
// that a typo fails at once in the user's terminal, before any node is involved.
int resolveLocally() {
  const char *env = std::getenv("MSCALE_CONTRACT");
  // In a task of a contract (an srun inside a step) MSCALE_CONTRACT is the worker's variable, the
  // contract's name, beside MSCALE_ROLES: not a file the user named.
  if (env && std::getenv("MSCALE_ROLES"))
    env = nullptr;
  if (!step.optionGiven && !(env && *env)) {
    if (!step.checkOnly)
      return 0;
    slurm_error("%s", formatSlurmDiag(SlurmDiag::ERR_SLURM_002, {"", "--mscale-contract-check",
                                                                 "no contract to check (give --mscale-contract=FILE "
                                                                 "or MSCALE_CONTRACT)"})
                          .c_str());
    return -1;
  }
  std::string error;
  std::optional<std::string> value = step.optionGiven ? parseContractValue(step.optionValue, "--mscale-contract", error)
                                                      : parseContractValue(env, "MSCALE_CONTRACT", error);
  if (!value) {
    slurm_error("%s", error.c_str());
    return -1;
  }
  char resolved[PATH_MAX];
  struct stat st;
  int fd = realpath(value->c_str(), resolved) ? ::open(resolved, O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    std::string why = fd < 0 ? std::strerror(errno) : "not a regular file";
    if (fd >= 0)
      ::close(fd);
    slurm_error("%s", formatSlurmDiag(SlurmDiag::ERR_SLURM_003, {*value, why}).c_str());
    return -1;
  }
  ::close(fd);
  step.file = resolved;
  std::vector<std::string> argv = {tool("mscalec"), "--emit=ir", "-o", "/dev/null", step.file};
  if (!step.config.stdlib.empty())
    argv.push_back("--stdlib=" + step.config.stdlib);
  step.node = hostName();
  HelperRun run;
  run.argv = argv;
  run.timeoutSeconds = step.config.timeoutSeconds;
  HelperResult r = runHelper(run); // srun already runs as the user
  std::vector<std::string> lines;
  if (!succeeded(r, argv[0], lines)) {
    for (const std::string &l : lines)
      slurm_error("%s", l.c_str());
    return -1;
  }
  // srun's environment is the step's: slurmstepd reads the path and the mode from there.
  if (setenv(kFileVariable, step.file.c_str(), 1) != 0 || setenv(kModeVariable, step.checkOnly ? "check" : "apply", 1) != 0) {
    slurm_error("%s", formatSlurmDiag(SlurmDiag::ERR_SLURM_004, {"setenv " + std::string(kFileVariable), step.node,
                                                                 std::strerror(errno)})
                          .c_str());
    return -1;
  }
  return 0;
}

bool prepareWorkDir() {
  std::string tmpl = "/tmp/mscale-slurm-" + step.stepName + ".XXXXXX";
  if (!mkdtemp(tmpl.data())) {
    step.deferred.push_back(formatSlurmDiag(SlurmDiag::ERR_SLURM_004, {"mkdtemp " + tmpl, step.node, std::strerror(errno)}));
    return false;
  }
  step.workDir = tmpl;
  std::string base = step.file.substr(step.file.rfind('/') + 1);
  if (base.size() > 4 && base.compare(base.size() - 4, 4, ".msc") == 0)
    base.resize(base.size() - 4);
  step.planPath = step.workDir + "/" + base + ".msp";
  return true;
}

bool writePlan(const std::string &bytes) {
  int fd = ::open(step.planPath.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  std::string why;
  if (fd < 0) {
    why = std::strerror(errno);
  } else {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0)
      why = std::strerror(errno);
    else if (size_t(n) != bytes.size())
      why = "short write (" + std::to_string(n) + " of " + std::to_string(bytes.size()) + " bytes)";
    if (::close(fd) != 0 && why.empty())
      why = std::strerror(errno);
  }
  bool ok = why.empty();
  if (!ok)
    step.deferred.push_back(formatSlurmDiag(SlurmDiag::ERR_SLURM_004, {"write " + step.planPath, step.node, why}));
  return ok;
}

// slurmstepd, root, before any task: compile as the user, re-check and apply through the agent.
void enforceOnNode() {
  if (!prepareWorkDir())
    return;
  std::vector<std::string> compile = {tool("mscalec"), "--topology=live", "--emit=plan", "-o", "-", step.file};
  if (!step.config.stdlib.empty())
    compile.push_back("--stdlib=" + step.config.stdlib);
  HelperResult compiled = runTool(compile, /*asUser=*/true);
  if (!succeeded(compiled, compile[0], step.deferred) || !writePlan(compiled.out))
    return;
  std::vector<std::string> submit = {"submit", step.planPath};
  if (step.checkOnly)
    submit.push_back("--check");
  HelperResult submitted = runTool(cliArgs(submit), false);
  if (!succeeded(submitted, tool("mscale-cli"), step.deferred))
    return;
  if (step.checkOnly) {
    HelperResult dump = runTool({tool("mscale-plan"), "dump", step.planPath}, false);
    if (!succeeded(dump, tool("mscale-plan"), step.deferred))
      return;
    // Printed by the first task: slurmstepd's own output does not reach the user's terminal yet.
    step.planLines.push_back("mscale: node '" + step.node + "' can honour " + step.file + "; the plan (nothing applied):");
    for (const std::string &line : nonEmptyLines(dump.out))
      step.planLines.push_back("mscale: " + step.node + ": " + line);
    return;
  }
  // The answer is mscale-cli's own status print; an unreadable one means a mscale-cli of another
  // version than the plugin's (the same bindir holds both, so only a broken install does that).
  std::string error;
  std::optional<std::string> name = parseSubmittedContract(submitted.out, error);
  if (!name) {
    step.deferred.push_back(formatSlurmDiag(SlurmDiag::ERR_SLURM_004, {tool("mscale-cli"), step.node, error}));
    return;
  }
  step.contract = *name;
  step.admitted = true;
}

int initRemote(spank_t sp) {
  char buf[PATH_MAX + 16];
  if (spank_getenv(sp, kFileVariable, buf, sizeof buf) != ESPANK_SUCCESS || !*buf) {
    // srun took the option (its callback runs here too) but the hand-over did not arrive: the step
    // was launched with --export=NONE or a list without it. It must not run without its contract.
    if (step.optionGiven || step.checkOnly) {
      step.enabled = true;
      step.node = hostName();
      step.deferred.push_back(formatSlurmDiag(
          SlurmDiag::ERR_SLURM_004,
          {"srun", step.node,
           std::string("the step's environment lacks ") + kFileVariable +
               " (srun --export=NONE or a list without it; use --export=ALL or add the variable)"}));
    }
    return 0;
  }
  step.file = buf;
  if (spank_getenv(sp, kModeVariable, buf, sizeof buf) == ESPANK_SUCCESS && std::strcmp(buf, "check") == 0)
    step.checkOnly = true;
  uint32_t job = 0, stepId = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_STEPID, &stepId) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_UID, &step.uid) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_GID, &step.gid) != ESPANK_SUCCESS) {
    // Without the job's user nothing may be compiled; the step must not run unconfined either.
    step.enabled = true;
    step.node = hostName();
    step.deferred.push_back(formatSlurmDiag(SlurmDiag::ERR_SLURM_004, {"spank_get_item", step.node,
                                                                       "the step's job id, step id, uid or gid is unknown"}));
    return 0;
  }
  // The batch script and the extern step are not job steps the user launched with the contract.
  if (stepId == SLURM_BATCH_SCRIPT || stepId == SLURM_EXTERN_CONT)
    return 0;
  if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &step.localTasks) != ESPANK_SUCCESS)
    step.localTasks = 0; // then only exit releases
  step.enabled = true;
  step.node = hostName();
  step.stepName = std::to_string(job) + "." + std::to_string(stepId);
  enforceOnNode();
  if (!step.deferred.empty())
    step.deferred.push_back(formatSlurmDiag(SlurmDiag::ERR_SLURM_005, {step.node, step.file, step.stepName}));
  return 0;
}

// The attached task's variables, and the agent's descriptors (its control page, the pools) taken into
// it under their variables, as the agent's own workers inherit them. "" or why not; a descriptor
// already taken stays with the task, which then does not start.
std::string giveTaskItsContract(spank_t sp, const AttachAnswer &answer) {
  for (auto &[k, v] : answer.environment)
    if (spank_setenv(sp, k.c_str(), v.c_str(), 1) != ESPANK_SUCCESS)
      return "cannot set " + k + " in the task's environment";
  for (const FdHandOver &handOver : answer.fds) {
    std::string why;
    int fd = takeAgentDescriptor(handOver, why);
    if (fd < 0)
      return why;
    if (spank_setenv(sp, handOver.variable.c_str(), std::to_string(fd).c_str(), 1) != ESPANK_SUCCESS)
      return "cannot set " + handOver.variable + " in the task's environment";
  }
  return "";
}

// In the task, before exec, as root: into the contract's cgroups and CPUs, with its variables and
// the agent's descriptors.
int attachTask(spank_t sp) {
  int task = -1; // unknown: no task prints the node's messages rather than every one
  if (spank_get_item(sp, S_TASK_ID, &task) != ESPANK_SUCCESS)
    task = -1;
  if (!step.deferred.empty()) {
    if (task == 0) // once per node, not once per task
      for (const std::string &line : step.deferred)
        slurm_error("%s", line.c_str());
    return -1;
  }
  // The plugin's own hand-over from srun is not the task's business (nor a nested srun's).
  spank_unsetenv(sp, kFileVariable);
  spank_unsetenv(sp, kModeVariable);
  if (step.checkOnly) {
    if (task == 0)
      for (const std::string &line : step.planLines)
        slurm_spank_log("%s", line.c_str());
    return 0;
  }
  std::string taskName = std::to_string(task);
  HelperResult r = runTool(cliArgs({"attach", step.contract, "--pid=" + std::to_string(getpid())}), false);
  std::vector<std::string> lines;
  std::string why;
  std::optional<AttachAnswer> answer;
  if (!succeeded(r, tool("mscale-cli"), lines))
    why = r.ran ? "mscale-cli exited with status " + std::to_string(r.exitStatus) : r.problem;
  else if ((answer = parseAttachAnswer(r.out, why)))
    why = giveTaskItsContract(sp, *answer);
  if (why.empty())
    return 0;
  for (const std::string &line : lines)
    slurm_error("%s", line.c_str());
  slurm_error("%s", formatSlurmDiag(SlurmDiag::ERR_SLURM_006, {taskName, step.stepName, step.node, step.contract, why}).c_str());
  return -1;
}

void releaseStep() {
  if (step.admitted) {
    HelperResult r = runTool(cliArgs({"release", step.contract}), false);
    std::vector<std::string> lines;
    if (!succeeded(r, tool("mscale-cli"), lines))
      for (const std::string &line : lines)
        slurm_error("%s", line.c_str());
    step.admitted = false;
  }
  if (!step.planPath.empty())
    ::unlink(step.planPath.c_str());
  if (!step.workDir.empty())
    ::rmdir(step.workDir.c_str());
  step.planPath.clear();
  step.workDir.clear();
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) int slurm_spank_init(spank_t sp, int ac, char **av) {
  spank_context_t context = spank_context();
  if (context != S_CTX_LOCAL && context != S_CTX_REMOTE)
    return 0;
  std::string error;
  std::optional<PluginConfig> config =
      parsePluginArguments(std::vector<std::string>(av, av + ac), MSC_SPANK_DEFAULT_BINDIR, error);
  if (!config) {
    slurm_error("%s", error.c_str());
    return -1;
  }
  step.config = *config;
  for (spank_option *o = options; o->name; ++o)
    if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
      slurm_error("mscale: cannot register option --%s", o->name);
      return -1;
    }
  return 0;
}

__attribute__((visibility("default"))) int slurm_spank_init_post_opt(spank_t sp, int, char **) {
  switch (spank_context()) {
  case S_CTX_LOCAL:
    return resolveLocally();
  case S_CTX_REMOTE:
    return initRemote(sp);
  default:
    return 0;
  }
}

__attribute__((visibility("default"))) int slurm_spank_task_init_privileged(spank_t sp, int, char **) {
  return step.enabled ? attachTask(sp) : 0;
}

// slurmstepd, as each task is reaped: after the last one the contract is released at once. slurmstepd
// reports the tasks' ends to srun only after this, so when srun returns the node no longer holds the
// contract and the job's next step may use it (spank_exit runs later, after srun returned).
__attribute__((visibility("default"))) int slurm_spank_task_exit(spank_t, int, char **) {
  if (spank_context() == S_CTX_REMOTE && step.enabled && ++step.exitedTasks == step.localTasks)
    releaseStep();
  return 0;
}

// The step's end, also after scancel or when tasks never started: whatever task_exit did not release.
__attribute__((visibility("default"))) int slurm_spank_exit(spank_t, int, char **) {
  if (spank_context() == S_CTX_REMOTE && step.enabled)
    releaseStep();
  return 0;
}

} // extern "C"
