#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/migrate.hpp>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"from", OptionKind::value, "DIR", "the directory store to copy; required"},
  {"to", OptionKind::value, "URL", "the PostgreSQL store to copy into (postgresql://user@host:port/db); required"},
  {"json", OptionKind::flag, {}, "print what was copied as JSON"},
};

int
run(const Args& args, Context& context, Prepared& /*prepared*/)
{
  const auto from = args.value("from");
  const auto to = args.value("to");
  if (!from || from->empty() || !to || to->empty() || !args.positional().empty()) {
    print_error(context, "migrate: give --from DIR and --to postgresql://..., and nothing else");
    return k_exit_usage;
  }
  if (store::is_database_url(*from) || !store::is_database_url(*to)) {
    print_error(context, "migrate: copies a directory store (--from DIR) into a database (--to postgresql://...)");
    return k_exit_usage;
  }
  auto source = store::DirectoryStore::open_for_reading(*from);
  if (!source) {
    print_error(context, "migrate: " + source.error().message);
    return k_exit_failure;
  }
  if (!source->exists()) {
    print_error(context, "migrate: " + *from + ": no such store");
    return k_exit_failure;
  }
  auto target = store::open_store(*to, store::Access::write);
  if (!target) {
    print_error(context, "migrate: " + target.error().message);
    return k_exit_failure;
  }
  Expected<store::MigrateReport> report = Error{};
  {
    Progress progress(context.err, "migrate", "steps (read every log, then copy)");
    report = store::migrate(*source, **target, [&](size_t done, size_t total) { progress(done, total); });
  }
  if (!report) {
    print_error(context, "migrate: " + report.error().message);
    return k_exit_failure;
  }
  if (args.flag("json")) {
    nlohmann::ordered_json out;
    out["from"] = source->root();
    out["to"] = (*target)->location();
    out["logs"] = report->logs;
    out["events_read"] = report->events_read;
    out["events_copied"] = report->events_copied;
    out["events_present"] = report->events_present;
    out["manifests_copied"] = report->manifests_copied;
    out["manifests_present"] = report->manifests_present;
    out["provenance_copied"] = report->provenance_copied;
    out["provenance_present"] = report->provenance_present;
    write_out(context, dump_json(out));
  } else {
    write_out(context,
              "migrate: copied " + std::to_string(report->events_copied) + " of " + std::to_string(report->events_read)
                + " events from " + std::to_string(report->logs) + " artifact logs in " + source->root() + " to "
                + (*target)->location() + " (" + std::to_string(report->events_present) + " were already there), and "
                + std::to_string(report->manifests_copied) + " of "
                + std::to_string(report->manifests_copied + report->manifests_present) + " input manifests ("
                + std::to_string(report->manifests_present) + " were already there), and "
                + std::to_string(report->provenance_copied) + " of "
                + std::to_string(report->provenance_copied + report->provenance_present) + " builds' provenance\n");
  }
  return k_exit_ok;
}

} // namespace

extern const Command k_migrate_command{
  .name = "migrate",
  .synopsis = "--from DIR --to postgresql://user@host:port/db [--json]",
  .summary = "copy a directory store into a PostgreSQL store; running it again copies only what is new",
  .options = k_options,
  .run = run};

} // namespace fingerprint::cmd
