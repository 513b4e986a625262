// fsck: the directory store checked file by file, and repaired without
// deleting anything.

#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/format.hpp>
#include <fingerprint/store/log_io.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cerrno>
#include <dirent.h>
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

enum class FileKind
{
  artifact_log,
  build_index,
  stray, // not a log: a leftover temporary file, a symbolic link, ...
};

struct StoreFile
{
  std::string relative;
  FileKind kind = FileKind::stray;
  DigestKey key;  // artifact_log
  BuildRef build; // build_index
  std::string why_stray;
  FsckKind stray_kind = FsckKind::damage;
};

struct Listing
{
  std::vector<StoreFile> files;
  std::vector<std::pair<std::string, std::string>> errors; // directory, why it could not be listed
};

// Calls `each(name, d_type)` for the entries of directory `relative`
// (beneath the root, no symbolic link followed). Missing: nothing.
template <typename Each>
void
list_directory(int root_fd, const std::string& relative, Listing& listing, Each&& each)
{
  auto dir_fd = relative == "." ? Expected<Fd>(Fd(::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)))
                                : util::open_directory_beneath(root_fd, relative, false);
  if (!dir_fd) {
    listing.errors.push_back({relative, dir_fd.error().message});
    return;
  }
  if (!dir_fd->valid()) {
    return;
  }
  std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(dir_fd->release()), ::closedir);
  if (!dir) {
    listing.errors.push_back({relative, util::errno_text(errno)});
    return;
  }
  std::vector<std::pair<std::string, unsigned char>> entries;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string_view name = entry->d_name;
    if (name != "." && name != "..") {
      entries.emplace_back(name, entry->d_type);
    }
  }
  std::sort(entries.begin(), entries.end());
  for (const auto& [name, type] : entries) {
    each(name, type);
  }
}

// The type of an entry whose d_type the filesystem did not fill in.
unsigned char
entry_type(int root_fd, const std::string& relative, unsigned char d_type)
{
  if (d_type != DT_UNKNOWN) {
    return d_type;
  }
  struct stat st
  {};
  if (::fstatat(root_fd, relative.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return DT_UNKNOWN;
  }
  return S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : S_ISLNK(st.st_mode) ? DT_LNK : DT_UNKNOWN;
}

constexpr std::string_view k_leftover = "a temporary file left by an interrupted compaction or repair";

std::string
stray_reason(std::string_view name, unsigned char type)
{
  if (type == DT_LNK) {
    return "a symbolic link inside the store (never followed)";
  }
  if (type != DT_REG) {
    return type == DT_DIR ? "a directory where a log belongs" : "not a regular file";
  }
  if (name.find(".compact.") != std::string_view::npos || name.find(".repair.") != std::string_view::npos
      || name.find(".tmp.") != std::string_view::npos) {
    return std::string(k_leftover);
  }
  return "not a log of the store";
}

// Every file of the store that fsck looks at, in a stable order.
Listing
list_store(int root_fd)
{
  Listing listing;
  auto add_stray = [&](std::string relative, std::string_view name, unsigned char type) {
    std::string why = stray_reason(name, type);
    const FsckKind kind = why == k_leftover ? FsckKind::leftover : FsckKind::damage;
    listing.files.push_back({std::move(relative), FileKind::stray, {}, {}, std::move(why), kind});
  };
  list_directory(root_fd, ".", listing, [&](const std::string& name, unsigned char d_type) {
    if (name.starts_with(std::string(k_format_file) + ".tmp.")) {
      add_stray(name, name, entry_type(root_fd, name, d_type));
    }
  });
  list_directory(root_fd, "objects", listing, [&](const std::string& algorithm_name, unsigned char d_type) {
    const std::string algorithm_dir = "objects/" + algorithm_name;
    const auto type = entry_type(root_fd, algorithm_dir, d_type);
    if (type != DT_DIR || !digest::parse_algorithm(algorithm_name)) {
      add_stray(algorithm_dir, algorithm_name, type == DT_DIR ? static_cast<unsigned char>(DT_UNKNOWN) : type);
      return;
    }
    list_directory(root_fd, algorithm_dir, listing, [&](const std::string& shard, unsigned char shard_d_type) {
      const std::string shard_dir = algorithm_dir + "/" + shard;
      const auto shard_type = entry_type(root_fd, shard_dir, shard_d_type);
      if (shard_type != DT_DIR) {
        add_stray(shard_dir, shard, shard_type);
        return;
      }
      list_directory(root_fd, shard_dir, listing, [&](const std::string& name, unsigned char file_d_type) {
        const std::string relative = shard_dir + "/" + name;
        const auto file_type = entry_type(root_fd, relative, file_d_type);
        constexpr std::string_view suffix = ".jsonl";
        if (file_type == DT_REG && name.ends_with(suffix)) {
          const std::string hex = name.substr(0, name.size() - suffix.size());
          auto key = parse_digest_key(algorithm_name + ":" + hex);
          if (key && hex.starts_with(shard) && shard.size() == 2) {
            listing.files.push_back({relative, FileKind::artifact_log, *key, {}, {}});
            return;
          }
        }
        add_stray(relative, name, file_type);
      });
    });
  });
  list_directory(root_fd, "builds", listing, [&](const std::string& project, unsigned char d_type) {
    const std::string project_dir = "builds/" + project;
    const auto type = entry_type(root_fd, project_dir, d_type);
    if (type != DT_DIR) {
      add_stray(project_dir, project, type);
      return;
    }
    list_directory(root_fd, project_dir, listing, [&](const std::string& name, unsigned char file_d_type) {
      const std::string relative = project_dir + "/" + name;
      const auto file_type = entry_type(root_fd, relative, file_d_type);
      constexpr std::string_view suffix = ".jsonl";
      if (file_type == DT_REG && name.size() > suffix.size() && name.ends_with(suffix)) {
        BuildRef build{DirectoryStore::decode_component(project),
                       DirectoryStore::decode_component(name.substr(0, name.size() - suffix.size()))};
        listing.files.push_back({relative, FileKind::build_index, {}, std::move(build), {}});
        return;
      }
      add_stray(relative, name, file_type);
    });
  });
  return listing;
}

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

// quarantine/<UTC time>-<pid>: one directory per repairing run.
std::string
quarantine_run_name()
{
  std::string stamp;
  for (const char c : util::format_rfc3339(util::now_ns())) {
    if (c != '-' && c != ':' && c != '.') {
      stamp += c;
    }
  }
  return "quarantine/" + stamp + "-" + std::to_string(::getpid());
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
    "repair",
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
  Listing listing = list_store(root_fd);
  if (!listing.errors.empty()) {
    const auto& [dir, why] = listing.errors.front();
    return make_error(m_root + "/" + dir, "cannot be listed: " + why);
  }
  const size_t total = listing.files.size();
  std::vector<const StoreFile*> damaged;
  std::vector<std::vector<size_t>> findings_of(total); // indexes into report.findings
  for (size_t i = 0; i < total; ++i) {
    const StoreFile& file = listing.files[i];
    const size_t before = report.findings.size();
    if (file.kind == FileKind::stray) {
      report.findings.push_back({file.relative, 0, file.why_stray, file.stray_kind, {}});
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

  report.quarantine = quarantine_run_name();
  const auto counterparts = gather_counterparts(root_fd, listing.files, damaged);
  static const std::vector<Event> k_none;
  for (const StoreFile* file : damaged) {
    const std::string quarantined_as = report.quarantine + "/" + file->relative;
    std::string repair;
    if (file->kind == FileKind::stray) {
      auto moved = move_aside(root_fd, file->relative, quarantined_as);
      repair = moved ? "moved to " + quarantined_as : std::string();
      if (!moved) {
        report.findings[findings_of[file - listing.files.data()].front()].problem +=
          " (not repaired: " + moved.error().message + ")";
      }
    } else {
      auto extra = counterparts.find(file->relative);
      auto rebuilt = rebuild_log(root_fd, *file, extra == counterparts.end() ? k_none : extra->second, quarantined_as);
      if (!rebuilt) {
        report.findings[findings_of[file - listing.files.data()].front()].problem +=
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
      for (size_t f : findings_of[file - listing.files.data()]) {
        report.findings[f].repair = repair;
        ++report.repaired;
      }
    }
  }
  return report;
}

} // namespace fingerprint::store
