#pragma once

// The manual page and the bash completion, made from the command table
// (main.cpp) by `fingerprint help --format man|bash-completion`, which the
// build runs to install them; so neither can fall behind the commands.

#include <fingerprint/cmd/command.hpp>

#include <span>
#include <string>
#include <string_view>

namespace fingerprint::cmd {

// What the tool is, as `help` and the manual page begin.
inline constexpr std::string_view k_description =
  "Records which build produced each artifact and which builds consumed it,\n"
  "in a store shared by every project: --store DIR, else $FINGERPRINT_DIR,\n"
  "else ${XDG_DATA_HOME:-$HOME/.local/share}/fingerprint. A store may also\n"
  "be a PostgreSQL database: --store postgresql://user@host:port/db.\n";

// The exit statuses, as `help` and the manual page list them.
inline constexpr std::string_view k_exit_status_text =
  "exit status:\n"
  "  0  answered, an empty answer too (\"no consumers recorded for ...\")\n"
  "  1  not recorded (the file, digest, project, build or store asked about is not there), a\n"
  "     \"no\" (verify: modified or missing; why: does not depend; stale: something is stale;\n"
  "     fsck: a problem; check: no round trip), or a failure; the reason is on standard error\n"
  "  2  usage error\n";

// The page in man(7) markup, for `version`.
std::string man_page(std::span<const Command* const> commands, std::string_view version);

// A bash completion script: commands, each one's options, files where an
// option takes a path.
std::string bash_completion(std::span<const Command* const> commands);

} // namespace fingerprint::cmd
