#pragma once

// An archive is made by several commands (rm, ar, ranlib; with Unix
// Makefiles a long list is split into `ar qc` and more `ar q`s) and
// recorded after the last (--record-after). The steps before it leave the
// last what it needs: each step that names members (an object file or a
// response file) appends its whole command to a private file of the
// (target, output) pair, and any other (rm, the first) removes that file.
// The last reads the commands back, takes the objects from them as from
// its own command line, and removes the file.
//
// Written by fingerprint-launch, which does it itself and execs the step
// (runner/fingerprint_launch.cpp: no recorder call, no runner started), and
// by the runner when it is run for such a step; read by the runner
// (hook/link_inputs.hpp, `take_archive_steps`). Nothing here may need a C
// library: fingerprint-launch includes it.
//
// The file: <build dir>/CMakeFiles/fingerprint/deps/<target>.<hash>.ar-steps,
// the target with '/' as '_', the hash FNV-1a 64 of --output as given, in
// 16 hex digits (Ninja Multi-Config builds one target's configurations at
// once: the output tells them apart). Each command is its words, each
// followed by a NUL byte, and one more NUL byte, appended in one write.

#include <fingerprint/util/fnv1a.hpp>

#include <stdint.h>

namespace fingerprint::hook {

constexpr char k_archive_steps_dir[] = "/CMakeFiles/fingerprint/deps/";
constexpr char k_archive_steps_suffix[] = ".ar-steps";

// Whether a step's word names members: an object file (".o", ".obj"), or
// a response file ("@file") that lists them.
inline bool
names_archive_members(const char* word)
{
  if (word[0] == '@') {
    return word[1] != '\0';
  }
  if (word[0] == '-') {
    return false;
  }
  uint64_t n = 0;
  while (word[n] != '\0') {
    ++n;
  }
  auto ends_with = [&](const char* suffix, uint64_t size) {
    if (n < size) {
      return false;
    }
    for (uint64_t i = 0; i < size; ++i) {
      if (word[n - size + i] != suffix[i]) {
        return false;
      }
    }
    return true;
  };
  return ends_with(".o", 2) || ends_with(".obj", 4);
}

// The file name's hash of --output as given.
inline uint64_t
archive_steps_hash(const char* output, uint64_t size)
{
  return util::fnv1a(util::k_fnv_basis, output, size);
}

} // namespace fingerprint::hook
