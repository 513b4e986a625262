#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/hook/provenance.hpp>
#include <fingerprint/store/provenance.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/process.hpp>
#include <fingerprint/util/text.hpp>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace fingerprint::hook {

namespace {

std::string
fingerprint_dir(const std::string& build_dir)
{
  return build_dir + "/CMakeFiles/fingerprint";
}

// Lines of `text`, without their newlines.
template <typename Each>
void
for_each_line(std::string_view text, Each&& each)
{
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    each(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
  }
}

bool
flag_of(const nlohmann::json& object, const char* key)
{
  const auto it = object.find(key);
  return it != object.end() && it->is_boolean() && it->get<bool>();
}

std::string
read_small(const std::string& path)
{
  auto text = util::read_regular_file(path);
  return text ? std::move(*text) : std::string();
}

// The git state of the tree at `dir`; nothing when it is not in a git
// work tree, or git is not installed. --no-optional-locks: a build must not
// take the index lock of someone's `git commit` running meanwhile.
std::optional<GitStatus>
git_status(const std::string& dir, std::string& remote)
{
  const auto git = util::find_program("git");
  if (!git) {
    return std::nullopt;
  }
  auto status = util::run_captured(
    {*git, "--no-optional-locks", "-C", dir, "status", "--porcelain=v2", "--branch", "--untracked-files=no"}, "");
  if (!status || status->status != 0) {
    return std::nullopt;
  }
  auto parsed = parse_git_status(status->out);
  if (!parsed) {
    return std::nullopt;
  }
  auto remotes = util::run_captured({*git, "-C", dir, "config", "--get-regexp", R"(^remote\..*\.url$)"}, "");
  if (remotes && remotes->status == 0) {
    remote = pick_remote(remotes->out, parsed->upstream);
  }
  return parsed;
}

} // namespace

std::string
strip_url_credentials(std::string_view url)
{
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) {
    return std::string(url); // a path, or scp-like user@host:path
  }
  const size_t authority = scheme + 3;
  const size_t end = url.find_first_of("/?#", authority);
  const std::string_view host_part = url.substr(authority, end == std::string_view::npos ? url.npos : end - authority);
  const size_t at = host_part.rfind('@');
  if (at == std::string_view::npos) {
    return std::string(url);
  }
  return std::string(url.substr(0, authority)) + std::string(url.substr(authority + at + 1));
}

std::optional<GitStatus>
parse_git_status(std::string_view text)
{
  GitStatus status;
  bool has_oid = false;
  for_each_line(text, [&](std::string_view line) {
    if (line.starts_with("# branch.oid ")) {
      const std::string_view oid = line.substr(13);
      has_oid = true;
      if (oid != "(initial)") {
        status.commit = std::string(oid);
      }
    } else if (line.starts_with("# branch.head ")) {
      const std::string_view head = line.substr(14);
      if (head != "(detached)") {
        status.branch = std::string(head);
      }
    } else if (line.starts_with("# branch.upstream ")) {
      status.upstream = std::string(line.substr(18));
    } else if (!line.empty() && line[0] != '#') {
      status.dirty = true; // a changed entry ("1 ...", "2 ...", "u ...")
    }
  });
  if (!has_oid || (!status.commit.empty() && !util::is_lower_hex(status.commit, status.commit.size()))) {
    return std::nullopt;
  }
  return status;
}

std::string
pick_remote(std::string_view config_lines, std::string_view upstream)
{
  const std::string wanted(upstream.substr(0, upstream.find('/')));
  std::string first;
  std::string origin;
  std::string chosen;
  for_each_line(config_lines, [&](std::string_view line) {
    // "remote.<name>.url <url>"
    const size_t space = line.find(' ');
    if (!line.starts_with("remote.") || space == std::string_view::npos || space < 12) {
      return;
    }
    const std::string_view name = line.substr(7, space - 7 - 4);
    const std::string url = strip_url_credentials(line.substr(space + 1));
    if (first.empty()) {
      first = url;
    }
    if (name == "origin" && origin.empty()) {
      origin = url;
    }
    if (!wanted.empty() && name == wanted && chosen.empty()) {
      chosen = url;
    }
  });
  return !chosen.empty() ? chosen : !origin.empty() ? origin : first;
}

std::string
ci_run_url(const std::function<std::string(const char*)>& get)
{
  std::string url;
  if (get("GITHUB_ACTIONS") == "true" && !get("GITHUB_REPOSITORY").empty() && !get("GITHUB_RUN_ID").empty()) {
    std::string server = get("GITHUB_SERVER_URL");
    url = (server.empty() ? std::string("https://github.com") : server) + "/" + get("GITHUB_REPOSITORY")
          + "/actions/runs/" + get("GITHUB_RUN_ID");
    if (const std::string attempt = get("GITHUB_RUN_ATTEMPT"); !attempt.empty()) {
      url += "/attempts/" + attempt;
    }
  } else if (!get("CI_JOB_URL").empty()) {
    url = get("CI_JOB_URL");
  } else if (!get("BUILDKITE_BUILD_URL").empty()) {
    url = get("BUILDKITE_BUILD_URL");
  } else if (!get("BUILD_URL").empty()) {
    url = get("BUILD_URL"); // Jenkins
  }
  return strip_url_credentials(url);
}

Expected<std::string>
make_provenance(const RecordRequest& request,
                std::string_view toolchain,
                const std::string& toolchain_file,
                const BuildFacts& facts)
{
  const nlohmann::json configured = nlohmann::json::parse(toolchain, nullptr, false);
  if (configured.is_discarded() || !configured.is_object() || !configured.contains("flags")
      || !configured["flags"].is_object()) {
    return make_error(toolchain_file, "not the CMake module's toolchain file (a JSON object with \"flags\")");
  }
  const bool multi = flag_of(configured, "multi_config");
  const auto& all_flags = configured["flags"];
  std::string config = request.config;
  if (!multi && all_flags.size() == 1) {
    config = all_flags.begin().key(); // one configuration: the hook need not know it
  }
  const auto flags = all_flags.find(config);
  if (flags == all_flags.end() || !flags->is_object()) {
    return make_error(toolchain_file, "names no flags of configuration \"" + config + "\"");
  }

  nlohmann::ordered_json document;
  document["provenance"] = store::k_provenance_version;
  document["project"] = request.project;
  document["build"] = request.build_id;
  document["version"] = request.version;
  document["host"] = facts.host;
  document["time"] = facts.time;
  document["source_dir"] = store::json_text(configured, "source_dir");
  document["build_dir"] = request.build_dir;
  if (facts.git) {
    nlohmann::ordered_json source;
    source["vcs"] = "git";
    source["commit"] = facts.git->commit.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(facts.git->commit);
    source["branch"] = facts.git->branch.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(facts.git->branch);
    source["dirty"] = facts.git->dirty;
    source["remote"] = facts.remote.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(facts.remote);
    document["source"] = std::move(source);
  } else {
    document["source"] = nullptr;
  }
  nlohmann::ordered_json cmake;
  if (const auto it = configured.find("cmake"); it != configured.end() && it->is_object()) {
    cmake["version"] = store::json_text(*it, "version");
    cmake["generator"] = store::json_text(*it, "generator");
  }
  document["cmake"] = std::move(cmake);
  document["build_type"] = config.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(config);
  nlohmann::ordered_json compilers = nlohmann::ordered_json::object();
  if (const auto it = configured.find("compilers"); it != configured.end() && it->is_object()) {
    for (const auto& [language, compiler] : it->items()) {
      if (compiler.is_object()) {
        compilers[language] = {{"id", store::json_text(compiler, "id")},
                               {"version", store::json_text(compiler, "version")},
                               {"path", store::json_text(compiler, "path")}};
      }
    }
  }
  document["compilers"] = std::move(compilers);
  // Sorted keys (nlohmann::json is an ordered map): the digest is of what
  // the flags are, not of the order CMake listed them in.
  const std::string canonical = flags->dump();
  digest::Hasher hasher(digest::Algorithm::sha256);
  auto digest = hasher.digest_bytes(canonical);
  if (!digest) {
    return digest.error();
  }
  document["flags"] = nlohmann::ordered_json::parse(canonical);
  document["flags_digest"] = "sha256:" + *digest;
  document["ci"] = facts.ci_url.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json{{"url", facts.ci_url}};
  return document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::optional<PendingProvenance>
pending_provenance(const RecordRequest& request, const std::function<void(const std::string&)>& on_warning)
{
  if (request.build_dir.empty()) {
    return std::nullopt;
  }
  const std::string dir = fingerprint_dir(request.build_dir);
  PendingProvenance pending;
  pending.build = {request.project, request.build_id};
  pending.sent_file = dir + "/provenance.sent";
  pending.sent_text = request.store_root + "\n" + request.build_id + "\n";
  if (read_small(pending.sent_file) == pending.sent_text) {
    return std::nullopt; // every hook of a build but the first
  }
  const std::string toolchain_file = dir + "/toolchain.json";
  auto toolchain = util::read_regular_file(toolchain_file);
  if (!toolchain) {
    return std::nullopt; // not configured by the module, or provenance off
  }

  // One hook collects; the others of the build wait for it and take its document.
  const std::string lock_file = dir + "/provenance.lock";
  util::Fd lock(::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666));
  if (lock) {
    while (::flock(lock.get(), LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  if (read_small(pending.sent_file) == pending.sent_text) {
    return std::nullopt;
  }
  const std::string kept_file = dir + "/provenance.json";
  const std::string kept = read_small(kept_file);
  if (!kept.empty() && store::parse_provenance(kept, pending.build, kept_file)) {
    pending.document = kept;
    return pending;
  }
  const nlohmann::json configured = nlohmann::json::parse(*toolchain, nullptr, false);
  const bool object = configured.is_object();
  if (object && request.config.empty() && flag_of(configured, "multi_config")) {
    // A multi-config tree's custom command, which cannot tell its
    // configuration, leaves it to the build's first link.
    return std::nullopt;
  }
  const std::string source_dir = object ? store::json_text(configured, "source_dir") : std::string();
  BuildFacts facts;
  if (!source_dir.empty()) {
    facts.git = git_status(source_dir, facts.remote);
  }
  facts.ci_url = ci_run_url([](const char* name) {
    const char* value = std::getenv(name);
    return std::string(value != nullptr ? value : "");
  });
  facts.host = host_name();
  facts.time = util::format_rfc3339(util::now_ns());
  auto document = make_provenance(request, *toolchain, toolchain_file, facts);
  if (!document) {
    if (on_warning) {
      on_warning("build provenance not recorded: " + document.error().message);
    }
    // Said once: the build's other hooks would find the same.
    util::replace_file(pending.sent_file, pending.sent_text);
    return std::nullopt;
  }
  pending.document = std::move(*document);
  if (!util::replace_file(kept_file, pending.document) && on_warning) {
    on_warning(kept_file + ": cannot be written; the next hook collects the build provenance again");
  }
  return pending;
}

void
mark_provenance_sent(const PendingProvenance& pending)
{
  util::replace_file(pending.sent_file, pending.sent_text);
}

} // namespace fingerprint::hook
