// `sync`: delivers what hooks journaled while the database was out of
// reach (store/spool.hpp), oldest first, each record call once.

#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/store/spool.hpp>

namespace fingerprint::cmd {

namespace {

std::string
plural(size_t count, std::string_view one, std::string_view many)
{
  return std::to_string(count) + " " + std::string(count == 1 ? one : many);
}

// The other journals that hold something, for a `sync` that had none.
void
mention_others(Context& context, const std::string& except)
{
  for (const auto& [url, directory] : store::Spool::all_waiting(store::spool_root())) {
    if (directory != except) {
      write_out(context, "sync: calls for " + url + " wait in " + directory + " (run: fingerprint --store URL sync)\n");
    }
  }
}

// What delivery set aside and never deletes: said on every `sync`, so it is not forgotten.
void
set_aside_notes(Context& context, const store::SpoolContents& contents, const store::Spool& spool)
{
  if (contents.refused > 0) {
    print_error(context,
                "sync: " + plural(contents.refused, "record call", "record calls") + " the database refused wait in "
                  + spool.directory() + "/refused (once the cause is fixed: fingerprint sync --retry-refused)");
  }
  if (contents.damaged > 0) {
    print_error(context,
                "sync: " + plural(contents.damaged, "unreadable entry is", "unreadable entries are") + " set aside in "
                  + spool.directory() + "/damaged (never deleted; nothing delivers them)");
  }
}

constexpr OptionSpec k_options[] = {
  {"retry-refused",
   OptionKind::flag,
   {},
   "put the calls the database refused (refused/) back in line first, to be delivered again"},
};

int
run(const Args& args, Context& context, Prepared& /*prepared*/)
{
  auto root = store_path(args);
  if (!root) {
    print_error(context, root.error().message);
    return k_exit_usage;
  }
  if (!store::is_database_url(*root)) {
    write_out(context, "sync: " + *root + " is a directory store: it is written directly, nothing is spooled for it\n");
    mention_others(context, {});
    return k_exit_ok;
  }
  auto spool = store::Spool::for_database(*root);
  if (!spool) {
    print_error(context, "sync: " + spool.error().message);
    return k_exit_failure;
  }
  if (args.flag("retry-refused")) {
    auto moved = spool->retry_refused();
    if (!moved) {
      print_error(context, "sync: " + moved.error().message);
      return k_exit_failure;
    }
    if (*moved > 0) {
      write_out(context,
                "sync: " + plural(*moved, "refused record call", "refused record calls")
                  + " put back to be delivered again\n");
    }
  }
  const auto before = spool->contents();
  if (before.calls == 0 && before.problems.empty()) {
    write_out(context, "sync: nothing waits for " + spool->url() + "\n");
    set_aside_notes(context, before, *spool);
    mention_others(context, spool->directory());
    return k_exit_ok;
  }
  write_out(context, "sync: " + store::Spool::waiting_note(before, *spool, false) + "\n");
  auto opened = store::open_store(*root, store::Access::write);
  if (!opened) {
    // Delivery would have set them aside (damaged/) and said so.
    for (const auto& problem : before.problems) {
      print_error(context, "sync: " + problem);
    }
    print_error(context,
                "sync: " + opened.error().message + "; nothing delivered, "
                  + plural(before.calls, "record call", "record calls") + " still wait in " + spool->directory());
    return k_exit_failure;
  }
  store::DeliveryReport report;
  {
    Progress progress(context.err, "sync", "record calls delivered");
    // Waits for a hook that delivers this journal right now, then delivers
    // what it left.
    report = spool->deliver(**opened, true, [&](size_t done, size_t total) { progress(done, total); });
  }
  for (const auto& problem : report.problems) {
    print_error(context, "sync: " + problem);
  }
  std::string text = "sync: delivered " + plural(report.events, "event", "events") + " of "
                     + plural(report.delivered, "record call", "record calls") + " to " + (*opened)->location();
  if (report.manifests > 0) {
    text += ", and " + plural(report.manifests, "input manifest", "input manifests") + " it lacked";
  }
  if (report.already > 0) {
    text += "; " + plural(report.already, "call was", "calls were")
            + " there already (a delivery cut short after its commit), removed from the journal";
  }
  write_out(context, text + "\n");
  const auto after = spool->contents();
  set_aside_notes(context, after, *spool);
  if (report.error) {
    print_error(context, "sync: " + report.error->message);
  }
  if (after.calls > 0) {
    print_error(context, "sync: " + store::Spool::waiting_note(after, *spool, false));
    return k_exit_failure;
  }
  return report.error || report.refused > 0 || !after.problems.empty() ? k_exit_failure : k_exit_ok;
}

} // namespace

extern const Command k_sync_command{
  .name = "sync",
  .synopsis = "[--store URL] [--retry-refused]",
  .summary = "deliver the events hooks spooled while the database was out of reach",
  .options = k_options,
  .run = run,
  .arity = {0, 0, "takes no arguments (the database is --store URL or $FINGERPRINT_DIR)"}};

} // namespace fingerprint::cmd
