#pragma once

// FNV-1a, 64 bits: a hash for names (the recorder's socket, an archive's
// step list, the builds summary's check), not for content. Nothing here may
// need a C library: fingerprint-launch (runner/fingerprint_launch.cpp)
// includes it.

#include <stdint.h>

namespace fingerprint::util {

constexpr uint64_t k_fnv_basis = 0xcbf29ce484222325ULL;

inline uint64_t
fnv1a(uint64_t hash, const void* data, uint64_t size)
{
  const unsigned char* bytes = static_cast<const unsigned char*>(data);
  for (uint64_t i = 0; i < size; ++i) {
    hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
  }
  return hash;
}

} // namespace fingerprint::util
