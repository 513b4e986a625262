#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/format.hpp>
#include <fingerprint/store/input_journal.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/log_io.hpp>
#include <fingerprint/store/path_index.hpp>
#include <fingerprint/store/provenance.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <dirent.h>
#include <fcntl.h>
#include <map>
#include <memory>
#include <sched.h>
#include <set>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::store {

namespace detail {

using util::Fd;

std::string
dedupe_key(const Event& event)
{
  Event copy = event;
  copy.time.clear();
  return serialize(copy);
}

} // namespace detail

using namespace detail;

DirectoryStore::DirectoryStore(std::string root, Fd root_fd)
  : m_root(std::move(root))
  , m_root_fd(std::move(root_fd))
{
}

Expected<DirectoryStore>
DirectoryStore::open_for_reading(const std::string& root)
{
  Fd fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) {
      return DirectoryStore(root, Fd());
    }
    return make_error(root, util::errno_text(errno));
  }
  const std::string format_path = root + "/" + std::string(k_format_file);
  Fd format(::openat(fd.get(), std::string(k_format_file).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!format) {
    if (errno != ENOENT) {
      return make_error(format_path, util::errno_text(errno));
    }
    // An empty directory is a store nobody has written to yet.
    return DirectoryStore(root, Fd());
  }
  auto text = util::read_all(format.get());
  if (!text) {
    return make_error(format_path, text.error().message);
  }
  if (auto version = check_format_file(*text, format_path); !version) {
    return version.error();
  }
  return DirectoryStore(root, std::move(fd));
}

Expected<DirectoryStore>
DirectoryStore::open_for_updating(const std::string& root)
{
  // What reading needs: the changes that follow open each file for writing
  // themselves, and a store that does not exist has nothing to change.
  return open_for_reading(root);
}

Expected<DirectoryStore>
DirectoryStore::open_for_writing(const std::string& root)
{
  auto fd = util::open_directory(root, true);
  if (!fd) {
    return make_error("cannot open the store", fd.error().message);
  }
  if (auto ok = ensure_format_file(fd->get(), root); !ok) {
    return ok.error();
  }
  return DirectoryStore(root, std::move(*fd));
}

util::Fd
DirectoryStore::hold_for_change() const
{
  return detail::change_lock(m_root_fd.get(), LOCK_SH);
}

Expected<detail::Appended>
DirectoryStore::append_line(const std::string& relative_path, const std::string& lines, Warnings* warnings) const
{
  const auto [dir, name] = util::split_last(relative_path);
  auto dir_fd = util::open_directory_beneath(m_root_fd.get(), dir, true);
  if (!dir_fd) {
    return make_error(m_root + "/" + relative_path, dir_fd.error().message);
  }
  return append_in(dir_fd->get(), relative_path, std::string(name), lines, warnings);
}

Expected<detail::Appended>
DirectoryStore::append_in(int dir_fd,
                          const std::string& relative_path,
                          const std::string& file_name,
                          const std::string& lines,
                          Warnings* warnings,
                          bool locate) const
{
  const std::string full = m_root + "/" + relative_path;
  // Bounded: each retry means a compaction replaced the log meanwhile.
  for (int attempt = 0; attempt < 1000; ++attempt) {
    Fd fd(::openat(dir_fd, file_name.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0666));
    if (!fd) {
      const char* why = errno == ELOOP ? "is a symbolic link (not followed inside the store)" : nullptr;
      return make_error(full, why != nullptr ? why : util::errno_text(errno));
    }
    if (!lock(fd.get(), LOCK_SH)) {
      return make_error(full, "cannot lock: " + util::errno_text(errno));
    }
    struct stat st
    {};
    if (!still_linked(dir_fd, file_name, fd.get(), &st)) {
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      return make_error(full, "not a regular file");
    }
    if (auto refused = refused_file(m_root_fd.get(), st)) {
      return make_error(full, *refused + " (run: fingerprint fsck --repair)");
    }
    // A writer that died mid-line left no newline; start on a fresh line so
    // that only the torn line is lost, not this one too.
    std::string buffer;
    const bool torn = tail_is_torn(fd.get(), st.st_size);
    if (torn) {
      buffer += '\n';
    }
    buffer += lines;
    buffer += '\n';
    if (warnings != nullptr) {
      if (auto problem = look_at_tail(fd.get(), st.st_size, torn)) {
        warnings->push_back(full + ": " + *problem
                            + "; the new event was appended after it (run: fingerprint fsck --repair)");
      }
    }
    // A file-size limit would cut the line short: refuse before writing.
    // Read once: nothing here changes it, and a link appends to hundreds of
    // reverse indexes.
    static const rlim_t size_limit = [] {
      struct rlimit limit
      {};
      return ::getrlimit(RLIMIT_FSIZE, &limit) == 0 ? limit.rlim_cur : RLIM_INFINITY;
    }();
    if (size_limit != RLIM_INFINITY && static_cast<rlim_t>(st.st_size) + buffer.size() > size_limit) {
      remove_if_empty(dir_fd, file_name, fd.get());
      return make_error(full, "appending would exceed the file size limit (ulimit -f)");
    }
    // One write() of whole lines: O_APPEND makes them land contiguously
    // after every other complete line, whatever other writers do.
    const ssize_t written = ::write(fd.get(), buffer.data(), buffer.size());
    if (written < 0) {
      const std::string why = util::errno_text(errno);
      remove_if_empty(dir_fd, file_name, fd.get());
      return make_error(full, why);
    }
    if (static_cast<size_t>(written) != buffer.size()) {
      const std::string what = take_back(fd.get(), written);
      remove_if_empty(dir_fd, file_name, fd.get());
      return make_error(full, "short write (no space left on the device, or a file size limit): " + what);
    }
    detail::Appended appended;
    appended.start = locate ? ::lseek(fd.get(), 0, SEEK_CUR) - written : -1;
    appended.relative = relative_path;
    appended.size_after = st.st_size + written;
    appended.device = st.st_dev;
    appended.inode = st.st_ino;
    appended.bytes = std::move(buffer);
    return appended; // the lock goes with `fd`: held for the write alone (see append())
  }
  return make_error(full, "log kept being replaced while appending");
}

Expected<void>
DirectoryStore::append(const std::vector<Event>& events, Warnings* warnings) const
{
  if (!m_root_fd) {
    return make_error(m_root, "store not opened for writing");
  }
  // One write() per log: a build step's events for one artifact, and all of
  // them for its build's index, land together (a link that consumed 20
  // libraries appends to 21 logs, not 40 times). The artifact logs come
  // first and the build index last, so that an event found in a log and not
  // in its build's index is one of a call that did not finish (fsck).
  std::vector<std::pair<std::string, std::string>> batches;
  std::map<std::string, size_t> batch_of;
  auto add = [&](std::string path, const std::string& line) {
    auto [it, inserted] = batch_of.try_emplace(std::move(path), batches.size());
    if (inserted) {
      batches.emplace_back(it->first, std::string());
    }
    auto& text = batches[it->second].second;
    if (!text.empty()) {
      text += '\n';
    }
    text += line;
  };
  std::vector<std::pair<std::string, const std::string*>> index_lines;
  std::vector<std::string> lines;
  lines.reserve(events.size());
  for (const Event& event : events) {
    auto key = parse_digest_key(event.digest);
    if (!key) {
      return key.error();
    }
    std::string index = layout::build_index({event.project, event.build});
    // Checked before anything is written, so that a name the filesystem
    // refuses cannot leave an event in one log and not in the other.
    const std::string_view project_dir = std::string_view(index).substr(0, index.rfind('/'));
    for (const std::string_view component :
         {project_dir.substr(project_dir.find('/') + 1), std::string_view(index).substr(index.rfind('/') + 1)}) {
      if (component.size() > NAME_MAX) {
        return make_error(m_root,
                          "project name or build id too long for a file name (" + std::to_string(component.size())
                            + " bytes encoded, at most " + std::to_string(NAME_MAX) + ")");
      }
    }
    auto line = serialize_for_storing(event);
    if (!line) {
      return make_error(m_root, line.error().message + "; nothing was recorded");
    }
    lines.push_back(std::move(*line));
    add(key->log_path(), lines.back());
    if (!event.inputs.empty()) {
      // The manifest's own log lists who was made from it: its consumers.
      auto manifest = parse_digest_key(event.inputs);
      if (!manifest) {
        return manifest.error();
      }
      add(manifest->log_path(), lines.back());
    }
    index_lines.emplace_back(std::move(index), &lines.back());
  }
  for (auto& [index, line] : index_lines) {
    add(std::move(index), *line);
  }
  // Last, the builds changed (path_index.hpp): a line there is of events
  // already written, and goes back out with them.
  std::set<std::pair<std::string_view, std::string_view>> changed;
  for (const Event& event : events) {
    if (changed.emplace(event.project, event.build).second) {
      add(std::string(k_recent_builds_file), recent_line({event.project, event.build}));
    }
  }

  const Fd change = hold_for_change();
  // Each batch's lock is held for its write alone: a call that took back
  // its batches while holding the locks of others could deadlock with a
  // second call doing the same.
  std::vector<detail::Appended> written;
  written.reserve(batches.size());
  for (const auto& [path, text] : batches) {
    // builds.recent's lines are not events: its tail is not looked at as one.
    auto appended = append_line(path, text, path == k_recent_builds_file ? nullptr : warnings);
    if (appended) {
      written.push_back(std::move(*appended));
      continue;
    }
    // Whole or absent: what this call already wrote goes back out.
    std::string message = appended.error().message;
    std::vector<std::string> kept;
    for (auto batch = written.rbegin(); batch != written.rend(); ++batch) {
      if (auto undone = take_back_appended(m_root_fd.get(), *batch); !undone) {
        kept.push_back(undone.error().message);
      }
    }
    if (kept.empty()) {
      message += written.empty() ? "; nothing was recorded"
                                 : "; nothing was recorded (the events already appended to "
                                     + std::to_string(written.size()) + " other log(s) were taken back)";
    } else {
      message += "; " + std::to_string(kept.size()) + " of the " + std::to_string(written.size())
                 + " logs already appended to could not be taken back (" + kept.front()
                 + "): their events are in artifact logs without their build index copy, which "
                   "fingerprint fsck reports and fsck --repair completes";
    }
    return Error{std::move(message)};
  }
  return {};
}

Expected<void>
DirectoryStore::append_link(const DigestKey& log, const Event& event, Warnings* warnings) const
{
  if (!m_root_fd) {
    return make_error(m_root, "store not opened for writing");
  }
  auto line = serialize_for_storing(event);
  if (!line) {
    return make_error(m_root, line.error().message + "; nothing was recorded");
  }
  auto appended = append_line(log.log_path(), *line, warnings);
  if (!appended) {
    return appended.error();
  }
  return {};
}

namespace {

// Links the complete file `temp` of `dir_fd` as `name` and removes `temp`:
// a reader sees the whole file or none. False when `name` is there already
// (another writer's copy, which is kept).
Expected<bool>
link_into_place(int dir_fd, const std::string& temp, const std::string& name, const std::string& full)
{
  const bool linked = ::linkat(dir_fd, temp.c_str(), dir_fd, name.c_str(), 0) == 0;
  const int link_error = errno;
  ::unlinkat(dir_fd, temp.c_str(), 0);
  if (!linked && link_error != EEXIST) {
    return make_error(full, util::errno_text(link_error));
  }
  return linked;
}

} // namespace

Expected<bool>
DirectoryStore::put_manifest(const DigestKey& key,
                             const std::string& encoded,
                             const Manifest& manifest,
                             Warnings* warnings) const
{
  if (!m_root_fd) {
    return make_error(m_root, "store not opened for writing");
  }
  // Its reverse index lines come before it: fsck --repair, holding this
  // lock exclusively, never takes a call in progress for a dead one's lines.
  const Fd change = hold_for_change();
  const std::string relative = layout::manifest_file(key);
  const auto [dir, name] = util::split_last(relative);
  auto dir_fd = util::open_directory_beneath(m_root_fd.get(), dir, true);
  if (!dir_fd) {
    return make_error(m_root + "/" + relative, dir_fd.error().message);
  }
  const std::string file_name(name);
  struct stat st
  {};
  // Named by its bytes, a manifest that is there is this one, unless a
  // crash left it short (its bytes are not fsynced, as appends are not):
  // then it is written again, reverse index and all.
  const bool there = ::fstatat(dir_fd->get(), file_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (there && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) == encoded.size()) {
    return false;
  }
  // Its inputs' reverse index first, through the journal (one line for
  // them all, input_journal.hpp): a manifest that exists is indexed whole.
  // A call that dies in between leaves a line that the next call with the
  // same inputs writes again, which readers fold.
  const std::string journal = layout::input_journal(manifest.algorithm);
  const auto [tree, journal_name] = util::split_last(journal);
  auto tree_fd = util::open_directory_beneath(m_root_fd.get(), tree, true);
  if (!tree_fd) {
    return make_error(m_root + "/" + std::string(tree), tree_fd.error().message);
  }
  // No warnings: those look for JSON, which these lines are not.
  auto appended =
    append_in(tree_fd->get(), journal, std::string(journal_name), journal_line(key, manifest), nullptr, false);
  if (!appended) {
    return appended.error();
  }
  const bool fold_now = appended->size_after > static_cast<off_t>(k_journal_fold_bytes);
  // Then the manifest, whole: written under a temporary name and linked
  // into place, so that a reader never sees half of one; two calls making
  // the same one agree (the second link finds it there).
  const std::string temp = layout::temp_name(file_name, layout::TempTag::create);
  Fd fd(::openat(dir_fd->get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (!fd) {
    return make_error(m_root + "/" + relative, util::errno_text(errno));
  }
  auto written = util::write_all(fd.get(), encoded);
  fd.reset();
  if (!written) {
    ::unlinkat(dir_fd->get(), temp.c_str(), 0);
    return make_error(m_root + "/" + relative, written.error().message);
  }
  if (there && S_ISREG(st.st_mode)) {
    if (::renameat(dir_fd->get(), temp.c_str(), dir_fd->get(), file_name.c_str()) != 0) {
      const std::string why = util::errno_text(errno);
      ::unlinkat(dir_fd->get(), temp.c_str(), 0);
      return make_error(m_root + "/" + relative, why);
    }
  } else {
    auto linked = link_into_place(dir_fd->get(), temp, file_name, m_root + "/" + relative);
    if (!linked || !*linked) {
      return linked; // another writer's copy, journaled by it too
    }
  }
  if (fold_now) {
    // The manifest is stored and indexed whatever the fold does: a fold
    // that fails leaves the journal as it was, for the next one.
    if (auto folded = fold_input_journal(manifest.algorithm); !folded && warnings != nullptr) {
      warnings->push_back(folded.error().message + " (the journal stays; the next fold or fsck --repair folds it)");
    }
  }
  return true;
}

Expected<bool>
DirectoryStore::put_provenance(const BuildRef& build, const std::string& document) const
{
  if (!m_root_fd) {
    return make_error(m_root, "store not opened for writing");
  }
  const std::string relative = layout::build_provenance(build);
  const std::string full = m_root + "/" + relative;
  if (auto checked = parse_provenance(document, build, full); !checked) {
    return checked.error();
  }
  const auto [dir, name] = util::split_last(relative);
  auto dir_fd = util::open_directory_beneath(m_root_fd.get(), dir, true);
  if (!dir_fd) {
    return make_error(full, dir_fd.error().message);
  }
  const std::string file_name(name);
  struct stat st
  {};
  if (::fstatat(dir_fd->get(), file_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    return false;
  }
  const std::string temp = layout::temp_name(file_name, layout::TempTag::create);
  Fd fd(::openat(dir_fd->get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (!fd) {
    return make_error(full, util::errno_text(errno));
  }
  auto written = util::write_all(fd.get(), document);
  fd.reset();
  if (!written) {
    ::unlinkat(dir_fd->get(), temp.c_str(), 0);
    return make_error(full, written.error().message);
  }
  return link_into_place(dir_fd->get(), temp, file_name, full);
}

Expected<std::optional<std::string>>
DirectoryStore::read_provenance(const BuildRef& build) const
{
  if (!m_root_fd) {
    return std::optional<std::string>();
  }
  const std::string relative = layout::build_provenance(build);
  auto bytes = read_whole(relative);
  if (!bytes || !*bytes) {
    return bytes;
  }
  if (auto checked = parse_provenance(**bytes, build, m_root + "/" + relative); !checked) {
    return checked.error();
  }
  return bytes;
}

Expected<bool>
DirectoryStore::remove_provenance(const BuildRef& build, bool dry_run) const
{
  if (!m_root_fd) {
    return false;
  }
  const std::string relative = layout::build_provenance(build);
  const auto [dir, name] = util::split_last(relative);
  auto dir_fd = util::open_directory_beneath(m_root_fd.get(), dir, false);
  if (!dir_fd || !dir_fd->valid()) {
    return false;
  }
  const std::string file_name(name);
  struct stat st
  {};
  if (::fstatat(dir_fd->get(), file_name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return false;
  }
  if (!dry_run && ::unlinkat(dir_fd->get(), file_name.c_str(), 0) != 0 && errno != ENOENT) {
    return make_error(m_root + "/" + relative, util::errno_text(errno));
  }
  return true;
}

Expected<std::optional<std::string>>
DirectoryStore::read_whole(const std::string& relative) const
{
  const std::string full = m_root + "/" + relative;
  auto fd = open_below(m_root_fd.get(), relative, O_RDONLY | O_NONBLOCK, false);
  if (!fd) {
    return make_error(full, fd.error().message);
  }
  if (!fd->valid()) {
    return std::optional<std::string>();
  }
  struct stat st
  {};
  if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error(full, "not a regular file");
  }
  auto bytes = util::read_all(fd->get());
  if (!bytes) {
    return make_error(full, bytes.error().message);
  }
  return std::optional<std::string>(std::move(*bytes));
}

Expected<std::optional<std::string>>
DirectoryStore::read_manifest_bytes(const DigestKey& key) const
{
  if (!m_root_fd) {
    return std::optional<std::string>();
  }
  if (m_pack) {
    if (auto packed = m_pack->manifest(key)) {
      return std::optional<std::string>(std::string(*packed));
    }
  }
  return read_whole(layout::manifest_file(key));
}

Expected<std::optional<Manifest>>
DirectoryStore::read_manifest(const DigestKey& key) const
{
  if (!m_root_fd) {
    return std::optional<Manifest>();
  }
  const std::string relative = layout::manifest_file(key);
  const std::string full = m_root + "/" + relative;
  // Once a whole-store read loaded the index pack: the copy of a manifest
  // is its very bytes (named by their digest), so it is never out of date.
  if (m_pack) {
    if (auto packed = m_pack->manifest(key)) {
      if (auto manifest = decode_manifest(*packed, full); manifest && manifest->algorithm == key.algorithm) {
        return std::optional<Manifest>(std::move(*manifest));
      }
    }
  }
  auto bytes = read_whole(relative);
  if (!bytes) {
    return bytes.error();
  }
  if (!*bytes) {
    return std::optional<Manifest>();
  }
  auto manifest = decode_manifest(**bytes, full);
  if (!manifest) {
    return manifest.error();
  }
  if (manifest->algorithm != key.algorithm) {
    return make_error(full, "holds a manifest of another digest algorithm");
  }
  return std::optional<Manifest>(std::move(*manifest));
}

Expected<std::size_t>
DirectoryStore::fold_input_journal(digest::Algorithm algorithm) const
{
  if (!m_root_fd) {
    return std::size_t{0};
  }
  const std::string journal = layout::input_journal(algorithm);
  const std::string tree = std::string(util::split_last(journal).first);
  std::size_t folded = 0;
  auto done = detail::replace_locked(
    m_root_fd.get(),
    journal,
    m_root + "/" + journal,
    layout::TempTag::compact,
    true,
    [&](const detail::LockedLog& log) -> Expected<detail::Replacement> {
      const JournalContents contents = parse_journal(log.text, algorithm);
      // Each input's lines in one append, in the journal's order; the
      // fan-out directories in order, each opened once.
      std::map<std::string_view, std::string> lines;
      for (const JournalEntry& entry : contents.entries) {
        const std::string line = reverse_line(DigestKey{algorithm, std::string(entry.manifest)});
        for (const std::string_view input : entry.inputs) {
          std::string& text = lines[input];
          if (!text.empty()) {
            text += '\n';
          }
          text += line;
        }
      }
      auto tree_fd = util::open_directory_beneath(m_root_fd.get(), tree, true);
      if (!tree_fd) {
        return make_error(m_root + "/" + tree, tree_fd.error().message);
      }
      std::string prefix;
      util::Fd fan_fd;
      for (const auto& [input, text] : lines) {
        if (input.substr(0, 2) != prefix) {
          prefix = input.substr(0, 2);
          auto opened = util::open_directory_beneath(tree_fd->get(), prefix, true);
          if (!opened) {
            return make_error(m_root + "/" + tree + "/" + prefix, opened.error().message);
          }
          fan_fd = std::move(*opened);
        }
        auto appended = append_in(fan_fd.get(),
                                  layout::reverse_index(DigestKey{algorithm, std::string(input)}),
                                  std::string(input),
                                  text,
                                  nullptr,
                                  false);
        if (!appended) {
          return appended.error(); // the journal stays whole: the next fold appends it again
        }
      }
      folded = contents.entries.size();
      // What cannot be read stays for fsck to show (it rebuilds the
      // reverse index from the manifests themselves); a torn last line is a
      // writer's that died before storing its manifest.
      detail::Replacement replacement;
      replacement.action = detail::Replacement::Action::remove;
      if (!contents.unreadable.empty()) {
        std::string_view rest = log.text;
        for (size_t number = 1, next = 0; !rest.empty() && next < contents.unreadable.size(); ++number) {
          const size_t newline = rest.find('\n');
          if (newline == std::string_view::npos) {
            break;
          }
          if (number == contents.unreadable[next]) {
            replacement.text += rest.substr(0, newline + 1);
            ++next;
          }
          rest.remove_prefix(newline + 1);
        }
        replacement.action = detail::Replacement::Action::replace;
      }
      return replacement;
    });
  if (!done && done.error().message.ends_with("no such log")) {
    return std::size_t{0};
  }
  if (!done) {
    return done.error();
  }
  m_journals.erase(algorithm); // read again by the next query
  return folded;
}

Expected<std::size_t>
DirectoryStore::fold_input_journals() const
{
  std::size_t folded = 0;
  for (const digest::Algorithm algorithm : digest::k_all_algorithms) {
    auto one = fold_input_journal(algorithm);
    if (!one) {
      return one.error();
    }
    folded += *one;
  }
  return folded;
}

Expected<const DirectoryStore::JournalIndex*>
DirectoryStore::input_journal(digest::Algorithm algorithm) const
{
  auto it = m_journals.find(algorithm);
  if (it != m_journals.end()) {
    return it->second.get();
  }
  auto index = std::make_shared<JournalIndex>();
  if (m_root_fd) {
    const std::string relative = layout::input_journal(algorithm);
    auto fd = open_below(m_root_fd.get(), relative, O_RDONLY | O_NONBLOCK, false);
    if (!fd) {
      return make_error(m_root + "/" + relative, fd.error().message);
    }
    if (fd->valid()) {
      auto text = util::read_all(fd->get());
      if (!text) {
        return make_error(m_root + "/" + relative, text.error().message);
      }
      index->contents = parse_journal(*text, algorithm);
      for (std::uint32_t i = 0; i < index->contents.entries.size(); ++i) {
        for (const std::string_view input : index->contents.entries[i].inputs) {
          index->by_input[input].push_back(i);
        }
      }
    }
  }
  return m_journals.emplace(algorithm, std::move(index)).first->second.get();
}

Expected<std::vector<ManifestUse>>
DirectoryStore::find_manifest_uses(const DigestKey& input, std::vector<LogProblem>& problems) const
{
  std::vector<ManifestUse> uses;
  if (!m_root_fd) {
    return uses;
  }
  // The journal before the reverse index (input_journal.hpp): a fold
  // between the two reads leaves its lines in one or the other.
  auto journal = input_journal(input.algorithm);
  if (!journal) {
    return journal.error();
  }
  const std::string relative = layout::reverse_index(input);
  auto fd = open_below(m_root_fd.get(), relative, O_RDONLY | O_NONBLOCK, false);
  if (!fd) {
    return make_error(m_root + "/" + relative, fd.error().message);
  }
  std::set<std::string> seen;
  if (fd->valid()) {
    struct stat st
    {};
    if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return make_error(m_root + "/" + relative, "not a regular file");
    }
    auto text = util::read_all(fd->get());
    if (!text) {
      return make_error(m_root + "/" + relative, text.error().message);
    }
    std::string_view rest = *text;
    for (size_t number = 1; !rest.empty(); ++number) {
      const size_t end = rest.find('\n');
      if (end == std::string_view::npos) {
        break; // a writer that died mid-line; never acknowledged
      }
      const std::string_view line = rest.substr(0, end);
      rest.remove_prefix(end + 1);
      if (line.empty()) {
        continue;
      }
      auto manifest = parse_reverse_line(line, input.algorithm);
      if (!manifest) {
        problems.push_back({relative, number, "not a reverse index line (a manifest's digest)"});
        continue;
      }
      if (seen.insert(manifest->hex).second) {
        uses.push_back({std::move(*manifest)});
      }
    }
  }
  // Then the journal's, newer than any folded line.
  const JournalIndex& index = **journal;
  if (auto it = index.by_input.find(input.hex); it != index.by_input.end()) {
    for (const std::uint32_t i : it->second) {
      const std::string_view manifest = index.contents.entries[i].manifest;
      if (seen.insert(std::string(manifest)).second) {
        uses.push_back({DigestKey{input.algorithm, std::string(manifest)}});
      }
    }
  }
  for (const size_t number : index.contents.unreadable) {
    problems.push_back({layout::input_journal(input.algorithm), number, "not a journal line (manifest and inputs)"});
  }
  return uses;
}

Expected<std::vector<DigestKey>>
DirectoryStore::find_by_prefix(digest::Algorithm algorithm, std::string_view prefix, size_t limit) const
{
  std::set<std::string> found;
  if (!m_root_fd || prefix.size() < 2) {
    return std::vector<DigestKey>();
  }
  const std::string fan = std::string(digest::algorithm_name(algorithm)) + "/" + std::string(prefix.substr(0, 2));
  // Logs are "<hex>.jsonl" under objects/, reverse indexes "<hex>" under
  // inputs/; anything else there (a temporary file) is not an artifact.
  for (const auto& [tree, suffix] :
       {std::pair{layout::k_objects, layout::k_log_suffix}, std::pair{layout::k_inputs, std::string_view()}}) {
    const std::string relative = std::string(tree) + "/" + fan;
    auto dir_fd = util::open_directory_beneath(m_root_fd.get(), relative, false);
    if (!dir_fd) {
      return make_error(m_root + "/" + relative, dir_fd.error().message);
    }
    if (!dir_fd->valid()) {
      continue;
    }
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(dir_fd->release()), ::closedir);
    if (!dir) {
      return make_error(m_root + "/" + relative, util::errno_text(errno));
    }
    const size_t length = 2 * digest::digest_size(algorithm);
    while (const dirent* entry = ::readdir(dir.get())) {
      const std::string_view name = entry->d_name;
      if (name.size() == length + suffix.size() && name.starts_with(prefix) && name.ends_with(suffix)
          && util::is_lower_hex(name.substr(0, length), length)) {
        found.emplace(name.substr(0, length));
      }
    }
  }
  // Inputs not yet folded out of the journal have no file of their own.
  auto journal = input_journal(algorithm);
  if (!journal) {
    return journal.error();
  }
  for (const auto& [input, entries] : (*journal)->by_input) {
    if (input.starts_with(prefix)) {
      found.emplace(input);
    }
  }
  std::vector<DigestKey> keys;
  for (const std::string& hex : found) {
    if (keys.size() == limit) {
      break;
    }
    keys.push_back({algorithm, hex});
  }
  return keys;
}

Expected<std::string>
DirectoryStore::read_raw_log(const DigestKey& key) const
{
  if (!m_root_fd) {
    return std::string();
  }
  auto fd = open_below(m_root_fd.get(), key.log_path(), O_RDONLY | O_NONBLOCK, false);
  if (!fd) {
    return make_error(m_root + "/" + key.log_path(), fd.error().message);
  }
  if (!fd->valid()) {
    return std::string();
  }
  auto text = util::read_all(fd->get());
  if (!text) {
    return make_error(m_root + "/" + key.log_path(), text.error().message);
  }
  return text;
}

Expected<LogContents>
DirectoryStore::read_file(const std::string& relative_path) const
{
  LogContents contents;
  if (!m_root_fd) {
    return contents;
  }
  auto fd = open_below(m_root_fd.get(), relative_path, O_RDONLY | O_NONBLOCK, false);
  if (!fd) {
    return make_error(m_root + "/" + relative_path, fd.error().message);
  }
  if (!fd->valid()) {
    return contents;
  }
  struct stat st
  {};
  if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error(m_root + "/" + relative_path, "not a regular file");
  }
  auto text = util::read_all(fd->get());
  if (!text) {
    return make_error(m_root + "/" + relative_path, text.error().message);
  }
  parse_lines(*text, relative_path, contents);
  return contents;
}

Expected<LogContents>
DirectoryStore::read_log(const DigestKey& key) const
{
  return read_file(key.log_path());
}

namespace {

// The walk's entries of one kind. A directory that cannot be listed is an
// error, except one that is not a directory at all (a stray file or a
// symbolic link where it belongs): queries skip those, fsck reports them.
template <typename Keep>
Expected<void>
walk_logs(const std::string& root, int root_fd, layout::WalkScope scope, Keep&& keep)
{
  const layout::Walk walk = layout::walk(root_fd, scope);
  for (const auto& error : walk.errors) {
    if (error.error != ENOTDIR && error.error != ELOOP) {
      return make_error(root + "/" + error.relative, error.message);
    }
  }
  for (const auto& entry : walk.entries) {
    keep(entry);
  }
  return {};
}

} // namespace

Expected<std::vector<DigestKey>>
DirectoryStore::list_logs() const
{
  std::vector<DigestKey> logs;
  if (!m_root_fd) {
    return logs;
  }
  auto ok = walk_logs(m_root, m_root_fd.get(), layout::WalkScope::logs, [&](const layout::Entry& entry) {
    // A stray named like a log (this walk holds only objects/) is listed
    // too: reading it says what is wrong.
    if (entry.kind == layout::Entry::Kind::artifact_log || entry.log_name) {
      logs.push_back(entry.key);
    }
  });
  if (!ok) {
    return ok.error();
  }
  std::sort(logs.begin(), logs.end(), [](const DigestKey& a, const DigestKey& b) { return a.str() < b.str(); });
  return logs;
}

Expected<std::vector<BuildRef>>
DirectoryStore::list_builds() const
{
  std::vector<BuildRef> builds;
  if (!m_root_fd) {
    return builds;
  }
  auto ok = walk_logs(m_root, m_root_fd.get(), layout::WalkScope::builds, [&](const layout::Entry& entry) {
    if (entry.kind == layout::Entry::Kind::build_index || entry.log_name) {
      builds.push_back(entry.build);
    }
  });
  if (!ok) {
    return ok.error();
  }
  std::sort(builds.begin(), builds.end(), [](const BuildRef& a, const BuildRef& b) {
    return std::tie(a.project, a.build) < std::tie(b.project, b.build);
  });
  return builds;
}

Expected<LogContents>
DirectoryStore::read_build(const BuildRef& build) const
{
  return read_file(layout::build_index(build));
}

Expected<CompactionResult>
DirectoryStore::rewrite(const std::string& relative, const Rewriter& transform, const RewriteOptions& options) const
{
  const std::string full = m_root + "/" + relative;
  if (!m_root_fd) {
    return make_error(full, "no such log");
  }
  CompactionResult result;
  auto done = detail::replace_locked(
    m_root_fd.get(),
    relative,
    full,
    layout::TempTag::compact,
    !options.dry_run,
    [&](const detail::LockedLog& log) -> Expected<detail::Replacement> {
      LogContents contents;
      parse_lines(log.text, relative, contents);
      if (!contents.problems.empty() || contents.torn_tail) {
        return make_error(
          full,
          "has unreadable lines; rewriting would drop them, so it is left as it is (run: fingerprint fsck --repair)");
      }
      result.events_before = contents.events.size();
      const std::vector<Event> kept = transform(contents.events);
      result.events_after = kept.size();
      result.removed = kept.empty() && options.remove_if_empty;
      detail::Replacement replacement;
      if (options.dry_run || (result.events_after == result.events_before && !options.rewrite_always)) {
        return replacement;
      }
      if (result.removed) {
        replacement.action = detail::Replacement::Action::remove;
        return replacement;
      }
      replacement.action = detail::Replacement::Action::replace;
      for (const Event& event : kept) {
        replacement.text += serialize(event);
        replacement.text += '\n';
      }
      return replacement;
    });
  if (!done) {
    return done.error();
  }
  return result;
}

Expected<CompactionResult>
DirectoryStore::compact(const DigestKey& key, bool rewrite_always) const
{
  RewriteOptions options;
  options.rewrite_always = rewrite_always;
  return rewrite(
    key.log_path(),
    [](const std::vector<Event>& events) {
      std::set<std::string> seen;
      std::vector<Event> kept;
      for (const Event& event : events) {
        if (seen.insert(dedupe_key(event)).second) {
          kept.push_back(event);
        }
      }
      return kept;
    },
    options);
}

Expected<CompactionResult>
DirectoryStore::remove_events(const DigestKey& key, const EventFilter& drop, bool dry_run) const
{
  return remove_events_from(key.log_path(), drop, dry_run);
}

Expected<CompactionResult>
DirectoryStore::remove_build_events(const BuildRef& build, const EventFilter& drop, bool dry_run) const
{
  return remove_events_from(layout::build_index(build), drop, dry_run);
}

Expected<CompactionResult>
DirectoryStore::remove_events_from(const std::string& relative, const EventFilter& drop, bool dry_run) const
{
  RewriteOptions options;
  options.dry_run = dry_run;
  options.remove_if_empty = true;
  return rewrite(
    relative,
    [&](const std::vector<Event>& events) {
      std::vector<Event> kept;
      for (const Event& event : events) {
        if (!drop(event)) {
          kept.push_back(event);
        }
      }
      return kept;
    },
    options);
}

} // namespace fingerprint::store
