#pragma once

// A build's provenance (README, "Build provenance"; store/provenance.hpp
// has the document), recorded once per build invocation rather than per
// hook: the first hook of a build that records collects it, from what the
// CMake module wrote at configure time,
//
//   <build_dir>/CMakeFiles/fingerprint/toolchain.json
//     {"source_dir", "cmake": {"version", "generator"}, "multi_config",
//      "build_type", "compilers": {<LANG>: {"id", "version", "path"}},
//      "flags": {<config>: {<name>: <flags>}}}
//
// and from what only the build knows: the source tree's git state and the
// CI run. Beside it, in the build tree:
//
//   provenance.json   the document of the latest build, kept for the hooks after
//                     the first (and for a store out of reach: journaled with a call)
//   provenance.sent   "<store>\n<build id>\n": the store has it; every later hook
//                     reads this file only
//   provenance.lock   flock()ed while the document is collected

#include <fingerprint/hook/recorder.hpp>
#include <fingerprint/store/store.hpp>
#include <fingerprint/util/expected.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace fingerprint::hook {

// `url` without a user name or password: "https://user:token@host/x" is
// "https://host/x". An scp-like "git@host:path" holds no secret and is kept.
std::string strip_url_credentials(std::string_view url);

// What `git status --porcelain=v2 --branch --untracked-files=no` says.
struct GitStatus
{
  std::string commit;   // empty: no commit yet
  std::string branch;   // empty: a detached HEAD
  std::string upstream; // "<remote>/<branch>", when the branch has one
  bool dirty = false;   // a tracked file differs from the commit (untracked files do not count)
};
std::optional<GitStatus> parse_git_status(std::string_view text);

// The remote to name out of `git config --get-regexp '^remote\..*\.url$'`:
// the upstream's, else "origin", else the first; credentials stripped.
std::string pick_remote(std::string_view config_lines, std::string_view upstream);

// The CI run's URL, from its environment (GitHub Actions, GitLab CI,
// Jenkins, Buildkite); empty outside CI. `get` reads a variable.
std::string ci_run_url(const std::function<std::string(const char*)>& get);

// The document for `request`'s build from the toolchain file's text and
// the facts collected at build time; an error when the toolchain file is
// not one, or names no flags for `config` (a multi-config tree and a hook
// that does not know its configuration). Exposed for tests.
struct BuildFacts
{
  std::optional<GitStatus> git;
  std::string remote;
  std::string ci_url;
  std::string host;
  std::string time;
};
Expected<std::string> make_provenance(const RecordRequest& request,
                                      std::string_view toolchain,
                                      const std::string& toolchain_file,
                                      const BuildFacts& facts);

// What a hook still has to deliver of its build's provenance.
struct PendingProvenance
{
  store::BuildRef build;
  std::string document;
  std::string sent_file; // where to say it was delivered
  std::string sent_text;
};

// Nothing when the build tree has no toolchain file (not configured by the
// CMake module, or with FINGERPRINT_PROVENANCE off), when provenance.sent
// says the store has this build's already (one read: every hook but the
// first), or when the hook cannot tell its configuration in a multi-config
// tree. Else the document, collected now (running git) unless an earlier
// hook of the build left it. Problems are warnings: a build is recorded
// without its provenance rather than not at all.
std::optional<PendingProvenance> pending_provenance(const RecordRequest& request,
                                                    const std::function<void(const std::string&)>& on_warning);

// Notes that the store (or its journal) holds `pending`'s document.
void mark_provenance_sent(const PendingProvenance& pending);

} // namespace fingerprint::hook
