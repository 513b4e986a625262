#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/digest/engine.hpp>
#include <fingerprint/query/index.hpp>
#include <fingerprint/store/artifact_record.hpp>

#include <map>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"build-dir", OptionKind::value, "D", "the build tree that must have produced FILE; required"},
  {"target", OptionKind::value, "T", "the target that must have produced it"},
  {"algorithm", OptionKind::value, "A", "digest algorithm (default sha256)"},
};

// Why no producer event matched: the file changed since it was recorded,
// or the store lost the record (the build index still names these bytes).
std::string
explain_missing(const store::Store& store,
                const std::string& path,
                const std::string& build_dir,
                const std::string& digest)
{
  std::map<std::string, store::Event> newest;
  std::vector<store::LogProblem> ignored; // check reports the artifact's own log
  (void)query::for_each_indexed_event(
    store,
    [&](store::Event& event) {
      if (event.event == store::EventKind::produced && event.path == path && event.build_dir == build_dir) {
        query::keep_newest(newest, path, event);
      }
    },
    ignored);
  const store::Event* latest = newest.empty() ? nullptr : &newest.begin()->second;
  if (!latest) {
    return "the store holds no record of it from this build tree (lost, or never recorded)";
  }
  if (latest->digest == digest) {
    return "the store holds no record of it from this build tree: the artifact's log lost it (build " + latest->build
           + " lists it)";
  }
  return "the file was modified after the build (the store recorded " + latest->digest + ")";
}

constexpr std::string_view k_usage = "give --build-dir D and exactly one FILE";

int
validate(const Args& args, Context& context)
{
  if (!args.value("build-dir")) {
    print_error(context, "check: " + std::string(k_usage));
    return k_exit_usage;
  }
  return k_exit_ok;
}

int
run(const Args& args, Context& context, Prepared& prepared)
{
  const auto build_dir = args.value("build-dir");
  const std::string path = absolute_path(args.positional().front());
  const std::string tree = absolute_path(*build_dir);
  const auto target = args.value("target");

  digest::Hasher hasher(prepared.algorithm);
  auto file = digest::digest_path(hasher, path, nullptr);
  if (!file) {
    print_error(context, file.error().message);
    return k_exit_failure;
  }
  const store::DigestKey key{prepared.algorithm, file->hex};
  auto record = store::load_record(*prepared.store, key);
  if (!record) {
    print_error(context, record.error().message);
    return k_exit_failure;
  }
  report_problems(context, prepared.store->location(), record->problems);
  const store::Event* producer = nullptr;
  for (const auto& event : record->producers) {
    if (event.event == store::EventKind::produced && event.build_dir == tree && (!target || event.target == *target)) {
      producer = &event;
    }
  }
  if (producer == nullptr) {
    print_error(context, path + ": " + explain_missing(*prepared.store, path, tree, key.str()));
    return k_exit_failure;
  }

  // Every stored line must survive serialize(parse(line)) unchanged: what
  // this version writes, it reads back exactly.
  auto raw = prepared.store->read_raw_log(key);
  if (!raw) {
    print_error(context, raw.error().message);
    return k_exit_failure;
  }
  size_t line_number = 0;
  size_t start = 0;
  while (start < raw->size()) {
    const size_t end = raw->find('\n', start);
    if (end == std::string::npos) {
      break; // a torn tail is not a stored event
    }
    ++line_number;
    const std::string_view line(raw->data() + start, end - start);
    start = end + 1;
    if (line.empty()) {
      continue;
    }
    auto event = store::parse_event(line);
    if (event && store::serialize(*event) != line) {
      print_error(context,
                  prepared.store->location() + "/" + key.log_path() + ":" + std::to_string(line_number)
                    + ": does not survive serialize -> parse -> serialize byte for byte");
      return k_exit_failure;
    }
  }
  write_out(context,
            path + ": OK (" + key.str() + ", produced by " + producer->project + "/" + producer->target + " build "
              + producer->build + ", " + std::to_string(line_number) + " log lines round-trip)\n");
  return k_exit_ok;
}

} // namespace

extern const Command k_check_command{.name = "check",
                                     .synopsis = "--build-dir D [--target T] FILE",
                                     .summary = "the CTest round trip: FILE's bytes were recorded as produced by build "
                                                "tree D, and its record re-serializes byte for byte",
                                     .options = k_options,
                                     .run = run,
                                     .needs = Needs::store,
                                     .arity = {1, 1, k_usage},
                                     .validate = validate};

} // namespace fingerprint::cmd
