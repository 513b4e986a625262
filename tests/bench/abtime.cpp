// abtime: wall time of two commands run alternately (A B A B ...), so both
// see the same machine; prints each one's median in milliseconds and the
// ratio A/B. Spawns directly (no shell), so neither side pays for one.
//
//   abtime RUNS WARMUP CMD-A... --vs-- CMD-B...

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <vector>

extern char** environ;

namespace {

double
now_ms()
{
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Runs `argv` with its output discarded; returns the wall time, or -1.
double
run(std::vector<char*>& argv)
{
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  const double start = now_ms();
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    return -1;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const double elapsed = now_ms() - start;
  posix_spawn_file_actions_destroy(&actions);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? elapsed : -1;
}

double
median(std::vector<double> values)
{
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

} // namespace

int
main(int argc, char** argv)
{
  if (argc < 6) {
    std::fprintf(stderr, "usage: abtime RUNS WARMUP CMD-A... --vs-- CMD-B...\n");
    return 2;
  }
  const int runs = std::atoi(argv[1]);
  const int warmup = std::atoi(argv[2]);
  std::vector<char*> a;
  std::vector<char*> b;
  bool second = false;
  for (int i = 3; i < argc; ++i) {
    if (std::strcmp(argv[i], "--vs--") == 0) {
      second = true;
    } else {
      (second ? b : a).push_back(argv[i]);
    }
  }
  if (a.empty() || b.empty() || runs < 1) {
    std::fprintf(stderr, "abtime: two commands and RUNS >= 1 are needed\n");
    return 2;
  }
  a.push_back(nullptr);
  b.push_back(nullptr);
  std::vector<double> times_a;
  std::vector<double> times_b;
  for (int i = 0; i < warmup + runs; ++i) {
    const double ta = run(a);
    const double tb = run(b);
    if (ta < 0 || tb < 0) {
      std::fprintf(stderr, "abtime: %s failed\n", ta < 0 ? a[0] : b[0]);
      return 1;
    }
    if (i >= warmup) {
      times_a.push_back(ta);
      times_b.push_back(tb);
    }
  }
  const double ma = median(times_a);
  const double mb = median(times_b);
  std::printf("%.3f %.3f %.3f\n", ma, mb, ma / mb);
  return 0;
}
