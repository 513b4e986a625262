#include <fingerprint/cmd/args.hpp>
#include <fingerprint/util/text.hpp>

namespace fingerprint::cmd {

namespace {

const OptionSpec*
find_spec(std::span<const OptionSpec> specs, std::string_view name)
{
  for (const OptionSpec& spec : specs) {
    if (spec.name == name) {
      return &spec;
    }
  }
  return nullptr;
}

Error
unknown_option(std::span<const OptionSpec> specs, std::string_view name)
{
  std::string message = "unknown option '--" + std::string(name) + "'";
  const OptionSpec* best = nullptr;
  size_t best_distance = 3; // farther than that is no typo
  for (const OptionSpec& spec : specs) {
    const size_t distance = util::edit_distance(name, spec.name);
    if (distance < best_distance) {
      best = &spec;
      best_distance = distance;
    }
  }
  if (best != nullptr) {
    message += "; did you mean '--" + std::string(best->name) + "'?";
  }
  return Error{message};
}

bool
is_option(std::string_view argument)
{
  return argument.size() > 2 && argument.starts_with("--");
}

} // namespace

Expected<Args>
Args::parse(std::span<const std::string> arguments, std::span<const OptionSpec> specs)
{
  Args args;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const std::string& argument = arguments[i];
    if (argument == "--") {
      args.m_positional.insert(
        args.m_positional.end(), arguments.begin() + static_cast<ptrdiff_t>(i) + 1, arguments.end());
      break;
    }
    if (!is_option(argument)) {
      if (argument.size() > 1 && argument[0] == '-') {
        return Error{"unknown option '" + argument + "' (options are spelled --name)"};
      }
      args.m_positional.push_back(argument);
      continue;
    }
    std::string_view name = std::string_view(argument).substr(2);
    std::optional<std::string> inline_value;
    if (const auto equals = name.find('='); equals != std::string_view::npos) {
      inline_value = std::string(name.substr(equals + 1));
      name = name.substr(0, equals);
    }
    const OptionSpec* spec = find_spec(specs, name);
    if (spec == nullptr) {
      return unknown_option(specs, name);
    }
    if (args.m_options.contains(name)) {
      return Error{"option '--" + std::string(name) + "' given twice"};
    }
    auto& slot = args.m_options[std::string(name)];
    switch (spec->kind) {
      case OptionKind::flag:
        if (inline_value) {
          return Error{"option '--" + std::string(name) + "' takes no value"};
        }
        break;
      case OptionKind::value:
        if (inline_value) {
          slot.push_back(*inline_value);
        } else if (i + 1 < arguments.size() && !is_option(arguments[i + 1])) {
          slot.push_back(arguments[++i]);
        } else {
          return Error{"option '--" + std::string(name) + "' needs a value (" + std::string(spec->placeholder) + ")"};
        }
        break;
      case OptionKind::values:
        if (inline_value) {
          slot.push_back(*inline_value);
        }
        while (i + 1 < arguments.size() && !is_option(arguments[i + 1]) && arguments[i + 1] != "--") {
          slot.push_back(arguments[++i]);
        }
        if (slot.empty()) {
          return Error{"option '--" + std::string(name) + "' needs at least one " + std::string(spec->placeholder)};
        }
        break;
    }
  }
  return args;
}

bool
Args::flag(std::string_view name) const
{
  return m_options.find(name) != m_options.end();
}

std::optional<std::string>
Args::value(std::string_view name) const
{
  const auto it = m_options.find(name);
  if (it == m_options.end() || it->second.empty()) {
    return std::nullopt;
  }
  return it->second.front();
}

const std::vector<std::string>&
Args::values(std::string_view name) const
{
  static const std::vector<std::string> k_none;
  const auto it = m_options.find(name);
  return it == m_options.end() ? k_none : it->second;
}

} // namespace fingerprint::cmd
