#pragma once

// What fingerprint-launch (runner/fingerprint_launch.cpp, built without a C
// library) and the runner's recorder (runner/recorder.cpp) say to each
// other over a UNIX stream socket in Linux's abstract namespace
// (docs/ARCHITECTURE.md, "The recorder"). Fixed-size records in the
// machine's byte order (both ends run on one machine), each followed by
// `bytes` bytes of NUL-terminated strings. Nothing here may need a C
// library: the launcher includes it.

#include <fingerprint/util/fnv1a.hpp>

#include <stdint.h>

namespace fingerprint::recorder {

// The launcher's request, sent with its standard input, output and error
// and its working directory (an O_PATH descriptor) as SCM_RIGHTS: argc
// strings (the runner's argv: its path, then `launch` and the options),
// then envc strings (the launcher's environment).
struct Request
{
  uint32_t magic;
  uint32_t umask;
  uint32_t argc;
  uint32_t envc;
  uint32_t bytes;
};

// "FPR" and the protocol's version: a launcher and a recorder of two
// versions never talk (the recorder's name has its binary's identity too).
constexpr uint32_t k_magic = 0x02525046;
constexpr int k_request_fds = 4;

enum Action : uint32_t
{
  k_exec = 1,     // replace the launcher with the argc strings that follow: nothing to record after them
  k_run = 2,      // run the argc strings as a child, wait, send a Status, then read another Reply
  k_exit = 3,     // exit with `value`: the hook's exit status (its messages are written)
  k_fallback = 4, // the recorder cannot serve this call: exec the runner as if no recorder ran
};

struct Reply
{
  uint32_t action;
  uint32_t value;
  uint32_t argc;
  uint32_t bytes;
};

// The command's exit status as a shell gives it: its code, or 128 + the
// signal that ended it.
struct Status
{
  uint32_t status;
};

// The socket's name is "\0" + k_name_prefix + "<uid>-<16 hex digits>", the
// digits a hash of the runner's path and identity (fingerprint-launch
// computes it; the recorder it starts is given the name): a rebuilt or
// reinstalled runner gets a recorder of its own.
constexpr char k_name_prefix[] = "fingerprint-recorder-";
// The query server's (query_client.hpp), named the same way after the
// fingerprint-postgresql it runs.
constexpr char k_query_name_prefix[] = "fingerprint-queries-";

// $FINGERPRINT_RECORDER_START, set by fingerprint-launch on the runner it
// runs when no recorder answered: the name the runner starts one under.
constexpr char k_start_variable[] = "FINGERPRINT_RECORDER_START";

// FNV-1a, 64 bits: the name's hash.
using util::fnv1a;
using util::k_fnv_basis;

} // namespace fingerprint::recorder
