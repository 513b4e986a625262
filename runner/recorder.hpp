#pragma once

#include <cstddef>

// The recorder: one resident runner process per runner binary and user that
// serves fingerprint-launch's link hooks in its own process, one hook at a
// time (docs/ARCHITECTURE.md, "The recorder").

namespace fingerprint::recorder {

struct Hooks
{
  // Whether this process serves the call (argv[0] the runner's path, then
  // its options and the command); if not, the caller runs it itself.
  bool (*serves)(int argc, char** argv);
  // The runner's main: returns the exit status.
  int (*run)(int argc, const char* const* argv);
  // Appends "<label> <user us> <system us>" to $FINGERPRINT_CPU_LOG, if set.
  void (*log_cpu)(const char* label, long long user_us, long long system_us);
};

// Reads or sends all `size` bytes on `fd`, again after EINTR and short
// counts (send with MSG_NOSIGNAL: a peer gone is false, not SIGPIPE); false
// at the end of the stream or an error. The servers and the query client
// use them (fingerprint-launch has its own, without a C library).
bool read_all(int fd, void* data, size_t size);
bool send_all(int fd, const void* data, size_t size);

// The command a runner's argv names after the options that may come before
// it (--store URL, --store=URL, --utc); null if none does.
const char* command_of(int argc, char* const* argv);

// Appends "<label> <user us> <system us>" to the file $FINGERPRINT_CPU_LOG
// names, if set: how each runner process and each served call log their
// own CPU (tests/bench/hooks_overhead.sh).
void write_cpu_line(const char* label, long long user_us, long long system_us);

// Listens under the abstract name `name` and serves each connection on a
// thread of its own, calls taking turns, until no call has come for
// $FINGERPRINT_RECORDER_IDLE seconds (default 60) and none is open.
// Returns at once, 0, when another process has the name. The recorder
// serves fingerprint-launch's hooks; fingerprint-postgresql serves the
// runner's queries of a PostgreSQL store the same way (query_client.hpp).
int serve(const char* name, const Hooks& hooks);

} // namespace fingerprint::recorder
