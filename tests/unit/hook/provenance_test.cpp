// Collecting a build's provenance (hook/provenance.hpp): what git, the CI
// and the toolchain file say, and that a build collects it once.

#include <fingerprint/hook/provenance.hpp>
#include <fingerprint/store/provenance.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include <cstdlib>
#include <filesystem>
#include <map>

namespace fingerprint::hook {
namespace {

using test::TempDir;

TEST(ProvenanceUrl, CredentialsAreStrippedAndTheRestKept)
{
  EXPECT_EQ(strip_url_credentials("https://user:s3cret@example.com/x.git"), "https://example.com/x.git");
  EXPECT_EQ(strip_url_credentials("https://ghp_token@github.com/o/r"), "https://github.com/o/r");
  EXPECT_EQ(strip_url_credentials("ssh://git@host:22/o/r.git"), "ssh://host:22/o/r.git");
  EXPECT_EQ(strip_url_credentials("https://example.com/a@b"), "https://example.com/a@b") << "an @ in the path";
  EXPECT_EQ(strip_url_credentials("git@github.com:o/r.git"), "git@github.com:o/r.git") << "scp-like: no secret";
  EXPECT_EQ(strip_url_credentials("/srv/git/r.git"), "/srv/git/r.git");
}

TEST(ProvenanceGit, StatusSaysCommitBranchUpstreamAndDirtiness)
{
  const std::string commit(40, 'a');
  auto clean = parse_git_status("# branch.oid " + commit + "\n# branch.head main\n# branch.upstream up/main\n");
  ASSERT_TRUE(clean);
  EXPECT_EQ(clean->commit, commit);
  EXPECT_EQ(clean->branch, "main");
  EXPECT_EQ(clean->upstream, "up/main");
  EXPECT_FALSE(clean->dirty);

  auto dirty = parse_git_status("# branch.oid " + commit + "\n# branch.head (detached)\n1 .M N... 100644 x\n");
  ASSERT_TRUE(dirty);
  EXPECT_TRUE(dirty->dirty);
  EXPECT_EQ(dirty->branch, "");

  auto initial = parse_git_status("# branch.oid (initial)\n# branch.head main\n");
  ASSERT_TRUE(initial);
  EXPECT_EQ(initial->commit, "");
  EXPECT_FALSE(parse_git_status("fatal: not a git repository\n"));
  EXPECT_FALSE(parse_git_status("# branch.oid zzzz\n"));
}

TEST(ProvenanceGit, TheUpstreamsRemoteElseOriginElseTheFirst)
{
  const std::string config = "remote.fork.url https://a:b@example.com/fork.git\n"
                             "remote.origin.url https://example.com/origin.git\n"
                             "remote.up.url git@example.com:up.git\n";
  EXPECT_EQ(pick_remote(config, "up/main"), "git@example.com:up.git");
  EXPECT_EQ(pick_remote(config, ""), "https://example.com/origin.git");
  EXPECT_EQ(pick_remote("remote.fork.url https://a:b@example.com/fork.git\n", ""), "https://example.com/fork.git");
  EXPECT_EQ(pick_remote("", "up/main"), "");
}

TEST(ProvenanceCi, EachCiSaysItsRunsUrl)
{
  std::map<std::string, std::string> env;
  auto get = [&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  EXPECT_EQ(ci_run_url(get), "");
  env = {
    {"GITHUB_ACTIONS", "true"}, {"GITHUB_REPOSITORY", "o/r"}, {"GITHUB_RUN_ID", "42"}, {"GITHUB_RUN_ATTEMPT", "2"}};
  EXPECT_EQ(ci_run_url(get), "https://github.com/o/r/actions/runs/42/attempts/2");
  env = {{"CI_JOB_URL", "https://gitlab.example/o/r/-/jobs/7"}};
  EXPECT_EQ(ci_run_url(get), "https://gitlab.example/o/r/-/jobs/7");
  env = {{"BUILD_URL", "https://admin:pw@jenkins.example/job/x/3/"}};
  EXPECT_EQ(ci_run_url(get), "https://jenkins.example/job/x/3/");
  env = {{"BUILDKITE_BUILD_URL", "https://buildkite.com/o/p/builds/9"}};
  EXPECT_EQ(ci_run_url(get), "https://buildkite.com/o/p/builds/9");
}

constexpr std::string_view k_single = R"({"source_dir": "/src", "multi_config": false,
  "cmake": {"version": "3.25.1", "generator": "Ninja"},
  "compilers": {"CXX": {"id": "GNU", "version": "12.2.0", "path": "/usr/bin/c++"}},
  "flags": {"Release": {"CXX_RELEASE": "-O3 -DNDEBUG", "CXX": "-Wall"}}})";

constexpr std::string_view k_multi = R"({"source_dir": "/src", "multi_config": true,
  "flags": {"Debug": {"CXX_DEBUG": "-g"}, "Release": {"CXX_RELEASE": "-O3"}}})";

RecordRequest
request_of(const std::string& config = "")
{
  RecordRequest request;
  request.project = "app";
  request.build_id = "3-0badcafe";
  request.build_dir = "/build";
  request.config = config;
  return request;
}

TEST(ProvenanceDocument, NamesTheBuildItsToolchainAndAFlagsDigestOfWhatTheFlagsAre)
{
  BuildFacts facts;
  facts.git = GitStatus{std::string(40, 'c'), "main", "", true};
  facts.remote = "https://example.com/app.git";
  facts.host = "h";
  facts.time = "2026-12-01T09:00:00.000Z";
  auto text = make_provenance(request_of(), k_single, "toolchain.json", facts);
  ASSERT_TRUE(text) << text.error().message;
  auto document = store::parse_provenance(*text, {"app", "3-0badcafe"}, "x");
  ASSERT_TRUE(document) << document.error().message;
  EXPECT_EQ((*document)["build_type"], "Release") << "one configuration: the hook need not know it";
  EXPECT_EQ((*document)["source"]["commit"], std::string(40, 'c'));
  EXPECT_EQ((*document)["source"]["dirty"], true);
  EXPECT_EQ((*document)["compilers"]["CXX"]["version"], "12.2.0");
  EXPECT_EQ((*document)["cmake"]["generator"], "Ninja");
  EXPECT_EQ((*document)["ci"], nullptr);
  EXPECT_EQ((*document)["flags"]["CXX_RELEASE"], "-O3 -DNDEBUG");

  // The same flags listed in another order digest alike; other flags do not.
  const std::string reordered = R"({"flags": {"Release": {"CXX": "-Wall", "CXX_RELEASE": "-O3 -DNDEBUG"}}})";
  const std::string changed = R"({"flags": {"Release": {"CXX": "-Wall", "CXX_RELEASE": "-O2"}}})";
  auto same = make_provenance(request_of(), reordered, "t", facts);
  auto other = make_provenance(request_of(), changed, "t", facts);
  ASSERT_TRUE(same && other);
  const auto digest_of = [](const std::string& t) { return nlohmann::json::parse(t)["flags_digest"]; };
  EXPECT_EQ(digest_of(*same), (*document)["flags_digest"]);
  EXPECT_NE(digest_of(*other), (*document)["flags_digest"]);

  facts.git.reset();
  auto no_git = make_provenance(request_of(), k_single, "t", facts);
  ASSERT_TRUE(no_git);
  EXPECT_EQ(nlohmann::json::parse(*no_git)["source"], nullptr);
}

TEST(ProvenanceDocument, AMultiConfigTreeNeedsTheHooksConfiguration)
{
  BuildFacts facts;
  auto unknown = make_provenance(request_of(), k_multi, "toolchain.json", facts);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("toolchain.json"), std::string::npos) << unknown.error().message;
  auto debug = make_provenance(request_of("Debug"), k_multi, "toolchain.json", facts);
  ASSERT_TRUE(debug) << debug.error().message;
  EXPECT_EQ(nlohmann::json::parse(*debug)["flags"]["CXX_DEBUG"], "-g");
  EXPECT_FALSE(make_provenance(request_of(), "[]", "toolchain.json", facts));
  // No CMAKE_BUILD_TYPE: the configuration named "", no build type.
  auto untyped = make_provenance(request_of(), R"({"flags": {"": {}}})", "toolchain.json", facts);
  ASSERT_TRUE(untyped) << untyped.error().message;
  EXPECT_EQ(nlohmann::json::parse(*untyped)["build_type"], nullptr);
}

// A real repository, a real toolchain file: the first hook of a build
// collects, the next ones read provenance.sent only, and the next build
// collects again.
TEST(ProvenanceBuild, TheFirstHookCollectsAndTheRestOfTheBuildDoesNot)
{
  if (::system("git --version >/dev/null 2>&1") != 0) {
    GTEST_FAIL() << "git is needed (tools/deps.sh installs it)";
  }
  TempDir dir;
  const std::string source = dir / "src";
  std::filesystem::create_directories(source);
  test::write_file(source + "/a.txt", "one\n");
  const std::string git = "git -C " + source + " -c user.email=t@example.com -c user.name=t ";
  ASSERT_EQ(::system((git + "init -q && " + git + "add a.txt && " + git + "commit -qm one && " + git
                      + "remote add origin https://u:token@example.com/app.git")
                       .c_str()),
            0);
  const std::string build = dir / "build";
  std::filesystem::create_directories(build + "/CMakeFiles/fingerprint");
  std::string toolchain(k_single);
  toolchain.replace(toolchain.find("/src"), 4, source);
  test::write_file(build + "/CMakeFiles/fingerprint/toolchain.json", toolchain);

  RecordRequest request = request_of();
  request.build_dir = build;
  request.store_root = dir / "store";
  std::vector<std::string> warnings;
  auto warn = [&](const std::string& warning) { warnings.push_back(warning); };
  auto first = pending_provenance(request, warn);
  ASSERT_TRUE(first);
  EXPECT_TRUE(warnings.empty());
  const auto document = nlohmann::json::parse(first->document);
  EXPECT_EQ(document["source"]["remote"], "https://example.com/app.git");
  EXPECT_EQ(document["source"]["dirty"], false);
  EXPECT_EQ(document["source"]["commit"].get<std::string>().size(), 40U);
  EXPECT_EQ(first->document.find("token"), std::string::npos);

  // Not yet delivered: the next hook takes the same document, without git.
  test::write_file(source + "/a.txt", "two\n");
  auto again = pending_provenance(request, warn);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->document, first->document);
  mark_provenance_sent(*again);
  EXPECT_FALSE(pending_provenance(request, warn)) << "delivered: the build's other hooks do nothing";

  request.build_id = "4-0badcafe";
  auto next = pending_provenance(request, warn);
  ASSERT_TRUE(next);
  EXPECT_EQ(nlohmann::json::parse(next->document)["source"]["dirty"], true) << "a.txt changed since the commit";
  EXPECT_EQ(nlohmann::json::parse(next->document)["build"], "4-0badcafe");

  // No toolchain file (FINGERPRINT_PROVENANCE OFF): nothing.
  std::filesystem::remove(build + "/CMakeFiles/fingerprint/toolchain.json");
  request.build_id = "5-0badcafe";
  EXPECT_FALSE(pending_provenance(request, warn));
}

} // namespace
} // namespace fingerprint::hook
