// The store's format file is the first thing read from a store: a damaged
// or hostile one must give an error, never a crash, and never a format this
// build does not understand.

#include <fingerprint/store/format.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

extern "C" int
LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto format = fingerprint::store::check_format_file(text, "/store/fingerprint-store.json");
  if (format
      && (*format < fingerprint::store::k_oldest_supported_format || *format > fingerprint::store::k_current_format)) {
    __builtin_trap();
  }
  if (!format && format.error().message.empty()) {
    __builtin_trap();
  }
  return 0;
}
