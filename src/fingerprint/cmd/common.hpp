#pragma once

// What the subcommands share: error reporting, finding the store, turning a
// FILE|DIGEST argument into a key, and events as JSON.

#include <fingerprint/cmd/args.hpp>
#include <fingerprint/cmd/command.hpp>
#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/query/packages.hpp>
#include <fingerprint/store/artifact_record.hpp>
#include <fingerprint/store/digest_key.hpp>
#include <fingerprint/store/event.hpp>
#include <fingerprint/store/store.hpp>
#include <fingerprint/util/expected.hpp>
#include <fingerprint/util/fs.hpp>

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fingerprint::cmd {

// Options every subcommand accepts.
inline constexpr OptionSpec k_store_option{"store",
                                           OptionKind::value,
                                           "DIR|URL",
                                           "the fingerprint store: a directory or postgresql://..."};
inline constexpr OptionSpec k_help_option{"help", OptionKind::flag, {}, "show this command's help (also -h)"};
inline constexpr OptionSpec k_utc_option{"utc", OptionKind::flag, {}, "times in UTC rather than local time ($TZ)"};

// "fingerprint: <message>" on standard error.
void print_error(Context& context, std::string_view message);
void print_warning(Context& context, std::string_view message);
// "fingerprint: note: <message>": what a reader should know of the answer.
void print_note(Context& context, std::string_view message);

// Prints one warning per unreadable line met while answering.
void report_problems(Context& context, const std::string& store_root, const std::vector<store::LogProblem>& problems);

// --store > $FINGERPRINT_DIR > ${XDG_DATA_HOME:-$HOME/.local/share}/fingerprint.
Expected<std::string> store_path(const Args& args);

// How store_path chose the store, for messages: "given by --store", "from
// $FINGERPRINT_DIR", or the default.
std::string store_origin(const Args& args);

// --algorithm, validated.
Expected<digest::Algorithm> algorithm_option(const Args& args);

// A FILE|DIGEST argument: a digest is validated and never looked up on disk;
// a file is digested with `algorithm`. A digest may be cut short, as git
// takes them: 8 hex digits or more ("sha256:1f2e3d4c"), found among the
// artifacts `store` knows; none is an error, several are a usage error
// (Error::usage) that lists them, and so is a malformed digest.
Expected<store::DigestKey> resolve_artifact(const store::Store& store,
                                            const std::string& argument,
                                            digest::Algorithm algorithm);

// The index of dpkg's database at $DPKG_ADMINDIR, else /var/lib/dpkg, kept
// in the cache directory; nothing when it cannot be read.
std::optional<query::PackageIndex> package_index();

// The Debian package that owns the first of `paths` one owns; nothing when
// none does or there is no database.
std::optional<query::PackageOrigin> package_of(const std::vector<std::string>& paths);

// "Debian package libc6 2.36-9+deb12u7 (amd64)".
std::string package_text(const query::PackageOrigin& origin);

// {"package", "version", "architecture", "path"}.
nlohmann::ordered_json package_json(const query::PackageOrigin& origin);

// Build `build`'s provenance (store/provenance.hpp) as the store holds it,
// read once per process; nothing when the store has none. A document that
// cannot be read is warned about, once, and taken as none.
std::optional<nlohmann::ordered_json> build_provenance(const store::Store& store,
                                                       const store::BuildRef& build,
                                                       Context& context);

// The document for people, one "  <what>: <value>" line each ("source",
// "toolchain", "flags", "CI run"), each line starting with `indent`.
std::string provenance_text(const nlohmann::ordered_json& document, std::string_view indent);

// The exit status of a failure: 2 for a usage error, else 1.
int exit_status_of(const Error& error);

// The record of a FILE|DIGEST argument, resolved and loaded. On failure,
// prints why, sets `failure` to the exit status (exit_status_of) and returns
// nothing. Problems met in the log are in the record, for the caller to
// report.
// A FILE whose bytes are not recorded, but whose GNU build-id a recorded
// product has (a stripped or split copy of it), gets that product's record,
// with `matched` set to (build-id, the file's own digest) and a note on
// standard error saying so.
std::optional<store::ArtifactRecord> load_artifact(
  const store::Store& store,
  const std::string& argument,
  digest::Algorithm algorithm,
  Context& context,
  int& failure,
  std::optional<std::pair<std::string, std::string>>* matched = nullptr);

// The recorded product whose GNU build-id the ELF file `file` has, when
// its own bytes (`key`) are not recorded: the newest with that id. Says so
// in a note on standard error.
struct BuildIdMatch
{
  std::string build_id;
  store::Event product;
};
std::optional<BuildIdMatch> match_by_build_id(const store::Store& store,
                                              const std::string& file,
                                              const store::DigestKey& key,
                                              Context& context);

using util::absolute_path;
using util::base_name;

// An event as the JSON object `show --json` prints (README, "The command line"), all its fields.
// A path that is not UTF-8 is in "path" with U+FFFD and exactly in "path_bytes" (escaped), as on disk.
nlohmann::ordered_json event_json(const store::Event& event);

// event_json() of an event as queries report it: a consumed event always
// with its `role`, "link" for those of old logs, which carry none (README,
// "What a target consumed").
nlohmann::ordered_json edge_json(const store::Event& event);

// Signed records (README, "Signed records"). The trusted public keys:
// --trusted-keys DIR, else $FINGERPRINT_TRUSTED_KEYS, else
// ${XDG_CONFIG_HOME:-~/.config}/fingerprint/trusted-keys; PEM files, never
// read from the store. Read once per command.
inline constexpr OptionSpec k_trusted_keys_option{"trusted-keys",
                                                  OptionKind::value,
                                                  "DIR",
                                                  "the PEM public keys whose signatures are trusted"};
struct TrustedKeys
{
  std::string directory;
  std::set<std::string> keys; // raw public bytes
  std::vector<std::string> problems;
};
const TrustedKeys& trusted_keys();

// Sets what a command reads once and keeps (the trusted keys, the signature
// checks, the builds' provenance) anew from its options: a process that
// runs several commands (the query server, runner/query_client.hpp) answers
// each with its own options, environment and store.
void start_command(const Args& args);

// "valid" (signed by a trusted key, and unchanged since), "untrusted" (its
// signature holds, by a key not trusted), "unsigned", or "invalid" (changed
// since it was signed).
std::string_view signature_status(const store::Event& event);
// {"status": ..., "key": "<sha256 of the public key>"} (no key when unsigned).
nlohmann::ordered_json signature_json(const store::Event& event);
// What a table adds after an event that is not valid: " [untrusted]", ...;
// nothing for an unsigned one while no key is trusted.
std::string signature_mark(const store::Event& event);

// --role ROLE[,ROLE...]: show and consumers keep the consumed edges of these
// roles only. A comma list rather than a repeated option: Args takes each
// option once.
inline constexpr OptionSpec k_role_option{"role",
                                          OptionKind::value,
                                          "ROLE[,ROLE...]",
                                          "only consumed edges of these roles: link, compile, interface, declared"};

// The roles --role names, checked; empty when it is not given (every role).
// The error names the known roles.
Expected<std::set<std::string>> role_filter(const Args& args);

// Whether a consumed event passes `roles` (as role_filter() returned it).
bool role_matches(const std::set<std::string>& roles, const store::Event& event);

// A path for people: with U+FFFD where its bytes are not UTF-8, as a line's
// "path" spells it. What is opened and compared is always the exact path.
std::string display_path(std::string_view path);

// Sets `object[name]` to `path` as event_json() would: the text, plus
// `<name>_bytes` (store::escape_bytes) when the path is not UTF-8.
void put_path(nlohmann::ordered_json& object, const std::string& name, const std::string& path);

// `value` as indented JSON text. Bytes that are not UTF-8 (a file name in
// another encoding, a damaged log quoted in an error) become U+FFFD rather
// than an exception.
std::string dump_json(const nlohmann::ordered_json& value);

// An event's time for people: "3 min ago (2026-11-30 10:01 +01:00)", local
// time as $TZ says, or UTC after use_utc(true) (--utc); the text as stored
// when it is not RFC 3339. --json keeps the exact time, always UTC.
std::string human_time(const std::string& rfc3339);
void use_utc(bool utc);

// Colour only on a terminal, and never when NO_COLOR is set (no-color.org).
bool use_colour(std::FILE* stream);
// `text` in an SGR colour ("32" green, "31" red, "33" yellow) when `on`.
std::string paint(std::string_view text, std::string_view sgr, bool on);

// "fsck: 1200/5000 files checked" on a terminal, at most ten times a
// second, cleared when done; nothing when the stream is not a terminal.
class Progress
{
public:
  Progress(std::FILE* stream, std::string_view what, std::string_view unit);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void operator()(size_t done, size_t total);

private:
  std::FILE* m_stream; // null when not a terminal
  std::string m_what;
  std::string m_unit;
  int64_t m_last = 0;
  bool m_shown = false;
};

// The index of build `ref`, with its problems reported; when it cannot be
// read or is empty, prints why ("no build B of project P in S" and `hint`)
// and returns nothing (the command exits 1).
std::optional<store::LogContents> read_build_index(const store::Store& store,
                                                   Context& context,
                                                   const store::BuildRef& ref,
                                                   std::string_view hint = {});

// Whether the store has builds of `project`; when it has none, says so
// with the project it likely meant ("did you mean 'MYLIB'?").
bool known_project(const store::Store& store, const std::string& project, Context& context);

// Writes `text` to the context's output.
void write_out(Context& context, std::string_view text);

} // namespace fingerprint::cmd
