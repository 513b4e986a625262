#include <fingerprint/cmd/command.hpp>
#include <fingerprint/cmd/common.hpp>
#include <fingerprint/store/spool.hpp>
#include <fingerprint/util/text.hpp>

#include <unistd.h>

namespace fingerprint::cmd {

namespace {

constexpr OptionSpec k_options[] = {
  {"repair", OptionKind::flag, {}, "move damaged and stray files to quarantine/ and rebuild the damaged logs"},
  {"json", OptionKind::flag, {}, "print the report as JSON"},
};

int
run(const Args& args, Context& context, Prepared& prepared)
{
  store::FsckOptions options;
  options.repair = args.flag("repair");
  Expected<store::FsckReport> report = Error{};
  {
    Progress progress(context.err, "fsck", "files checked");
    options.progress = [&](size_t done, size_t total) { progress(done, total); };
    report = prepared.store->fsck(options);
  }
  if (!report) {
    print_error(context, "fsck: " + report.error().message);
    return k_exit_failure;
  }
  size_t torn = 0;
  for (const auto& finding : report->findings) {
    torn += finding.kind == store::FsckKind::torn_line ? 1 : 0;
  }
  // A database's journal on this machine: what hooks spooled while it was
  // out of reach, not in the store yet.
  std::optional<store::Spool> spool;
  store::SpoolContents waiting;
  if (store::is_database_url(prepared.store->location())) {
    if (auto found = store::Spool::for_database(prepared.store->location())) {
      spool = std::move(*found);
      waiting = spool->contents();
    }
  }
  // Calls the database refused, and entries that could not be read, are
  // events not in the store: problems, not merely waiting.
  const bool healthy = report->repaired == report->findings.size() && waiting.problems.empty() && waiting.refused == 0
                       && waiting.damaged == 0;
  if (args.flag("json")) {
    nlohmann::ordered_json out;
    out["store"] = prepared.store->location();
    out["logs"] = report->logs;
    out["build_indexes"] = report->build_indexes;
    out["manifests"] = report->manifests;
    out["reverse_indexes"] = report->reverse_indexes;
    out["journaled_manifests"] = report->journaled_manifests;
    out["events"] = report->events;
    out["problems"] = nlohmann::ordered_json::array();
    for (const auto& finding : report->findings) {
      nlohmann::ordered_json problem;
      problem["file"] = finding.file;
      problem["line"] = finding.line;
      problem["problem"] = finding.problem;
      problem["kind"] = store::fsck_kind_name(finding.kind);
      if (!finding.repair.empty()) {
        problem["repair"] = finding.repair;
      }
      out["problems"].push_back(std::move(problem));
    }
    out["warnings"] = report->warnings;
    out["repaired"] = report->repaired;
    out["events_restored"] = report->events_restored;
    if (!report->quarantine.empty()) {
      out["quarantine"] = report->quarantine;
    }
    if (waiting.calls > 0 || !waiting.problems.empty() || waiting.refused > 0 || waiting.damaged > 0) {
      out["spool"] = {{"directory", spool->directory()},
                      {"calls", waiting.calls},
                      {"events", waiting.events},
                      {"refused", waiting.refused},
                      {"damaged", waiting.damaged},
                      {"problems", waiting.problems}};
    }
    write_out(context, dump_json(out));
    return healthy ? k_exit_ok : k_exit_failure;
  }
  std::string text;
  for (const auto& finding : report->findings) {
    text += prepared.store->location() + "/" + finding.file;
    if (finding.line > 0) {
      text += ":" + std::to_string(finding.line);
    }
    text += ": " + finding.problem + "\n";
    if (!finding.repair.empty()) {
      text += "  repaired: " + finding.repair + "\n";
    }
  }
  for (const auto& warning : report->warnings) {
    text += "warning: " + prepared.store->location() + "/" + warning + "\n";
  }
  text += "fsck: " + std::to_string(report->logs) + " artifact logs, " + std::to_string(report->build_indexes)
          + " build indexes, " + std::to_string(report->manifests) + " input manifests, "
          + std::to_string(report->reverse_indexes) + " reverse indexes"
          + (report->journaled_manifests > 0
               ? " (and " + std::to_string(report->journaled_manifests) + " manifests in their journal)"
               : std::string())
          + ", " + std::to_string(report->events) + " events; ";
  if (report->findings.empty()) {
    text += "no problems\n";
  } else {
    text += std::to_string(report->findings.size()) + " problem(s)";
    if (torn > 0) {
      text += " (" + std::to_string(torn) + " torn line(s) left by writers that died mid-write)";
    }
    if (options.repair) {
      text += ", " + std::to_string(report->repaired) + " repaired";
      if (report->events_restored > 0) {
        text += ", " + std::to_string(report->events_restored) + " events restored";
      }
    } else {
      text += "; run fingerprint fsck --repair to move them to quarantine/ and rebuild the logs";
    }
    text += "\n";
  }
  for (const auto& problem : waiting.problems) {
    text += problem + "\n";
  }
  if (waiting.calls > 0) {
    text += "fsck: " + store::Spool::waiting_note(waiting, *spool) + "\n";
  }
  if (waiting.refused > 0) {
    text += "fsck: " + std::to_string(waiting.refused) + " spooled record call(s) the database refused are in "
            + spool->directory() + "/refused (once the cause is fixed, run: fingerprint sync --retry-refused)\n";
  }
  if (waiting.damaged > 0) {
    text += "fsck: " + std::to_string(waiting.damaged) + " unreadable spool entr" + (waiting.damaged == 1 ? "y" : "ies")
            + " set aside in " + spool->directory() + "/damaged\n";
  }
  write_out(context, text);
  return healthy ? k_exit_ok : k_exit_failure;
}

} // namespace

extern const Command k_fsck_command{
  .name = "fsck",
  .synopsis = "[--repair] [--json]",
  .summary = "check every log, manifest and reverse index of the store; --repair quarantines and rebuilds (never "
             "deletes)",
  .options = k_options,
  .run = run,
  .needs = Needs::store,
  .arity = {0, 0, "takes no arguments (the store is --store DIR or $FINGERPRINT_DIR)"},
  .access = [](const Args& args) { return args.flag("repair") ? store::Access::update : store::Access::read; }};

} // namespace fingerprint::cmd
