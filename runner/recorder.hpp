#pragma once

// The recorder: one resident runner process per runner binary and user that
// serves fingerprint-launch's link hooks in its own process, one hook at a
// time (docs/ARCHITECTURE.md, "The recorder").

namespace fingerprint::recorder {

struct Hooks
{
  // Whether the call must run elsewhere (a PostgreSQL store: the dynamic
  // fingerprint-postgresql); the launcher then runs the runner itself.
  bool (*runs_elsewhere)(int argc, char** argv);
  // The runner's main: returns the exit status.
  int (*run)(int argc, const char* const* argv);
  // Appends "<label> <user us> <system us>" to $FINGERPRINT_CPU_LOG, if set.
  void (*log_cpu)(const char* label, long long user_us, long long system_us);
};

// Listens under the abstract name `name` and serves each connection on a
// thread of its own, hooks taking turns, until no call has come for
// $FINGERPRINT_RECORDER_IDLE seconds (default 60) and none is open.
// Returns at once, 0, when another recorder has the name.
int serve(const char* name, const Hooks& hooks);

} // namespace fingerprint::recorder
