#pragma once

#include <fingerprint/util/expected.hpp>

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::cmd {

enum class OptionKind
{
  flag,   // --json
  value,  // --store DIR or --store=DIR
  values, // --produced F... : every argument up to the next option
};

struct OptionSpec
{
  std::string_view name; // without the leading "--"
  OptionKind kind;
  std::string_view placeholder = {}; // for usage lines: "DIR", "FILE"
  std::string_view help = {};
};

// A parsed subcommand line. Parsing fails (a usage error) on an unknown
// option, a missing value or an option given twice; the message suggests the
// closest known option.
class Args
{
public:
  static Expected<Args> parse(std::span<const std::string> arguments, std::span<const OptionSpec> specs);

  bool flag(std::string_view name) const;
  std::optional<std::string> value(std::string_view name) const;
  const std::vector<std::string>& values(std::string_view name) const;
  const std::vector<std::string>&
  positional() const
  {
    return m_positional;
  }

private:
  std::map<std::string, std::vector<std::string>, std::less<>> m_options;
  std::vector<std::string> m_positional;
};

} // namespace fingerprint::cmd
