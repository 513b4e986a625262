#include <fingerprint/cmd/common.hpp>
#include <fingerprint/cmd/manual.hpp>

#include <set>

namespace fingerprint::cmd {

namespace {

constexpr const OptionSpec* k_common[] = {&k_store_option, &k_utc_option, &k_help_option};

// `text` for a roff line: backslashes and hyphens escaped (a hyphen as
// \- stays one minus sign, so an option copied from the page works), and
// a leading dot or quote kept from being read as a request.
std::string
roff(std::string_view text)
{
  std::string out;
  for (const char c : text) {
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && (out.front() == '.' || out.front() == '\'')) {
    out.insert(0, "\\&");
  }
  return out;
}

std::string
option_item(const OptionSpec& spec)
{
  std::string item = ".TP\n\\fB" + roff("--" + std::string(spec.name)) + "\\fR";
  if (!spec.placeholder.empty()) {
    item += " \\fI" + roff(spec.placeholder) + "\\fR";
    if (spec.kind == OptionKind::values) {
      item += "...";
    }
  }
  return item + "\n" + roff(spec.help) + "\n";
}

// The lines of `text` joined into paragraphs of roff: each line that is
// indented by two spaces and a status ("  0  ...") starts a tagged one.
std::string
exit_status_items()
{
  std::string out;
  std::string_view text = k_exit_status_text;
  text.remove_prefix(text.find('\n') + 1); // "exit status:"
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (line.size() > 5 && line[2] != ' ') {
      out += ".TP\n.B " + std::string(line.substr(2, 1)) + "\n" + roff(line.substr(5)) + "\n";
    } else {
      out += roff(line.substr(line.find_first_not_of(' '))) + "\n";
    }
  }
  return out;
}

struct Described
{
  std::string_view name;
  std::string_view what;
};

constexpr Described k_environment[] = {
  {"FINGERPRINT_DIR", "the store, when --store is not given"},
  {"FINGERPRINT_SIGNING_KEY", "the PEM Ed25519 private key that record, the hooks and export --sign sign with"},
  {"FINGERPRINT_TRUSTED_KEYS", "the directory of trusted public keys, when --trusted-keys is not given"},
  {"FINGERPRINT_BUILD_ID", "the build id record and the hooks use (else the CI run's, else one of their own)"},
  {"FINGERPRINT_CACHE_DIR", "the digest cache (empty: none)"},
  {"FINGERPRINT_SPOOL_DIR", "where hooks keep what a database could not take yet"},
  {"FINGERPRINT_RECORDER",
   "off: hooks run the runner and a database's show, consumers, why and history run in a process of their own, "
   "not in the recorder and the query server"},
  {"FINGERPRINT_RECORDER_IDLE", "seconds without a call after which the recorder and the query server end (60)"},
  {"TZ", "the time zone of the times tables print (--utc: UTC)"},
  {"NO_COLOR", "no colour on a terminal"},
  {"DPKG_ADMINDIR", "dpkg's database, for the Debian package that installed a file"},
};

constexpr Described k_files[] = {
  {"${XDG_DATA_HOME:-~/.local/share}/fingerprint", "the default store"},
  {"${XDG_CONFIG_HOME:-~/.config}/fingerprint/signing-key.pem", "the key `key generate` writes"},
  {"${XDG_CONFIG_HOME:-~/.config}/fingerprint/trusted-keys/", "the public keys trusted by default"},
  {"${XDG_CACHE_HOME:-~/.cache}/fingerprint", "the digest cache and dpkg's index"},
};

std::string
described_items(std::span<const Described> items)
{
  std::string out;
  for (const Described& item : items) {
    out += ".TP\n.B " + roff(item.name) + "\n" + roff(item.what) + "\n";
  }
  return out;
}

bool
takes_path(const OptionSpec& spec)
{
  return spec.placeholder == "D" || spec.placeholder.find("DIR") != std::string_view::npos
         || spec.placeholder.find("FILE") != std::string_view::npos;
}

// The words of a command's synopsis before its first option or argument:
// `key generate`, `build show`.
std::string_view
subcommand_of(const Command& command)
{
  const std::string_view synopsis = command.synopsis;
  const std::string_view word = synopsis.substr(0, synopsis.find(' '));
  return !word.empty() && word.front() >= 'a' && word.front() <= 'z' ? word : std::string_view{};
}

} // namespace

std::string
man_page(std::span<const Command* const> commands, std::string_view version)
{
  std::string page = ".\\\" Made by `fingerprint help --format man` from the command table; do not edit.\n";
  page += ".TH FINGERPRINT 1 \"\" \"fingerprint " + roff(version) + "\" \"User Commands\"\n";
  page += ".ad l\n.nh\n"; // left-aligned, unhyphenated: commands and options read as typed
  page += ".SH NAME\nfingerprint \\- which build made a file, and which builds used it\n";
  page +=
    ".SH SYNOPSIS\n.B fingerprint\n[\\fB\\-\\-store\\fR \\fIDIR\\fR|\\fIURL\\fR] [\\fB\\-\\-utc\\fR] \\fIcommand\\fR "
    "[\\fIoptions\\fR] [\\fIarguments\\fR]\n.br\n.B fingerprint help\n[\\fIcommand\\fR]\n";
  page += ".SH DESCRIPTION\n" + roff(k_description);
  page += ".PP\nA CMake project records its builds with \\fBinclude(Fingerprint)\\fR, or unmodified with "
          "\\fBcmake \\-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=.../Fingerprint.cmake\\fR; its hooks run the "
          "commands at the end of the list below.\n";
  page += ".SH COMMANDS\n";
  for (const Command* command : commands) {
    page += ".SS \"" + roff(command->name) + "\"\n";
    page += ".B fingerprint " + roff(command->name) + "\n" + roff(command->synopsis) + "\n.PP\n"
            + roff(command->summary) + ".\n";
    for (const OptionSpec& spec : command->options) {
      page += option_item(spec);
    }
  }
  page += ".SH OPTIONS\nEvery command takes these too.\n";
  for (const OptionSpec* spec : k_common) {
    page += option_item(*spec);
  }
  page += ".SH \"EXIT STATUS\"\n" + exit_status_items();
  page += ".SH ENVIRONMENT\n" + described_items(k_environment);
  page += ".SH FILES\n" + described_items(k_files);
  page += ".SH \"SEE ALSO\"\n.BR cmake (1),\n.BR ninja (1),\n.BR in\\-toto\\-verify (1)\n";
  return page;
}

std::string
bash_completion(std::span<const Command* const> commands)
{
  std::string names;
  for (const Command* command : commands) {
    names += (names.empty() ? "" : " ") + std::string(command->name);
  }
  std::string common_options;
  std::set<std::string> path_options;
  for (const OptionSpec* spec : k_common) {
    common_options += " --" + std::string(spec->name);
    if (takes_path(*spec)) {
      path_options.insert("--" + std::string(spec->name));
    }
  }
  std::string cases;
  std::set<std::string> value_options;
  for (const Command* command : commands) {
    std::string options;
    for (const OptionSpec& spec : command->options) {
      const std::string name = "--" + std::string(spec.name);
      options += name + " ";
      if (takes_path(spec)) {
        path_options.insert(name);
      } else if (spec.kind != OptionKind::flag) {
        value_options.insert(name);
      }
    }
    cases += "    " + std::string(command->name) + ")\n      options=\"" + options + "\"\n";
    if (const std::string_view word = subcommand_of(*command); !word.empty()) {
      cases += "      subcommand=" + std::string(word) + "\n";
    }
    cases += "      ;;\n";
  }
  // An option that takes a path in one command and a word in another is
  // completed with files.
  for (const std::string& name : path_options) {
    value_options.erase(name);
  }
  auto joined = [](const std::set<std::string>& words) {
    std::string out;
    for (const std::string& word : words) {
      out += (out.empty() ? "" : "|") + word;
    }
    return out;
  };
  return "# bash completion for fingerprint. Made by `fingerprint help --format bash-completion`\n"
         "# from the command table; do not edit.\n"
         "_fingerprint()\n"
         "{\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}\n"
         "  local i command= words=0 options= subcommand=\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    case ${COMP_WORDS[i]} in\n"
         "    --) [[ -n $command ]] && { COMPREPLY=($(compgen -c -- \"$cur\")); return; } ;;\n"
         "    --store) ((i++)) ;;\n"
         "    -*) ;;\n"
         "    *) if [[ -z $command ]]; then command=${COMP_WORDS[i]}; else ((words++)); fi ;;\n"
         "    esac\n"
         "  done\n"
         "  case $command in\n"
         "    '')\n"
         "      COMPREPLY=($(compgen -W \""
         + names + " help" + common_options
         + " --version\" -- \"$cur\"))\n"
           "      return\n"
           "      ;;\n"
           "    help)\n"
           "      COMPREPLY=($(compgen -W \""
         + names
         + "\" -- \"$cur\"))\n"
           "      return\n"
           "      ;;\n"
         + cases
         + "  esac\n"
           "  case $prev in\n"
           "    "
         + joined(path_options)
         + ")\n"
           "      compopt -o filenames 2>/dev/null\n"
           "      COMPREPLY=($(compgen -f -- \"$cur\"))\n"
           "      return\n"
           "      ;;\n"
           "    "
         + joined(value_options)
         + ")\n"
           "      COMPREPLY=()\n"
           "      return\n"
           "      ;;\n"
           "  esac\n"
           "  if [[ $cur == -* ]]; then\n"
           "    COMPREPLY=($(compgen -W \"$options"
         + common_options
         + "\" -- \"$cur\"))\n"
           "  elif [[ -n $subcommand && $words == 0 ]]; then\n"
           "    COMPREPLY=($(compgen -W \"$subcommand\" -- \"$cur\"))\n"
           "  else\n"
           "    compopt -o filenames 2>/dev/null\n"
           "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
           "  fi\n"
           "}\n"
           "complete -F _fingerprint fingerprint\n";
}

} // namespace fingerprint::cmd
