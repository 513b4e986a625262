#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

using EVP_MD = struct evp_md_st;

namespace fingerprint::digest {

enum class Algorithm
{
  sha256,
  sha512,
  sha1,
  md5,
  blake2b512
};

inline constexpr Algorithm k_default_algorithm = Algorithm::sha256;
inline constexpr std::array k_all_algorithms = {Algorithm::sha256,
                                                Algorithm::sha512,
                                                Algorithm::sha1,
                                                Algorithm::md5,
                                                Algorithm::blake2b512};

// "sha256", "sha512", "sha1", "md5", "blake2b512".
std::string_view algorithm_name(Algorithm algorithm);
std::optional<Algorithm> parse_algorithm(std::string_view name);

// Bytes in one digest.
size_t digest_size(Algorithm algorithm);

// The most digest_size() gives (SHA-512's and BLAKE2b-512's).
inline constexpr size_t k_max_digest_size = 64;

// The OpenSSL implementation, fetched once per process and then shared by all
// threads: EVP_MD_fetch goes through the provider store under a lock, and
// doing it per file was a measured bottleneck (docs/ARCHITECTURE.md, "The digest engine").
const EVP_MD* evp_md(Algorithm algorithm);

// Sets OpenSSL up once for the process, as every use of it here wants it
// (algorithm.cpp says what it leaves out and why); evp_md() and the
// signing code call it first.
void initialize_openssl();

} // namespace fingerprint::digest
