// fsck: the directory store checked file by file, and repaired without
// deleting anything.

#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/log_io.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <map>
#include <memory>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::store {

namespace {

using util::Fd;

using StoreFile = layout::Entry;
using FileKind = layout::Entry::Kind;

// Whether `event` belongs in `file`: an artifact log holds the artifact's
// own events and the `installed` events of its installed copies; a build
// index holds its build's events.
bool
belongs(const StoreFile& file, const Event& event)
{
  if (file.kind == FileKind::artifact_log) {
    const std::string key = file.key.str();
    return event.digest == key || (event.event == EventKind::installed && event.from == key);
  }
  return event.project == file.build.project && event.build == file.build.build;
}

// A log read and sorted into what stays and what is wrong with it.
struct Checked
{
  std::vector<Event> events;
  std::vector<FsckFinding> findings;
};

Checked
check_contents(const StoreFile& file, std::string_view text)
{
  Checked checked;
  LogContents contents;
  detail::parse_lines(text, file.relative, contents);
  for (auto& problem : contents.problems) {
    checked.findings.push_back(
      {file.relative,
       problem.line,
       problem.torn ? "torn line (a writer died mid-write): " + problem.message : "unreadable line: " + problem.message,
       problem.torn ? FsckKind::torn_line : FsckKind::damage,
       {}});
  }
  if (contents.torn_tail) {
    const auto lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
    checked.findings.push_back(
      {file.relative, lines + 1, "torn last line (a writer died mid-write)", FsckKind::torn_line, {}});
  }
  for (auto& event : contents.events) {
    if (!belongs(file, event)) {
      checked.findings.push_back({file.relative,
                                  0,
                                  file.kind == FileKind::artifact_log
                                    ? "holds an event of another artifact (" + event.digest + ")"
                                    : "holds an event of another build (" + event.project + " " + event.build + ")",
                                  FsckKind::damage,
                                  {}});
      continue;
    }
    checked.events.push_back(std::move(event));
  }
  return checked;
}

// Puts a copy of the file open as `fd` (called `name` in `dir_fd`) at
// `target` below the root: a hard link when allowed, else a byte copy.
Expected<void>
keep_copy(int root_fd, int dir_fd, const std::string& name, int fd, const std::string& target)
{
  const auto [target_dir, target_name] = util::split_last(target);
  auto quarantine_fd = util::open_directory_beneath(root_fd, target_dir, true);
  if (!quarantine_fd) {
    return quarantine_fd.error();
  }
  const std::string target_file(target_name);
  if (::linkat(dir_fd, name.c_str(), quarantine_fd->get(), target_file.c_str(), 0) == 0) {
    return util::fsync_directory(quarantine_fd->get());
  }
  // Someone else's file under fs.protected_hardlinks: copy it.
  auto text = util::read_all(fd);
  if (!text) {
    return text.error();
  }
  Fd out(
    ::openat(quarantine_fd->get(), target_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (!out) {
    return make_error(target, util::errno_text(errno));
  }
  if (auto written = util::write_all(out.get(), *text); !written) {
    return written.error();
  }
  if (::fsync(out.get()) != 0) {
    return make_error(target, util::errno_text(errno));
  }
  return util::fsync_directory(quarantine_fd->get());
}

// Moves a stray entry (any type) into the quarantine.
Expected<void>
move_aside(int root_fd, const std::string& relative, const std::string& target)
{
  const auto [dir, name] = util::split_last(relative);
  auto dir_fd = util::open_directory_beneath(root_fd, dir, false);
  if (!dir_fd) {
    return dir_fd.error();
  }
  if (!dir_fd->valid()) {
    return make_error(relative, "disappeared");
  }
  const auto [target_dir, target_name] = util::split_last(target);
  auto quarantine_fd = util::open_directory_beneath(root_fd, target_dir, true);
  if (!quarantine_fd) {
    return quarantine_fd.error();
  }
  if (::renameat(dir_fd->get(), std::string(name).c_str(), quarantine_fd->get(), std::string(target_name).c_str())
      != 0) {
    return make_error(relative, util::errno_text(errno));
  }
  (void)util::fsync_directory(quarantine_fd->get());
  return util::fsync_directory(dir_fd->get());
}

// The copies of a damaged file's events kept elsewhere: for an artifact
// log, the events of it in every build index; for a build index, its
// build's events in every artifact log.
std::map<std::string, std::vector<Event>>
gather_counterparts(int root_fd, const std::vector<StoreFile>& files, const std::vector<const StoreFile*>& damaged)
{
  std::map<std::string, const StoreFile*> wanted_logs;   // digest -> file
  std::map<std::string, const StoreFile*> wanted_builds; // project '\0' build -> file
  for (const StoreFile* file : damaged) {
    if (file->kind == FileKind::artifact_log) {
      wanted_logs[file->key.str()] = file;
    } else if (file->kind == FileKind::build_index) {
      wanted_builds[file->build.project + '\0' + file->build.build] = file;
    }
  }
  std::map<std::string, std::vector<Event>> found;
  for (const StoreFile& source : files) {
    const bool read_it = (source.kind == FileKind::build_index && !wanted_logs.empty())
                         || (source.kind == FileKind::artifact_log && !wanted_builds.empty());
    if (!read_it) {
      continue;
    }
    auto fd = detail::open_below(root_fd, source.relative, O_RDONLY | O_NONBLOCK, false);
    if (!fd || !fd->valid()) {
      continue;
    }
    auto text = util::read_all(fd->get());
    if (!text) {
      continue;
    }
    LogContents contents;
    detail::parse_lines(*text, source.relative, contents);
    for (auto& event : contents.events) {
      if (source.kind == FileKind::build_index) {
        for (const std::string* digest : {&event.digest, &event.from}) {
          auto target = wanted_logs.find(*digest);
          if (target != wanted_logs.end() && belongs(*target->second, event) && belongs(source, event)) {
            found[target->second->relative].push_back(event);
          }
        }
      } else if (event.digest == source.key.str()) { // not an installed copy's link
        auto target = wanted_builds.find(event.project + '\0' + event.build);
        if (target != wanted_builds.end()) {
          found[target->second->relative].push_back(event);
        }
      }
    }
  }
  return found;
}

struct RebuildResult
{
  size_t kept = 0;
  size_t restored = 0;
  bool changed = false;
};

// Rebuilds one log under its exclusive lock: the original goes to
// `quarantined_as`, and a new log of its readable events plus the missing
// `extra` ones is renamed over it.
Expected<RebuildResult>
rebuild_log(int root_fd, const StoreFile& file, const std::vector<Event>& extra, const std::string& quarantined_as)
{
  RebuildResult result;
  auto done = detail::replace_locked(
    root_fd,
    file.relative,
    file.relative,
    layout::TempTag::repair,
    true,
    [&](const detail::LockedLog& log) -> Expected<detail::Replacement> {
      Checked checked = check_contents(file, log.text);
      result = RebuildResult{};
      std::set<std::string> lines;
      detail::Replacement replacement;
      auto add = [&](const Event& event) {
        std::string line = serialize(event);
        if (lines.insert(line).second) {
          replacement.text += line;
          replacement.text += '\n';
          return true;
        }
        return false;
      };
      for (const Event& event : checked.events) {
        result.kept += add(event) ? 1 : 0;
      }
      for (const Event& event : extra) {
        result.restored += add(event) ? 1 : 0;
      }
      if (checked.findings.empty() && result.restored == 0) {
        return detail::Replacement{}; // healthy by now: another repair got there first
      }
      // The original goes to the quarantine before it is replaced, under the same lock.
      ::lseek(log.fd, 0, SEEK_SET);
      if (auto kept = keep_copy(root_fd, log.dir_fd, log.name, log.fd, quarantined_as); !kept) {
        return make_error(file.relative, "cannot keep a copy in the quarantine: " + kept.error().message);
      }
      replacement.action = detail::Replacement::Action::replace;
      result.changed = true;
      return replacement;
    });
  if (!done) {
    return done.error();
  }
  return result;
}

} // namespace

std::string_view
fsck_kind_name(FsckKind kind)
{
  switch (kind) {
    case FsckKind::torn_line:
      return "torn";
    case FsckKind::leftover:
      return "leftover";
    case FsckKind::damage:
      break;
  }
  return "damage";
}

Expected<FsckReport>
DirectoryStore::fsck(const FsckOptions& options) const
{
  FsckReport report;
  if (!m_root_fd) {
    return report; // no store yet: nothing to check
  }
  const int root_fd = m_root_fd.get();
  const layout::Walk listing = layout::walk(root_fd, layout::WalkScope::everything);
  if (!listing.errors.empty()) {
    const auto& error = listing.errors.front();
    return make_error(m_root + "/" + error.relative, "cannot be listed: " + error.message);
  }
  const size_t total = listing.entries.size();
  std::vector<const StoreFile*> damaged;
  std::vector<std::vector<size_t>> findings_of(total); // indexes into report.findings
  for (size_t i = 0; i < total; ++i) {
    const StoreFile& file = listing.entries[i];
    const size_t before = report.findings.size();
    if (file.kind == FileKind::stray) {
      report.findings.push_back(
        {file.relative, 0, file.why_stray, file.leftover ? FsckKind::leftover : FsckKind::damage, {}});
    } else {
      (file.kind == FileKind::artifact_log ? report.logs : report.build_indexes) += 1;
      auto fd = detail::open_below(root_fd, file.relative, O_RDONLY | O_NONBLOCK, false);
      auto text = fd && fd->valid() ? util::read_all(fd->get()) : Expected<std::string>(std::string());
      if (!fd || !text) {
        report.findings.push_back(
          {file.relative, 0, fd ? text.error().message : fd.error().message, FsckKind::damage, {}});
      } else {
        Checked checked = check_contents(file, *text);
        report.events += checked.events.size();
        for (auto& finding : checked.findings) {
          report.findings.push_back(std::move(finding));
        }
      }
    }
    for (size_t f = before; f < report.findings.size(); ++f) {
      findings_of[i].push_back(f);
    }
    if (report.findings.size() > before) {
      damaged.push_back(&file);
    }
    if (options.progress) {
      options.progress(i + 1, total);
    }
  }
  if (!options.repair || damaged.empty()) {
    return report;
  }

  report.quarantine = layout::quarantine_run(util::now_ns());
  const auto counterparts = gather_counterparts(root_fd, listing.entries, damaged);
  static const std::vector<Event> k_none;
  for (const StoreFile* file : damaged) {
    const std::string quarantined_as = report.quarantine + "/" + file->relative;
    std::string repair;
    if (file->kind == FileKind::stray) {
      auto moved = move_aside(root_fd, file->relative, quarantined_as);
      repair = moved ? "moved to " + quarantined_as : std::string();
      if (!moved) {
        report.findings[findings_of[file - listing.entries.data()].front()].problem +=
          " (not repaired: " + moved.error().message + ")";
      }
    } else {
      auto extra = counterparts.find(file->relative);
      auto rebuilt = rebuild_log(root_fd, *file, extra == counterparts.end() ? k_none : extra->second, quarantined_as);
      if (!rebuilt) {
        report.findings[findings_of[file - listing.entries.data()].front()].problem +=
          " (not repaired: " + rebuilt.error().message + ")";
        continue;
      }
      report.events_restored += rebuilt->restored;
      repair =
        rebuilt->changed
          ? "original moved to " + quarantined_as + "; rebuilt with " + std::to_string(rebuilt->kept)
              + " readable events"
              + (rebuilt->restored > 0 ? " and " + std::to_string(rebuilt->restored) + " restored from "
                                           + (file->kind == FileKind::artifact_log ? "build indexes" : "artifact logs")
                                       : std::string())
          : "already repaired";
    }
    if (!repair.empty()) {
      for (size_t f : findings_of[file - listing.entries.data()]) {
        report.findings[f].repair = repair;
        ++report.repaired;
      }
    }
  }
  return report;
}

} // namespace fingerprint::store
