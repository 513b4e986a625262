#include <fingerprint/digest/algorithm.hpp>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace fingerprint::digest {

namespace {

struct Info
{
  std::string_view name;
  const char* openssl_name;
  size_t size;
};

constexpr Info k_info[] = {
  {"sha256", "SHA2-256", 32},
  {"sha512", "SHA2-512", 64},
  {"sha1", "SHA1", 20},
  {"md5", "MD5", 16},
  {"blake2b512", "BLAKE2B-512", 64},
};

const Info&
info(Algorithm algorithm)
{
  return k_info[static_cast<size_t>(algorithm)];
}

} // namespace

// OpenSSL's default initialisation reads the system's openssl.cnf and
// registers every legacy cipher and digest name: 4 of the 6 ms a runner
// spent digesting one small file (perf: EVP_add_cipher, OBJ_* and config
// parsing). A configuration can only choose providers, and every provider
// computes the same digests, so neither is needed here. Nor are its error
// strings, which the first error state of a thread loads (an Ed25519 fetch
// makes one, setting an error mark): 0.94 of the 5.6 million instructions
// of a signed `record` (callgrind); an OpenSSL error then reads by its code.
void
initialize_openssl()
{
  static std::once_flag once;
  std::call_once(once, [] {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_ADD_ALL_CIPHERS | OPENSSL_INIT_NO_ADD_ALL_DIGESTS
                          | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS,
                        nullptr);
  });
}

std::string_view
algorithm_name(Algorithm algorithm)
{
  return info(algorithm).name;
}

std::optional<Algorithm>
parse_algorithm(std::string_view name)
{
  for (const Algorithm algorithm : k_all_algorithms) {
    if (info(algorithm).name == name) {
      return algorithm;
    }
  }
  return std::nullopt;
}

size_t
digest_size(Algorithm algorithm)
{
  return info(algorithm).size;
}

const EVP_MD*
evp_md(Algorithm algorithm)
{
  static std::once_flag once[k_all_algorithms.size()];
  static EVP_MD* fetched[k_all_algorithms.size()] = {};
  const auto index = static_cast<size_t>(algorithm);
  std::call_once(once[index], [&] {
    initialize_openssl();
    fetched[index] = EVP_MD_fetch(nullptr, info(algorithm).openssl_name, nullptr);
    if (fetched[index] == nullptr) {
      // Only a broken OpenSSL installation gets here (all five are in the
      // default provider); nothing sensible can follow.
      std::fprintf(stderr, "fingerprint: OpenSSL has no %s implementation\n", info(algorithm).openssl_name);
      std::abort();
    }
  });
  // Kept for the life of the process, like the provider that owns it.
  return fetched[index];
}

} // namespace fingerprint::digest
