#pragma once

// Ed25519 signatures through OpenSSL's EVP_PKEY, for signed records (README,
// "Signed records"): a private key in a PEM file, public keys as their 32
// raw bytes, named by the SHA-256 of those bytes.

#include <fingerprint/util/expected.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace fingerprint::digest {

// `bytes` in base64 (RFC 4648, with padding) and back; decoding refuses
// anything that is not.
std::string base64_encode(std::string_view bytes);
Expected<std::string> base64_decode(std::string_view text);

// A key's id: the lower-hex SHA-256 of its 32 raw public bytes.
std::string key_id(std::string_view raw_public);

class SigningKey
{
public:
  // A new random key.
  static Expected<SigningKey> generate();
  // The PEM private key at `path` (PKCS#8, as `openssl genpkey -algorithm
  // ed25519` and `fingerprint key generate` write it); not Ed25519 is an error.
  static Expected<SigningKey> load(const std::string& path);

  SigningKey(SigningKey&&) noexcept;
  SigningKey& operator=(SigningKey&&) noexcept;
  ~SigningKey();

  // The 32 raw public bytes.
  const std::string&
  raw_public() const
  {
    return m_public;
  }
  // The 64-byte signature of `message`.
  Expected<std::string> sign(std::string_view message) const;
  // The private key as PEM (PKCS#8), and the public one (SubjectPublicKeyInfo).
  Expected<std::string> private_pem() const;
  Expected<std::string> public_pem() const;

private:
  struct Impl;
  explicit SigningKey(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> m_impl;
  std::string m_public;
};

// Whether `signature` is the Ed25519 signature of `message` by the key whose
// raw public bytes are `raw_public`.
bool verify_signature(std::string_view raw_public, std::string_view message, std::string_view signature);

// The raw public bytes of the Ed25519 key in PEM text `pem` (a public key,
// or a private one, whose public half is taken).
Expected<std::string> public_key_from_pem(std::string_view pem, const std::string& where);

} // namespace fingerprint::digest
