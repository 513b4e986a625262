#include <fingerprint/cmd/common.hpp>
#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/digest/signing.hpp>
#include <fingerprint/query/index.hpp>
#include <fingerprint/query/inputs.hpp>
#include <fingerprint/store/provenance.hpp>
#include <fingerprint/store/signature.hpp>
#include <fingerprint/util/elf.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <unistd.h>
#include <unordered_map>

namespace fingerprint::cmd {

void
print_error(Context& context, std::string_view message)
{
  std::string line = "fingerprint: ";
  line += message;
  line += '\n';
  std::fputs(line.c_str(), context.err);
}

void
print_warning(Context& context, std::string_view message)
{
  print_error(context, "warning: " + std::string(message));
}

void
print_note(Context& context, std::string_view message)
{
  print_error(context, "note: " + std::string(message));
}

void
report_problems(Context& context, const std::string& store_root, const std::vector<store::LogProblem>& problems)
{
  for (const auto& problem : problems) {
    std::string where = store_root + "/" + problem.file;
    if (problem.line > 0) {
      where += ":" + std::to_string(problem.line);
    }
    print_warning(context, where + ": skipped: " + problem.message);
  }
}

Expected<std::string>
store_path(const Args& args)
{
  if (auto store = args.value("store")) {
    if (store->empty()) {
      return Error{"--store: empty path"};
    }
    return *store;
  }
  if (const char* dir = std::getenv("FINGERPRINT_DIR"); dir != nullptr && *dir != '\0') {
    return std::string(dir);
  }
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/fingerprint";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.local/share/fingerprint";
  }
  return Error{"no store: give --store DIR or set FINGERPRINT_DIR (HOME is not set either)"};
}

std::string
store_origin(const Args& args)
{
  if (args.value("store")) {
    return "given by --store";
  }
  if (const char* dir = std::getenv("FINGERPRINT_DIR"); dir != nullptr && *dir != '\0') {
    return "from $FINGERPRINT_DIR";
  }
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0') {
    return "the default, $XDG_DATA_HOME/fingerprint: no --store, no $FINGERPRINT_DIR";
  }
  return "the default, ~/.local/share/fingerprint: no --store, no $FINGERPRINT_DIR";
}

Expected<digest::Algorithm>
algorithm_option(const Args& args)
{
  const auto name = args.value("algorithm");
  if (!name) {
    return digest::k_default_algorithm;
  }
  if (auto algorithm = digest::parse_algorithm(*name)) {
    return *algorithm;
  }
  return Error{"--algorithm: unknown algorithm '" + *name + "' (known: sha256, sha512, sha1, md5, blake2b512)"};
}

namespace {

// The shortest digest prefix taken, as git's shortest abbreviation; the
// tables print 12 digits.
constexpr size_t k_min_prefix = 8;
// Candidates an ambiguous prefix lists.
constexpr size_t k_candidates = 10;

Expected<store::DigestKey>
resolve_digest(const store::Store& store, const std::string& argument)
{
  auto usage = [&](const std::string& why) {
    Error error = make_error(argument, why);
    error.usage = true;
    return error;
  };
  const size_t colon = argument.find(':');
  const auto algorithm = digest::parse_algorithm(argument.substr(0, colon));
  if (!algorithm) {
    return usage("unknown digest algorithm '" + argument.substr(0, colon)
                 + "' (known: sha256, sha512, sha1, md5, blake2b512)");
  }
  std::string hex = argument.substr(colon + 1);
  const size_t length = 2 * digest::digest_size(*algorithm);
  const std::string name(digest::algorithm_name(*algorithm));
  if (!util::is_lower_hex(hex, hex.size())) {
    return usage("not a digest: '" + hex + "' is not lowercase hexadecimal");
  }
  if (hex.size() > length) {
    return usage("not a digest: " + std::to_string(hex.size()) + " hex digits, more than " + name + "'s "
                 + std::to_string(length));
  }
  if (hex.size() == length) {
    return store::DigestKey{*algorithm, std::move(hex)};
  }
  if (hex.size() < k_min_prefix) {
    return usage("a digest prefix needs " + std::to_string(k_min_prefix) + " hex digits or more (of "
                 + std::to_string(length) + "); this one has " + std::to_string(hex.size()));
  }
  auto found = store.find_by_prefix(*algorithm, hex, k_candidates + 1);
  if (!found) {
    return found.error();
  }
  if (found->empty()) {
    return make_error(argument,
                      "no artifact whose digest begins with " + name + ":" + hex + " is recorded in the store "
                        + store.location());
  }
  if (found->size() == 1) {
    return std::move(found->front());
  }
  std::string message = "ambiguous digest prefix: " + std::string(found->size() > k_candidates ? "more than " : "")
                        + std::to_string(std::min(found->size(), k_candidates))
                        + " recorded digests begin with it; give more digits:";
  for (size_t i = 0; i < found->size() && i < k_candidates; ++i) {
    message += "\n  " + (*found)[i].str();
  }
  return usage(message);
}

} // namespace

std::optional<query::PackageIndex>
package_index()
{
  const char* admin = std::getenv("DPKG_ADMINDIR");
  auto index = query::PackageIndex::open(admin != nullptr && *admin != '\0' ? admin : "/var/lib/dpkg",
                                         digest::DigestCache::default_directory());
  if (!index) {
    return std::nullopt; // an unreadable database answers nothing, as none does
  }
  return std::move(*index);
}

std::optional<query::PackageOrigin>
package_of(const std::vector<std::string>& paths)
{
  auto index = package_index();
  if (!index) {
    return std::nullopt;
  }
  for (const std::string& path : paths) {
    if (path.starts_with('/')) {
      if (auto origin = index->owner(path)) {
        return origin;
      }
    }
  }
  return std::nullopt;
}

std::string
package_text(const query::PackageOrigin& origin)
{
  std::string text = "Debian package " + origin.package + " " + origin.version;
  if (!origin.architecture.empty()) {
    text += " (" + origin.architecture + ")";
  }
  return text;
}

nlohmann::ordered_json
package_json(const query::PackageOrigin& origin)
{
  nlohmann::ordered_json object;
  object["package"] = origin.package;
  object["version"] = origin.version;
  object["architecture"] = origin.architecture;
  object["path"] = origin.path;
  return object;
}

namespace {

// A command's, set anew by start_command.
std::string g_trusted_keys_dir;                                   // --trusted-keys, when given
std::optional<TrustedKeys> g_trusted_keys;                        // read at the first use
std::unordered_map<std::string, store::SignatureCheck> g_checked; // checked()
std::map<std::pair<std::string, std::string>, std::optional<nlohmann::ordered_json>> g_provenance; // build_provenance()

} // namespace

std::optional<nlohmann::ordered_json>
build_provenance(const store::Store& store, const store::BuildRef& build, Context& context)
{
  const auto [it, fresh] = g_provenance.try_emplace({build.project, build.build});
  if (!fresh) {
    return it->second;
  }
  auto document = store.read_provenance(build);
  if (!document) {
    print_warning(context, document.error().message);
  } else if (*document) {
    it->second = nlohmann::ordered_json::parse(**document, nullptr, false); // read_provenance checked it
  }
  return it->second;
}

std::string
provenance_text(const nlohmann::ordered_json& document, std::string_view indent)
{
  std::string text;
  auto line = [&](std::string_view what, const std::string& value) {
    if (!value.empty()) {
      text += indent;
      text += what;
      text += ": ";
      text += value;
      text += '\n';
    }
  };
  const auto source = document.find("source");
  if (source != document.end() && source->is_object()) {
    std::string value =
      "git " + (store::json_text(*source, "commit").empty() ? "(no commit yet)" : store::json_text(*source, "commit"));
    const std::string branch = store::json_text(*source, "branch");
    value += branch.empty() ? " (detached)" : " on " + branch;
    const auto dirty = source->find("dirty");
    value += dirty != source->end() && dirty->is_boolean() && dirty->get<bool>() ? ", dirty" : ", clean";
    if (const std::string remote = store::json_text(*source, "remote"); !remote.empty()) {
      value += ", " + remote;
    }
    line("source", value);
  } else {
    line("source", "not a git work tree");
  }
  std::string toolchain;
  auto add = [&](const std::string& part) {
    if (!part.empty()) {
      toolchain += (toolchain.empty() ? "" : "; ") + part;
    }
  };
  if (const auto cmake = document.find("cmake"); cmake != document.end() && cmake->is_object()) {
    add("CMake " + store::json_text(*cmake, "version") + " (" + store::json_text(*cmake, "generator") + ")");
  }
  if (const auto compilers = document.find("compilers"); compilers != document.end() && compilers->is_object()) {
    for (const auto& [language, compiler] : compilers->items()) {
      add(language + " " + store::json_text(compiler, "id") + " " + store::json_text(compiler, "version") + " "
          + display_path(store::json_text(compiler, "path")));
    }
  }
  line("toolchain", toolchain);
  std::string flags = store::json_text(document, "build_type");
  flags = flags.empty() ? "no build type" : flags;
  if (const std::string digest = store::json_text(document, "flags_digest"); !digest.empty()) {
    flags += ", flags " + digest.substr(0, 19);
  }
  line("configuration", flags);
  if (const auto ci = document.find("ci"); ci != document.end() && ci->is_object()) {
    line("CI run", store::json_text(*ci, "url"));
  }
  return text;
}

int
exit_status_of(const Error& error)
{
  return error.usage ? k_exit_usage : k_exit_failure;
}

Expected<store::DigestKey>
resolve_artifact(const store::Store& store, const std::string& argument, digest::Algorithm algorithm)
{
  if (store::looks_like_digest_key(argument)) {
    return resolve_digest(store, argument);
  }
  digest::Hasher hasher(algorithm);
  const digest::DigestCache cache(digest::DigestCache::default_directory());
  auto file = digest::digest_path(hasher, argument, &cache);
  if (!file) {
    return file.error();
  }
  return store::DigestKey{algorithm, std::move(file->hex)};
}

namespace {

// The newest recorded product whose GNU build-id is `id`. Reads the build
// index whole: only asked when a file's own bytes are not recorded.
std::optional<store::Event>
product_with_build_id(const store::Store& store, const std::string& id)
{
  std::optional<store::Event> newest;
  std::vector<store::LogProblem> problems;
  auto scanned = query::for_each_indexed_event(
    store,
    [&](store::Event& event) {
      if (event.event == store::EventKind::produced && event.build_id == id
          && (!newest || newest->time <= event.time)) {
        newest = std::move(event);
      }
    },
    problems);
  return scanned ? newest : std::nullopt;
}

} // namespace

std::optional<store::ArtifactRecord>
load_artifact(const store::Store& store,
              const std::string& argument,
              digest::Algorithm algorithm,
              Context& context,
              int& failure,
              std::optional<std::pair<std::string, std::string>>* matched)
{
  auto key = resolve_artifact(store, argument, algorithm);
  if (!key) {
    print_error(context, key.error().message);
    failure = exit_status_of(key.error());
    return std::nullopt;
  }
  auto record = store::load_record(store, *key);
  if (!record) {
    print_error(context, record.error().message);
    failure = k_exit_failure;
    return std::nullopt;
  }
  if (record->recorded() || store::looks_like_digest_key(argument)) {
    return std::move(*record);
  }
  // Not these bytes: a stripped or split copy of a recorded product?
  const auto match = match_by_build_id(store, argument, *key, context);
  auto original = match ? store::parse_digest_key(match->product.digest) : Expected<store::DigestKey>(Error{});
  if (!original) {
    return std::move(*record);
  }
  auto copy_of = store::load_record(store, *original);
  if (!copy_of || !copy_of->recorded()) {
    return std::move(*record);
  }
  if (matched != nullptr) {
    *matched = std::pair{match->build_id, key->str()};
  }
  return std::move(*copy_of);
}

std::optional<BuildIdMatch>
match_by_build_id(const store::Store& store, const std::string& file, const store::DigestKey& key, Context& context)
{
  const auto id = util::gnu_build_id(file);
  auto product = id ? product_with_build_id(store, *id) : std::nullopt;
  if (!product) {
    return std::nullopt;
  }
  print_note(context,
             file + ": matched by build-id " + *id + ": not recorded itself (" + key.str()
               + "), it is a stripped or split copy of " + display_path(product->path) + " ("
               + product->digest.substr(0, 19) + "...)");
  return BuildIdMatch{*id, std::move(*product)};
}

nlohmann::ordered_json
event_json(const store::Event& event)
{
  // The same fields in the same order as on disk, from the one serializer.
  return nlohmann::ordered_json::parse(store::serialize(event));
}

nlohmann::ordered_json
edge_json(const store::Event& event)
{
  nlohmann::ordered_json object;
  if (event.event != store::EventKind::consumed || !event.role.empty()) {
    object = event_json(event);
  } else {
    store::Event with_role = event;
    with_role.role = query::role_of(event);
    object = event_json(with_role);
  }
  object["signature"] = signature_json(event);
  return object;
}

void
start_command(const Args& args)
{
  g_trusted_keys_dir = args.value("trusted-keys").value_or("");
  g_trusted_keys.reset();
  g_checked.clear();
  g_provenance.clear();
}

const TrustedKeys&
trusted_keys()
{
  if (g_trusted_keys) {
    return *g_trusted_keys;
  }
  g_trusted_keys = [] {
    TrustedKeys found;
    std::string dir = g_trusted_keys_dir;
    if (dir.empty()) {
      if (const char* env = std::getenv("FINGERPRINT_TRUSTED_KEYS"); env != nullptr && *env != '\0') {
        dir = env;
      } else if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0') {
        dir = std::string(xdg) + "/fingerprint/trusted-keys";
      } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
        dir = std::string(home) + "/.config/fingerprint/trusted-keys";
      }
    }
    found.directory = dir;
    for (const auto& name : dir.empty() ? std::vector<std::string>() : util::sorted_entries(dir)) {
      const std::string path = dir + "/" + name;
      auto text = util::read_regular_file(path);
      if (!text) {
        continue;
      }
      if (auto raw = digest::public_key_from_pem(*text, path)) {
        found.keys.insert(*raw);
      } else {
        found.problems.push_back(raw.error().message);
      }
    }
    return found;
  }();
  return *g_trusted_keys;
}

namespace {

// store::check_signature, once per signed line: a build's consumed edges
// read from one manifest share their product's line, and a query may show
// an event in several places.
const store::SignatureCheck&
checked(const store::Event& event)
{
  static const store::SignatureCheck k_unsigned;
  const bool own = !event.signer.empty() || !event.sig.empty();
  if (!own && event.vouched_by.line.empty()) {
    return k_unsigned;
  }
  std::string key = own ? store::serialize(event) : event.vouched_by.line;
  auto it = g_checked.find(key);
  if (it == g_checked.end()) {
    it = g_checked.emplace(std::move(key), store::check_signature(event)).first;
  }
  return it->second;
}

} // namespace

std::string_view
signature_status(const store::Event& event)
{
  const store::SignatureCheck& check = checked(event);
  switch (check.state) {
    case store::SignatureCheck::State::none:
      return "unsigned";
    case store::SignatureCheck::State::invalid:
      return "invalid";
    case store::SignatureCheck::State::valid:
      break;
  }
  return trusted_keys().keys.contains(check.signer) ? "valid" : "untrusted";
}

nlohmann::ordered_json
signature_json(const store::Event& event)
{
  const store::SignatureCheck& check = checked(event);
  nlohmann::ordered_json object;
  object["status"] = signature_status(event);
  if (!check.signer.empty()) {
    object["key"] = digest::key_id(check.signer);
  }
  return object;
}

std::string
signature_mark(const store::Event& event)
{
  const std::string_view status = signature_status(event);
  // Unsigned is the norm where nobody signs: marked once a key is trusted.
  if (status == "valid" || (status == "unsigned" && trusted_keys().keys.empty())) {
    return {};
  }
  return " [" + std::string(status) + "]";
}

Expected<std::set<std::string>>
role_filter(const Args& args)
{
  std::set<std::string> roles;
  const auto list = args.value("role");
  if (!list) {
    return roles;
  }
  std::string_view rest = *list;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    if (!store::parse_role(name)) {
      std::string known;
      for (const store::Role role : store::k_all_roles) {
        known += (known.empty() ? "" : ", ") + std::string(store::role_name(role));
      }
      return Error{"--role: unknown role '" + std::string(name) + "' (known: " + known + ")"};
    }
    roles.emplace(name);
    if (comma == std::string_view::npos) {
      return roles;
    }
    rest.remove_prefix(comma + 1);
  }
}

bool
role_matches(const std::set<std::string>& roles, const store::Event& event)
{
  return roles.empty() || roles.contains(query::role_of(event));
}

std::string
display_path(std::string_view path)
{
  return store::lossy_text(path);
}

void
put_path(nlohmann::ordered_json& object, const std::string& name, const std::string& path)
{
  object[name] = store::lossy_text(path);
  if (!store::is_utf8(path)) {
    object[name + "_bytes"] = store::escape_bytes(path);
  }
}

namespace {
bool g_utc = false; // --utc
} // namespace

std::string
human_time(const std::string& rfc3339)
{
  const int64_t then = util::parse_rfc3339(rfc3339);
  if (then < 0) {
    return rfc3339;
  }
  return util::relative_time(then, util::now_ns()) + " (" + util::format_clock_time(then, g_utc) + ")";
}

void
use_utc(bool utc)
{
  g_utc = utc;
}

bool
use_colour(std::FILE* stream)
{
  const char* no_colour = std::getenv("NO_COLOR");
  return (no_colour == nullptr || *no_colour == '\0') && ::isatty(::fileno(stream)) != 0;
}

std::string
paint(std::string_view text, std::string_view sgr, bool on)
{
  if (!on) {
    return std::string(text);
  }
  std::string result = "\033[";
  result += sgr;
  result += 'm';
  result += text;
  result += "\033[0m";
  return result;
}

Progress::Progress(std::FILE* stream, std::string_view what, std::string_view unit)
  : m_stream(::isatty(::fileno(stream)) != 0 ? stream : nullptr)
  , m_what(what)
  , m_unit(unit)
{
}

Progress::~Progress()
{
  if (m_shown) {
    std::fputs("\r\033[K", m_stream);
  }
}

void
Progress::operator()(size_t done, size_t total)
{
  if (m_stream == nullptr) {
    return;
  }
  const int64_t now = util::now_ns();
  if (now - m_last < 100'000'000 && done != total) {
    return;
  }
  m_last = now;
  m_shown = true;
  std::fprintf(m_stream, "\r%s: %zu/%zu %s", m_what.c_str(), done, total, m_unit.c_str());
  std::fflush(m_stream);
}

std::string
dump_json(const nlohmann::ordered_json& value)
{
  return value.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

std::optional<store::LogContents>
read_build_index(const store::Store& store, Context& context, const store::BuildRef& ref, std::string_view hint)
{
  auto index = store.read_build(ref);
  if (!index) {
    print_error(context, index.error().message);
    return std::nullopt;
  }
  report_problems(context, store.location(), index->problems);
  if (index->events.empty()) {
    if (known_project(store, ref.project, context)) {
      print_error(context,
                  "no build " + ref.build + " of project " + ref.project + " in " + store.location()
                    + std::string(hint));
    }
    return std::nullopt;
  }
  return std::move(*index);
}

bool
known_project(const store::Store& store, const std::string& project, Context& context)
{
  auto builds = store.list_builds();
  if (!builds) {
    print_error(context, builds.error().message);
    return false;
  }
  std::set<std::string> projects;
  for (const store::BuildRef& ref : *builds) {
    projects.insert(ref.project);
  }
  if (projects.contains(project)) {
    return true;
  }
  // The same name in another case first ("mylib" for "MYLIB"), else the
  // nearest by edit distance, within a third of the name.
  auto lower = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
  };
  std::string best;
  size_t best_distance = std::max<size_t>(2, project.size() / 3) + 1;
  for (const std::string& name : projects) {
    const size_t distance = lower(name) == lower(project) ? 0 : util::edit_distance(project, name);
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  std::string message = "no project " + project + " in the store " + store.location();
  if (!best.empty()) {
    message += "; did you mean '" + best + "'?";
  } else {
    message += " (fingerprint builds lists the projects it has)";
  }
  print_error(context, message);
  return false;
}

void
write_out(Context& context, std::string_view text)
{
  std::fwrite(text.data(), 1, text.size(), context.out);
}

} // namespace fingerprint::cmd
