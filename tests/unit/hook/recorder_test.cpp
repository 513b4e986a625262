// Recording one build step (hook/recorder.hpp): inputs that may be gone.

#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/hook/recorder.hpp>
#include <fingerprint/store/directory_store.hpp>

#include <gtest/gtest.h>

#include "temp_dir.hpp"
#include <cstdlib>
#include <string>
#include <vector>

namespace fingerprint::hook {
namespace {

using test::TempDir;

struct Outcome
{
  Expected<size_t> recorded;
  std::vector<std::string> file_errors;
  std::vector<std::string> warnings;
};

Outcome
record_with(const RecordRequest& request)
{
  std::vector<std::string> file_errors;
  std::vector<std::string> warnings;
  auto recorded = record(
    request,
    [&](const Error& error) { file_errors.push_back(error.message); },
    [&](const std::string& warning) { warnings.push_back(warning); });
  return {std::move(recorded), std::move(file_errors), std::move(warnings)};
}

// A compile input deleted since its compile (found missing by the digest's
// own stat, the hook looks at none beforehand) is left out with a warning
// naming it; the output and the inputs that are there are recorded. The
// same file as an input that must be there is an error, and nothing is
// recorded.
TEST(Recorder, AnInputThatMayBeGoneIsLeftOutWithAWarningAndAnyOtherMissingOneFails)
{
  TempDir dir;
  ::setenv("FINGERPRINT_CACHE_DIR", "", 1);
  test::write_file(dir / "out", "linked");
  test::write_file(dir / "kept.h", "kept");
  RecordRequest request;
  request.store_root = dir / "store";
  request.project = "p";
  request.target = "t";
  request.build_id = "1";
  request.build_dir = dir.path();
  request.produced = {dir / "out"};
  request.consumed = {{dir / "kept.h", store::Role::compile, true}, {dir / "deleted.h", store::Role::compile, true}};

  auto gone = record_with(request);
  ASSERT_TRUE(gone.recorded) << gone.recorded.error().message;
  EXPECT_TRUE(gone.file_errors.empty());
  ASSERT_EQ(gone.warnings.size(), 1U);
  EXPECT_NE(gone.warnings[0].find("1 of the files it read are gone"), std::string::npos) << gone.warnings[0];
  EXPECT_NE(gone.warnings[0].find(dir / "deleted.h"), std::string::npos) << gone.warnings[0];

  auto store = store::DirectoryStore::open_for_reading(dir / "store");
  ASSERT_TRUE(store) << store.error().message;
  digest::Hasher hasher(digest::Algorithm::sha256);
  auto kept_hex = hasher.digest_bytes("kept");
  ASSERT_TRUE(kept_hex);
  std::vector<store::LogProblem> problems;
  auto uses = store->find_manifest_uses(store::DigestKey{digest::Algorithm::sha256, *kept_hex}, problems);
  ASSERT_TRUE(uses) << uses.error().message;
  ASSERT_EQ(uses->size(), 1U) << "the input that is there was not recorded";
  auto manifest = store->read_manifest((*uses)[0].manifest);
  ASSERT_TRUE(manifest && *manifest);
  ASSERT_EQ((*manifest)->entries.size(), 1U) << "the gone input is in the manifest";
  EXPECT_EQ((*manifest)->entries[0].path, dir / "kept.h");

  request.consumed[1].may_be_gone = false;
  test::write_file(dir / "out", "linked again");
  auto missing = record_with(request);
  ASSERT_FALSE(missing.recorded);
  ASSERT_EQ(missing.file_errors.size(), 1U);
  EXPECT_NE(missing.file_errors[0].find(dir / "deleted.h"), std::string::npos) << missing.file_errors[0];
  ::unsetenv("FINGERPRINT_CACHE_DIR");
}

} // namespace
} // namespace fingerprint::hook
