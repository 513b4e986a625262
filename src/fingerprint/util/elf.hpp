#pragma once

// The GNU build-id of an ELF file (the NT_GNU_BUILD_ID note, which Debian's
// toolchain writes into every executable and shared library): `strip` and
// `objcopy --only-keep-debug` keep it, so a stripped or split copy still
// names the link that made it.

#include <optional>
#include <string>

namespace fingerprint::util {

// The build-id of the ELF file at `path` (32- or 64-bit, either byte
// order), in lower-case hex; nothing when it is not an ELF file (an
// archive, a header, a script) or has none. Reads the headers and the note
// segments or sections only.
std::optional<std::string> gnu_build_id(const std::string& path);

} // namespace fingerprint::util
