// What the static runner links in place of four calls of static glibc
// (runner/CMakeLists.txt wraps them with --wrap). libcrypto references
// them from code the runner never runs: its DSO loader (dlopen, for
// engines and provider modules) and its BIO socket layer (name lookups).
// Static glibc's own versions need the build machine's shared glibc at
// run time, which the linker warns about on every link; these say
// "unavailable" instead, and the runner has no such dependency.

#include <dlfcn.h>
#include <netdb.h>

extern "C"
{

  void*
  __wrap_dlopen(const char* /*file*/, int /*mode*/) noexcept
  {
    return nullptr;
  }

  int
  __wrap_getaddrinfo(const char* /*node*/,
                     const char* /*service*/,
                     const struct addrinfo* /*hints*/,
                     struct addrinfo** result) noexcept
  {
    *result = nullptr;
    return EAI_FAIL;
  }

  void
  __wrap_freeaddrinfo(struct addrinfo* /*list*/) noexcept
  {
  }

  struct hostent*
  __wrap_gethostbyname(const char* /*name*/) noexcept
  {
    h_errno = NO_RECOVERY;
    return nullptr;
  }

} // extern "C"
