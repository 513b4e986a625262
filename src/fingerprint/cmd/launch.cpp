#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/cmd/launch.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/hook/archive_steps.hpp>
#include <fingerprint/hook/build_id.hpp>
#include <fingerprint/hook/link_inputs.hpp>
#include <fingerprint/hook/recorder.hpp>
#include <fingerprint/util/process.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fcntl.h>
#include <malloc.h>
#include <string_view>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"project", OptionKind::value, "P", "the project; required"},
  {"version", OptionKind::value, "V", "the project's version"},
  {"target", OptionKind::value, "T", "the target whose link rule this is; required"},
  {"output", OptionKind::value, "FILE", "the file the rule produces; required"},
  {"type", OptionKind::value, "TYPE", "EXECUTABLE, STATIC_LIBRARY, SHARED_LIBRARY or MODULE_LIBRARY"},
  {"build-dir", OptionKind::value, "D", "the build tree (its build ids are counted there); required"},
  {"record-after", OptionKind::value, "TOOL", "record only after the command run by TOOL (ranlib for archives)"},
  {"archive-steps",
   OptionKind::value,
   "FILE",
   "where an archive's earlier steps kept their commands (else its own file)"},
  {"depfile-driver", OptionKind::values, "CC", "compiler drivers that accept -Wl,--dependency-file="},
  {"args-dir", OptionKind::value, "DIR", "per-target settings written by the CMake module at generate time"},
  {"required", OptionKind::flag, {}, "fail the build step when recording fails (else warn)"},
  {"algorithm", OptionKind::value, "A", "digest algorithm (default sha256)"},
};

// Everything that reads what the command left. Throws only what the
// layers below throw; record_launch turns that into a warning too.
Expected<size_t>
record_step(const Args& args,
            const LaunchPlan& plan,
            Context& context,
            std::string& build_id,
            std::vector<std::string>& file_errors)
{
  const std::string target = *args.value("target");
  const std::string absolute_output = absolute_path(*args.value("output"));
  const std::string absolute_build_dir = absolute_path(*args.value("build-dir"));
  auto warn = [&](const std::string& warning) { print_warning(context, target + ": " + warning); };
  // In a recorder, the links of one build tool run share what they digested.
  std::shared_ptr<digest::BuildMemo> memo;
  if (digest::BuildMemo::enabled()) {
    memo = digest::BuildMemo::of(hook::build_tool_run(), plan.algorithm);
  }
  auto found = hook::collect_link_inputs(
    plan.command, plan.depfile, absolute_output, absolute_build_dir, plan.links, warn, memo.get());
  hook::TargetSettings settings;
  if (auto dir = args.value("args-dir")) {
    auto loaded = hook::load_target_settings(*dir, target, absolute_output);
    if (!loaded) {
      return loaded.error();
    }
    settings = std::move(*loaded);
  }
  if (!plan.links) {
    // The objects the steps before this one put in (ar).
    // Kept by the build's shell (the CMake module's function with Ninja) in
    // the file it names, else by fingerprint-launch in the pair's own.
    // It is removed once read, so nothing but such a file is taken.
    const auto named = args.value("archive-steps");
    if (named && !named->ends_with(hook::k_archive_steps_suffix)) {
      return Error{"--archive-steps " + *named + ": not a file of an archive's steps (*" + hook::k_archive_steps_suffix
                   + ")"};
    }
    const std::string steps =
      named ? absolute_path(*named) : hook::archive_steps_path(absolute_build_dir, target, *args.value("output"));
    for (const auto& step : hook::take_archive_steps(steps)) {
      auto members = hook::collect_link_inputs(step, "", absolute_output, absolute_build_dir, false, warn, memo.get());
      found.objects.insert(found.objects.end(), members.objects.begin(), members.objects.end());
    }
  }
  size_t unknown = 0;
  const auto compiled = hook::compile_inputs(found.objects, unknown, absolute_build_dir);
  if (unknown > 0) {
    print_warning(context,
                  target + ": what the compiles of " + std::to_string(unknown) + " of its "
                    + std::to_string(found.objects.size())
                    + " objects read is not known (no dependency file of its compile, no record in Ninja's deps "
                      "log for the object as it is, and no compile hook record); a clean build records it");
  }

  hook::RecordRequest request;
  request.project = *args.value("project");
  request.version = args.value("version").value_or("");
  request.target = target;
  request.build_dir = absolute_build_dir;
  request.config = settings.config;
  request.algorithm = plan.algorithm;
  request.spool = !args.flag("required");
  request.produced = {absolute_output};
  for (const auto& path : settings.produces) {
    request.produced.push_back(absolute_path(path));
  }
  // A header deleted since its compile, or a library of the interface not
  // built (yet) is said, not fatal: the rest is still worth recording.
  auto add = [&](const std::vector<std::string>& paths, store::Role role, bool may_be_gone) {
    for (const auto& path : paths) {
      request.consumed.push_back({absolute_path(path), role, may_be_gone});
    }
  };
  add(found.inputs, store::Role::link, false);
  add(compiled, store::Role::compile, true);
  if (!plan.links) {
    add(settings.interface, store::Role::interface, true);
  }
  add(settings.consumes, store::Role::declared, false);
  auto root = store_path(args);
  if (!root) {
    return root.error();
  }
  request.store_root = *root;
  request.build_id = hook::build_id_from_environment();
  if (request.build_id.empty()) {
    auto counted = hook::build_id_from_invocation(absolute_build_dir);
    if (!counted) {
      return counted.error();
    }
    request.build_id = *counted;
  }
  build_id = request.build_id;
  request.memo = memo;
  return hook::record(
    request,
    [&](const Error& error) { file_errors.push_back(error.message); },
    [&](const std::string& warning) { print_warning(context, warning); });
}

class LocalExecutor final : public LaunchExecutor
{
public:
  bool
  exec(const std::vector<std::string>& argv) override
  {
    util::exec_program(argv);
    return false;
  }
  Expected<int>
  run(const std::vector<std::string>& argv) override
  {
    return util::run_program(argv);
  }
};

LocalExecutor g_local_executor;
LaunchExecutor* g_executor = &g_local_executor;

int
run(const Args& args, Context& context, Prepared& /*prepared*/)
{
  // fingerprint-launch found no recorder and asks for one: started first,
  // while this process has no thread, so that the next links find it.
  if (const char* name = std::getenv(k_recorder_start_variable); name != nullptr && *name != '\0') {
    const std::string copy = name;
    ::unsetenv(k_recorder_start_variable);
    start_recorder(copy);
  }
  auto plan = plan_launch(args);
  if (!plan) {
    print_error(context, "launch: " + plan.error().message);
    return k_exit_usage;
  }
  if (!plan->final_step) {
    // rm or ar of an archive: nothing to do after the command, so the
    // runner becomes it (one process fewer per step; the bookkeeping is
    // done first): ar keeps its command for the ranlib step, rm removes
    // what an earlier build kept (hook/archive_steps.hpp). fingerprint-launch
    // does the same itself and starts no runner for these steps.
    if (!plan->links) {
      hook::keep_archive_step(
        hook::archive_steps_path(absolute_path(*args.value("build-dir")), *args.value("target"), *args.value("output")),
        plan->command);
    }
    std::fflush(nullptr);
    if (g_executor->exec(plan->command)) {
      return k_exit_ok; // the launcher runs it
    }
    print_error(context, plan->command.front() + ": " + util::errno_text(errno));
    return 127;
  }
  // A hook lives a few milliseconds: memory it frees is better kept for
  // its next allocation than given back and faulted in again (a deps log
  // or a compression window of 128 KiB or more would otherwise be mapped,
  // zeroed and unmapped each), and the heap grows in steps of 1 MiB.
  // (A recorder sets its own, for its life: runner/recorder.cpp.)
  if (g_executor == &g_local_executor) {
    ::mallopt(M_MMAP_THRESHOLD, 64 << 20);
    ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
    ::mallopt(M_TOP_PAD, 1 << 20);
  }
  // Before the link: a build tool killed during it leaves an orphan
  // that can no longer tell which invocation it belongs to.
  hook::claim_build_id(absolute_path(*args.value("build-dir")));
  auto status = g_executor->run(plan->command);
  if (!status) {
    print_error(context, status.error().message);
    return 127;
  }
  if (*status != 0) {
    if (!plan->depfile.empty()) {
      ::remove(plan->depfile.c_str());
    }
    return *status;
  }
  return record_launch(args, *plan, context);
}

} // namespace

void
set_launch_executor(LaunchExecutor* executor)
{
  g_executor = executor != nullptr ? executor : &g_local_executor;
}

void
start_recorder(const std::string& name)
{
  start_resident("/proc/self/exe", "fingerprint", "--serve-recorder", name);
}

void
start_resident(const std::string& program, const char* argv0, const char* flag, const std::string& name)
{
  const pid_t first = ::fork();
  if (first != 0) {
    if (first > 0) {
      while (::waitpid(first, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    return; // a recorder that cannot start leaves the hooks as they were
  }
  ::setsid();
  if (::fork() != 0) {
    ::_exit(0);
  }
  if (::chdir("/") != 0) {
    ::_exit(1);
  }
  const int null = ::open("/dev/null", O_RDWR);
  if (null < 0) {
    ::_exit(1);
  }
  ::dup2(null, 0);
  ::dup2(null, 1);
  ::dup2(null, 2);
  // Every other descriptor of the hook (a build tool's pipes, make's
  // jobserver) closed: a build waits for the end of what holds its pipes.
  if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0) {
    for (int fd = 3; fd < 65536; ++fd) {
      ::close(fd);
    }
  }
  // A resident serves thousands of calls, each of which allocates and frees
  // some 2,500 small blocks (paths, digests, events): with glibc's seven
  // cached per size, most of them went through the bins, and every large
  // request consolidated the fast ones. A thread cache of 1,024 a size keeps
  // them (the recorder's CPU a call about a tenth lower, measured:
  // docs/ARCHITECTURE.md, "Malloc's thread cache"). Only read when a program
  // starts: set for the one exec'd here, after what the user set.
  set_resident_tunables();
  ::execl(program.c_str(), argv0, flag, name.c_str(), static_cast<char*>(nullptr));
  ::_exit(127);
}

void
set_resident_tunables()
{
  constexpr std::string_view tunable = "glibc.malloc.tcache_count";
  const char* set = std::getenv("GLIBC_TUNABLES");
  std::string value = set != nullptr ? set : "";
  if (value.find(tunable) != std::string::npos) {
    return; // the user's choice
  }
  value += value.empty() ? "" : ":";
  value += std::string(tunable) + "=1024";
  ::setenv("GLIBC_TUNABLES", value.c_str(), 1);
}

Expected<LaunchPlan>
plan_launch(const Args& args)
{
  LaunchPlan plan;
  plan.command = args.positional();
  const auto target = args.value("target");
  const auto build_dir = args.value("build-dir");
  if (plan.command.empty() || !args.value("project") || !target || !args.value("output") || !build_dir) {
    return Error{"--project, --target, --output, --build-dir and -- COMMAND... are required"};
  }
  auto algorithm = algorithm_option(args);
  if (!algorithm) {
    return algorithm.error();
  }
  plan.algorithm = *algorithm;
  const std::string type = args.value("type").value_or("EXECUTABLE");
  const auto record_after = args.value("record-after");
  // An archive is made by several commands (rm, ar, ranlib); only the
  // last one leaves the final bytes.
  // The tool may sit behind another launcher (CTest's, a linker launcher):
  // it is looked for anywhere in the command, not only in front.
  auto runs = [&](const std::string& tool) {
    return std::any_of(plan.command.begin(), plan.command.end(), [&](const std::string& argument) {
      return argument == tool || (!argument.starts_with("-") && base_name(argument) == base_name(tool));
    });
  };
  plan.final_step = !record_after || runs(*record_after);
  plan.links = type == "EXECUTABLE" || type == "SHARED_LIBRARY" || type == "MODULE_LIBRARY";

  // gold is the one common linker without --dependency-file: a link that
  // asks for it gets the link line's inputs instead.
  const bool gold = std::any_of(plan.command.begin(), plan.command.end(), [](const std::string& argument) {
    return argument == "-fuse-ld=gold" || argument == "-Wl,-fuse-ld=gold";
  });
  if (plan.final_step && plan.links && !gold) {
    for (const auto& driver : args.values("depfile-driver")) {
      if (runs(driver)) {
        plan.depfile = hook::depfile_path(*build_dir, *target);
        plan.command.push_back("-Wl,--dependency-file=" + plan.depfile);
        break;
      }
    }
  }
  return plan;
}

int
record_launch(const Args& args, const LaunchPlan& plan, Context& context)
{
  const std::string target = *args.value("target");
  const bool required = args.flag("required");
  std::string build_id;
  std::vector<std::string> file_errors;
  Expected<size_t> outcome = Error{};
  try {
    outcome = record_step(args, plan, context, build_id, file_errors);
  } catch (const std::exception& error) {
    outcome = Error{std::string("internal error: ") + error.what()};
  }
  if (!plan.depfile.empty()) {
    ::remove(plan.depfile.c_str()); // a directory too, should the linker have left one
  }
  if (!outcome && required) {
    for (const auto& message : file_errors) {
      print_error(context, message);
    }
    print_error(context, target + ": " + outcome.error().message + " (FINGERPRINT_REQUIRED is ON)");
    return k_exit_failure;
  }
  // A full disk or a lost store fails every hook of a build alike: the
  // first says why, the rest are counted, and the next build's first hook
  // gives the count (no hook knows it is the last). Where the count cannot
  // be kept, every hook warns.
  try {
    auto noted = hook::note_unrecorded(absolute_path(*args.value("build-dir")), build_id, !outcome);
    if (noted && noted->count > 1) {
      print_warning(context,
                    std::to_string(noted->count) + " targets of "
                      + (noted->build.empty() ? "the last build" : "build " + noted->build)
                      + " were not fingerprinted (FINGERPRINT_REQUIRED was OFF; the first one's warning said why)");
    }
    if (!outcome && (!noted || noted->first)) {
      for (const auto& message : file_errors) {
        print_warning(context, message);
      }
      print_warning(context,
                    target + ": not fingerprinted: " + outcome.error().message
                      + " (FINGERPRINT_REQUIRED is OFF, the build goes on; other targets of this build that cannot "
                        "be fingerprinted are counted, not reported)");
    }
  } catch (const std::exception& error) {
    print_warning(context, target + ": " + error.what());
  }
  return k_exit_ok;
}

extern const Command k_launch_command{
  .name = "launch",
  .synopsis = "--project P --target T --output FILE --build-dir D [--type TYPE] [options] -- COMMAND...",
  .summary = "run a link rule's command and record what it produced and consumed (the CMake module's hook)",
  .options = k_options,
  .run = run};

} // namespace fingerprint::cmd
