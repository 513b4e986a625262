// `launch` after a link that succeeded, with FINGERPRINT_REQUIRED OFF: the
// input's first byte says what the linker left at its dependency file's
// place and what the store is, the rest is the file's bytes (and, when
// asked, the target's settings file too). Whatever they are, the build step
// must exit 0 (README: a hook that cannot record warns and the build goes
// on), print only whole lines without NUL bytes, and leave no dependency
// file behind. The command itself is not run: record_launch is the half of
// launch that runs after it, so no process is started per input.

#include <fingerprint/cmd/args.hpp>
#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/cmd/launch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

using namespace fingerprint::cmd;
namespace fs = std::filesystem;

// Bits of the input's first byte.
constexpr uint8_t k_left_mask = 0x03; // 0, 1: a file with the bytes; 2: a directory; 3: a FIFO
constexpr uint8_t k_bad_store = 0x04; // a store beneath a regular file: no one can make it
constexpr uint8_t k_settings = 0x08;  // the bytes are the target's settings file too

std::string g_dir; // the fuzzer's own directory: the build tree, its files and the store

void
remove_dir()
{
  std::error_code ignored;
  fs::remove_all(g_dir, ignored);
}

void
write_file(const std::string& path, std::string_view bytes)
{
  std::ofstream(path, std::ios::binary | std::ios::trunc)
    .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

} // namespace

extern "C" int
LLVMFuzzerInitialize(int*, char***)
{
  std::string pattern = (fs::temp_directory_path() / "fingerprint-launch-fuzz-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    std::abort();
  }
  g_dir = pattern;
  std::atexit(remove_dir);
  fs::create_directories(g_dir + "/build");
  fs::create_directories(g_dir + "/args/app");
  write_file(g_dir + "/blocker", "not a directory\n");
  write_file(g_dir + "/liba.a", "a\n");
  write_file(g_dir + "/lib b.a", "b\n");
  write_file(g_dir + "/build/main.o", "o\n");
  write_file(g_dir + "/build/app", "app\n");
  setenv("FINGERPRINT_CACHE_DIR", (g_dir + "/cache").c_str(), 1);
  unsetenv("FINGERPRINT_BUILD_ID");
  return 0;
}

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  if (size == 0) {
    return 0;
  }
  const uint8_t options = data[0];
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);

  std::vector<std::string> arguments = {"--store",
                                        g_dir + ((options & k_bad_store) != 0 ? "/blocker/store" : "/store"),
                                        "--project",
                                        "p",
                                        "--target",
                                        "app",
                                        "--output",
                                        g_dir + "/build/app",
                                        "--build-dir",
                                        g_dir + "/build",
                                        "--depfile-driver",
                                        "cc"};
  const std::string settings = g_dir + "/args/app/Release.args";
  if ((options & k_settings) != 0) {
    arguments.insert(arguments.end(), {"--args-dir", g_dir + "/args"});
    write_file(settings, "output=" + g_dir + "/build/app\n" + std::string(bytes));
  }
  arguments.insert(arguments.end(), {"--", "cc", "main.o", "-o", "app", "liba.a"});
  std::vector<OptionSpec> specs(k_launch_command.options.begin(), k_launch_command.options.end());
  specs.push_back(k_store_option);
  specs.push_back(k_help_option);
  auto args = Args::parse(arguments, specs);
  auto plan = args ? plan_launch(*args) : fingerprint::Expected<LaunchPlan>(args.error());
  if (!plan || plan->depfile.empty()) {
    __builtin_trap(); // the line above is launch's own: it must plan a depfile
  }

  switch (options & k_left_mask) {
    case 2:
      ::mkdir(plan->depfile.c_str(), 0700);
      break;
    case 3:
      ::mkfifo(plan->depfile.c_str(), 0600);
      break;
    default:
      write_file(plan->depfile, bytes);
  }

  // Every input is the first hook of its build to fail, so the warning that
  // says why is printed every time, not only once per fuzzing run.
  std::remove((g_dir + "/build/CMakeFiles/fingerprint/unrecorded").c_str());
  char* text = nullptr;
  size_t length = 0;
  Context context;
  context.out = std::fopen("/dev/null", "w");
  context.err = open_memstream(&text, &length);
  // Relative names in the input resolve in the fuzzer's directory, to the
  // files a link reads; libFuzzer's own relative paths (-dict, the corpus)
  // are used between runs, so the directory is changed back.
  const int back = ::open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (back < 0 || ::chdir(g_dir.c_str()) != 0) {
    std::abort();
  }
  const int status = record_launch(*args, *plan, context);
  if (::fchdir(back) != 0) {
    std::abort();
  }
  ::close(back);
  std::fclose(context.err);
  std::fclose(context.out);
  const std::string_view printed(text, length);
  const bool whole_lines = printed.empty() || printed.back() == '\n';
  const bool no_nul = printed.find('\0') == std::string_view::npos;
  std::free(text);
  std::remove(settings.c_str());

  struct stat st
  {};
  if (status != k_exit_ok || !whole_lines || !no_nul || ::lstat(plan->depfile.c_str(), &st) == 0) {
    __builtin_trap();
  }
  return 0;
}
