// fingerprint_writer: appends COUNT consumer events to one artifact's log,
// each the way a hook does it (open the store, append), with build ids
// <NAME>-0 .. <NAME>-(COUNT-1). compare.sh runs 8 of these at once against
// one doing 8 times the work, to show appends do not collapse under
// contention, and counts the lines to show none was lost.
//
//   fingerprint_writer STORE NAME COUNT

#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/event.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

int
main(int argc, char** argv)
{
  if (argc != 4) {
    std::fprintf(stderr, "usage: fingerprint_writer STORE NAME COUNT\n");
    return 2;
  }
  const std::string root = argv[1];
  const std::string name = argv[2];
  const long count = std::atol(argv[3]);
  fingerprint::store::Event event;
  event.event = fingerprint::store::EventKind::consumed;
  event.digest = "sha256:" + std::string(64, 'c');
  event.product = "sha256:" + std::string(64, 'd');
  event.size = 4096;
  event.path = "/usr/lib/x86_64-linux-gnu/libshared.so.1";
  event.project = name;
  event.target = "app";
  event.build_dir = "/builds/" + name;
  event.host = "bench";
  event.time = "2026-11-30T09:00:00.000Z";
  for (long i = 0; i < count; ++i) {
    event.build = name + "-" + std::to_string(i);
    auto store = fingerprint::store::DirectoryStore::open_for_writing(root);
    if (!store) {
      std::fprintf(stderr, "fingerprint_writer: %s\n", store.error().message.c_str());
      return 1;
    }
    if (auto ok = store->append({event}); !ok) {
      std::fprintf(stderr, "fingerprint_writer: %s\n", ok.error().message.c_str());
      return 1;
    }
  }
  return 0;
}
