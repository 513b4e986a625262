#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/store/log_io.hpp>
#include <fingerprint/store/manifest.hpp>
#include <fingerprint/store/provenance.hpp>
#include <fingerprint/store/spool.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <set>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::store {

namespace {

constexpr int k_spool_format = 1;
// An entry with input manifests: a runner that knows format 1 only sets it
// aside (damaged/, never deleted) rather than deliver events whose
// manifests it would leave behind. Entries without any stay format 1.
constexpr int k_spool_format_manifests = 2;
// A call is a few hundred events of a few hundred bytes; anything far
// larger is not an entry we wrote.
constexpr size_t k_max_entry_size = 256 * 1024 * 1024;

std::string
sha256_hex(std::string_view text)
{
  auto hex = digest::Hasher(digest::Algorithm::sha256).digest_bytes(text);
  return hex ? *hex : std::string(64, '0'); // cannot fail with the default provider loaded
}

// "postgres_127.0.0.1_5432_fingerprint-<16 hex>": readable, and unique by
// the digest of the whole masked URL (the readable part is cut short).
std::string
journal_key(const std::string& masked)
{
  const size_t scheme = masked.find("://");
  std::string readable;
  for (char c : std::string_view(masked).substr(scheme == std::string::npos ? 0 : scheme + 3)) {
    const bool plain =
      (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-';
    readable += plain ? c : '_';
    if (readable.size() == 48) {
      break;
    }
  }
  return readable + "-" + sha256_hex(masked).substr(0, 16);
}

// "<20 digits of ns>-<32 hex>.jsonl"
bool
is_entry_name(std::string_view name)
{
  if (name.size() != 20 + 1 + 32 + 6 || !name.ends_with(".jsonl") || name[20] != '-') {
    return false;
  }
  return std::all_of(name.begin(), name.begin() + 20, [](char c) { return c >= '0' && c <= '9'; })
         && util::is_lower_hex(name.substr(21, 32), 32);
}

// The names in directory `fd` that `keep` selects, sorted.
std::vector<std::string>
list_names(int fd, bool (*keep)(std::string_view))
{
  std::vector<std::string> names;
  const int copy = ::dup(fd);
  if (copy < 0) {
    return names;
  }
  DIR* dir = ::fdopendir(copy);
  if (dir == nullptr) {
    ::close(copy);
    return names;
  }
  ::rewinddir(dir);
  while (const dirent* entry = ::readdir(dir)) {
    if (keep(entry->d_name)) {
      names.emplace_back(entry->d_name);
    }
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

bool
any_name(std::string_view name)
{
  return name != "." && name != "..";
}

int64_t
steady_ns()
{
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
}

// A directory beneath `base`, made private (0700) when missing. A new one
// is made durable (its parent fsynced): a journaled call fsynced into a
// directory whose own entry is lost in a crash is lost with it.
Expected<util::Fd>
open_subdirectory(int base, const char* name, bool create)
{
  if (create) {
    if (::mkdirat(base, name, 0700) == 0) {
      if (::fsync(base) != 0) {
        return make_error(name, util::errno_text(errno));
      }
    } else if (errno != EEXIST) {
      return make_error(name, util::errno_text(errno));
    }
  }
  util::Fd fd(::openat(base, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd && !(errno == ENOENT && !create)) {
    return make_error(name, util::errno_text(errno));
  }
  return fd;
}

// `path` (absolute or relative), made with its missing parents as mkdir -p
// does, each new one durable (open_subdirectory).
Expected<util::Fd>
open_root(const std::string& path)
{
  util::Fd current(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (current || errno != ENOENT) {
    if (!current) {
      return make_error(path, util::errno_text(errno));
    }
    return current;
  }
  current.reset(::open(!path.empty() && path.front() == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (size_t start = 0; current && start < path.size();) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string name = path.substr(start, end - start);
    start = end + 1;
    if (name.empty() || name == ".") {
      continue;
    }
    // Parents are followed as the caller named them; only the journal's own
    // directories refuse symbolic links.
    if (::mkdirat(current.get(), name.c_str(), 0700) == 0) {
      if (::fsync(current.get()) != 0) {
        return make_error(path, util::errno_text(errno));
      }
    } else if (errno != EEXIST) {
      return make_error(path, util::errno_text(errno));
    }
    current.reset(::openat(current.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  if (!current) {
    return make_error(path, util::errno_text(errno));
  }
  return current;
}

// The number of the next entry, under the journal's `sequence` lock (held
// by `lock_fd` until the entry is in calls/): the time in ns, or one more
// than the last number when the clock stepped back during an outage, so a
// later call never sorts before an earlier one. The number is fsynced
// before the entry that bears it is written.
Expected<int64_t>
next_sequence(int dir_fd, util::Fd& lock_fd)
{
  lock_fd.reset(::openat(dir_fd, "sequence", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock_fd) {
    return make_error("sequence", util::errno_text(errno));
  }
  if (!detail::lock(lock_fd.get(), LOCK_EX)) {
    return make_error("sequence", util::errno_text(errno));
  }
  char text[32] = {};
  const ssize_t got = ::pread(lock_fd.get(), text, sizeof text - 1, 0);
  const long long last = got > 0 ? std::atoll(text) : 0; // unreadable: the clock alone decides
  const int64_t next = std::max<int64_t>(util::now_ns(), last + 1);
  char out[32];
  const int size = std::snprintf(out, sizeof out, "%020lld\n", static_cast<long long>(next));
  if (::pwrite(lock_fd.get(), out, static_cast<size_t>(size), 0) != size || ::fsync(lock_fd.get()) != 0) {
    return make_error("sequence", util::errno_text(errno));
  }
  return next;
}

// Moves `name` from directory `from` into the subdirectory `into` of
// `dir_fd` (made when missing); false when it cannot.
bool
set_aside(int dir_fd, int from, const std::string& name, const char* into)
{
  auto target = open_subdirectory(dir_fd, into, true);
  return target && ::renameat(from, name.c_str(), target->get(), name.c_str()) == 0;
}

// How many names a subdirectory of the journal holds (0 when missing).
size_t
count_entries(int dir_fd, const char* name)
{
  auto fd = open_subdirectory(dir_fd, name, false);
  if (!fd || !fd->valid()) {
    return 0;
  }
  return list_names(fd->get(), any_name).size();
}

// Writes `data` to `name` beneath `dir_fd` through a temporary file and a
// rename: the name holds all of it or does not exist.
Expected<void>
write_whole(int tmp_dir_fd, const std::string& tmp, int dir_fd, const std::string& name, std::string_view data)
{
  util::Fd fd(::openat(tmp_dir_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    return make_error(tmp, util::errno_text(errno));
  }
  auto written = util::write_all(fd.get(), data);
  if (written && ::fsync(fd.get()) != 0) {
    written = make_error(tmp, util::errno_text(errno));
  }
  if (written && ::renameat(tmp_dir_fd, tmp.c_str(), dir_fd, name.c_str()) != 0) {
    written = make_error(name, util::errno_text(errno));
  }
  if (!written) {
    ::unlinkat(tmp_dir_fd, tmp.c_str(), 0);
  }
  return written;
}

struct EntryManifest
{
  DigestKey key;
  std::string encoded;
  Manifest manifest;
};

struct Entry
{
  std::string call;
  std::optional<SpooledProvenance> provenance;
  std::vector<EntryManifest> manifests;
  std::vector<Event> events;
};

// A manifest is what its name says: it decodes, in its name's algorithm,
// and its bytes hash to that name. `where` names it in the error.
Expected<Manifest>
checked_manifest(const DigestKey& key, const std::string& encoded, const std::string& where)
{
  auto manifest = decode_manifest(encoded, where);
  if (!manifest) {
    return manifest.error();
  }
  auto named = manifest_key(key.algorithm, encoded);
  if (!named) {
    return named.error();
  }
  if (manifest->algorithm != key.algorithm || *named != key) {
    return make_error(where, "input manifest " + key.str() + ": its bytes hash to " + named->str());
  }
  return manifest;
}

// One manifest line: {"manifest": "sha256:<hex>", "bytes": "<hex of its bytes>"}.
Expected<EntryManifest>
parse_manifest_line(std::string_view line, const std::string& where)
{
  EntryManifest read;
  std::string hex;
  try {
    const auto object = nlohmann::json::parse(line);
    if (!object.is_object() || !object.contains("manifest") || !object["manifest"].is_string()
        || !object.contains("bytes") || !object["bytes"].is_string()) {
      return make_error(where, "not an input manifest's line");
    }
    auto key = parse_digest_key(object["manifest"].get<std::string>());
    if (!key) {
      return make_error(where, key.error().message);
    }
    read.key = std::move(*key);
    hex = object["bytes"].get<std::string>();
  } catch (const nlohmann::json::exception& error) {
    return make_error(where, error.what());
  }
  if (!util::append_from_hex(hex, read.encoded)) {
    return make_error(where, "input manifest " + read.key.str() + ": its bytes are not hex");
  }
  auto manifest = checked_manifest(read.key, read.encoded, where);
  if (!manifest) {
    return manifest.error();
  }
  read.manifest = std::move(*manifest);
  return read;
}

// One journaled call, checked line by line; the error names the file (and line).
Expected<Entry>
read_entry(int calls_fd, const std::string& path, const std::string& name)
{
  const std::string file = path + "/" + name;
  util::Fd fd(::openat(calls_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat info
  {};
  if (!fd || ::fstat(fd.get(), &info) != 0) {
    return make_error(file, util::errno_text(errno));
  }
  if (!S_ISREG(info.st_mode) || static_cast<size_t>(info.st_size) > k_max_entry_size) {
    return make_error(file, S_ISREG(info.st_mode) ? "too large to be a journaled call" : "not a regular file");
  }
  auto text = util::read_all(fd.get());
  if (!text) {
    return make_error(file, text.error().message);
  }
  if (text->empty() || text->back() != '\n') {
    return make_error(file, "does not end in a newline: not written by fingerprint");
  }
  Entry entry;
  size_t expected = 0;
  size_t manifests = 0;
  size_t line_number = 0;
  for (size_t start = 0; start < text->size();) {
    const size_t end = text->find('\n', start);
    const std::string_view line(text->data() + start, end - start);
    start = end + 1;
    ++line_number;
    if (line_number == 1) {
      try {
        const auto header = nlohmann::json::parse(line);
        const int format = header.is_object() ? header.value("spool", 0) : 0;
        if ((format != k_spool_format && format != k_spool_format_manifests) || !header.contains("call")
            || !header["call"].is_string() || !header.contains("events") || !header["events"].is_number_unsigned()
            || (format == k_spool_format_manifests
                && (!header.contains("manifests") || !header["manifests"].is_number_unsigned()))) {
          return make_error(file + ":1",
                            "not a journaled call's header (format " + std::to_string(k_spool_format) + " or "
                              + std::to_string(k_spool_format_manifests) + ")");
        }
        entry.call = header["call"].get<std::string>();
        expected = header["events"].get<size_t>();
        if (format == k_spool_format_manifests) {
          manifests = header["manifests"].get<size_t>();
        }
        if (const auto it = header.find("provenance"); it != header.end()) {
          if (!it->is_object() || !it->contains("project") || !(*it)["project"].is_string() || !it->contains("build")
              || !(*it)["build"].is_string() || !it->contains("document") || !(*it)["document"].is_string()) {
            return make_error(file + ":1", "the header's \"provenance\" is not {project, build, document}");
          }
          SpooledProvenance provenance{{(*it)["project"].get<std::string>(), (*it)["build"].get<std::string>()},
                                       (*it)["document"].get<std::string>()};
          if (auto checked = parse_provenance(provenance.document, provenance.build, file + ":1"); !checked) {
            return checked.error();
          }
          entry.provenance = std::move(provenance);
        }
      } catch (const nlohmann::json::exception& error) {
        return make_error(file + ":1", error.what());
      }
      if (!util::is_lower_hex(entry.call, 32)) {
        return make_error(file + ":1", "the call id is not 32 hex digits");
      }
      continue;
    }
    if (entry.manifests.size() < manifests) {
      auto manifest = parse_manifest_line(line, file + ":" + std::to_string(line_number));
      if (!manifest) {
        return manifest.error();
      }
      entry.manifests.push_back(std::move(*manifest));
      continue;
    }
    auto event = parse_event(line);
    if (!event) {
      return make_error(file + ":" + std::to_string(line_number), event.error().message);
    }
    entry.events.push_back(std::move(*event));
  }
  if (entry.manifests.size() != manifests) {
    return make_error(file,
                      "holds " + std::to_string(entry.manifests.size()) + " input manifests, its header says "
                        + std::to_string(manifests));
  }
  if (entry.events.size() != expected) {
    return make_error(
      file, "holds " + std::to_string(entry.events.size()) + " events, its header says " + std::to_string(expected));
  }
  return entry;
}

// The journal's lock, held while delivering.
class JournalLock
{
public:
  // Not locked (locked() false) when `wait` is false and another holds it.
  static Expected<JournalLock>
  take(int dir_fd, bool wait)
  {
    JournalLock lock;
    lock.m_fd.reset(::openat(dir_fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!lock.m_fd) {
      return make_error("lock", util::errno_text(errno));
    }
    if (!detail::lock(lock.m_fd.get(), LOCK_EX | (wait ? 0 : LOCK_NB))) {
      if (errno != EWOULDBLOCK || wait) {
        return make_error("lock", util::errno_text(errno));
      }
      lock.m_fd.reset(); // another holds it
    }
    return lock;
  }

  bool
  locked() const
  {
    return m_fd.valid();
  }

private:
  util::Fd m_fd;
};

} // namespace

std::string
mask_url_password(std::string_view url)
{
  std::string out(url);
  const size_t scheme = out.find("://");
  if (scheme != std::string::npos) {
    const size_t start = scheme + 3;
    const size_t end = std::min(out.find_first_of("/?", start), out.size());
    const size_t at = out.rfind('@', end);
    if (at != std::string::npos && at >= start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) {
        out.replace(colon + 1, at - colon - 1, "***");
      }
    }
  }
  // password=... among the parameters.
  for (size_t at = out.find("password="); at != std::string::npos; at = out.find("password=", at + 1)) {
    const size_t begin = at + 9;
    const size_t end = std::min(out.find('&', begin), out.size());
    out.replace(begin, end - begin, "***");
  }
  return out;
}

std::string
new_call_id()
{
  unsigned char bytes[16] = {};
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    got += static_cast<size_t>(n);
  }
  if (got < sizeof bytes) {
    // No getrandom (an old kernel, a seccomp filter): time, pid and the
    // address of a stack variable still differ between any two calls.
    const std::string seed = std::to_string(util::now_ns()) + "-" + std::to_string(::getpid()) + "-"
                             + std::to_string(reinterpret_cast<uintptr_t>(&got));
    return sha256_hex(seed).substr(0, 32);
  }
  return util::to_hex(bytes, sizeof bytes);
}

std::string
spool_root()
{
  if (const char* dir = std::getenv("FINGERPRINT_SPOOL_DIR")) {
    return dir;
  }
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/fingerprint/spool";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.local/state/fingerprint/spool";
  }
  return {};
}

Expected<Spool>
Spool::for_database(std::string_view url)
{
  const std::string root = spool_root();
  if (root.empty()) {
    return Error{std::getenv("FINGERPRINT_SPOOL_DIR") != nullptr
                   ? "spooling is off (FINGERPRINT_SPOOL_DIR is empty)"
                   : "nowhere to spool (neither FINGERPRINT_SPOOL_DIR, XDG_STATE_HOME nor HOME is set)"};
  }
  std::string masked = mask_url_password(url);
  std::string directory = root + "/" + journal_key(masked);
  return Spool(std::move(directory), std::move(masked));
}

std::vector<std::pair<std::string, std::string>>
Spool::all_waiting(const std::string& root)
{
  std::vector<std::pair<std::string, std::string>> found;
  util::Fd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd) {
    return found;
  }
  for (const auto& key : list_names(root_fd.get(), any_name)) {
    const std::string directory = root + "/" + key;
    struct stat info
    {};
    if (::stat((directory + "/calls").c_str(), &info) != 0) {
      continue;
    }
    std::string url = "(unknown URL)";
    if (util::Fd fd(::open((directory + "/url").c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)); fd) {
      if (auto text = util::read_all(fd.get()); text && !text->empty()) {
        url = text->substr(0, text->find('\n'));
      }
    }
    found.emplace_back(url, directory);
  }
  return found;
}

bool
Spool::has_waiting() const
{
  struct stat info
  {};
  return ::stat((m_directory + "/calls").c_str(), &info) == 0;
}

Expected<Spooled>
Spool::add(const std::string& call,
           const std::vector<Event>& events,
           const std::vector<SpooledManifest>& manifests,
           bool mark_build,
           const std::optional<SpooledProvenance>& provenance) const
{
  if (events.empty()) {
    return Error{"nothing to spool"};
  }
  nlohmann::json header{{"spool", manifests.empty() ? k_spool_format : k_spool_format_manifests},
                        {"call", call},
                        {"store", m_url},
                        {"events", events.size()}};
  if (!manifests.empty()) {
    header["manifests"] = manifests.size();
  }
  if (provenance) {
    if (auto checked = parse_provenance(provenance->document, provenance->build, m_directory); !checked) {
      return checked.error();
    }
    header["provenance"] = {
      {"project", provenance->build.project}, {"build", provenance->build.build}, {"document", provenance->document}};
  }
  std::string text = header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  for (const auto& [key, encoded] : manifests) {
    // What delivery would find wrong is refused now: the journal is the only copy.
    if (auto checked = checked_manifest(key, encoded, m_directory); !checked) {
      return checked.error();
    }
    text +=
      nlohmann::json{{"manifest", key.str()},
                     {"bytes", util::to_hex(reinterpret_cast<const unsigned char*>(encoded.data()), encoded.size())}}
        .dump();
    text += '\n';
  }
  for (const Event& event : events) {
    auto stored = stored_form(event);
    if (!stored) {
      return stored.error();
    }
    // What the database would refuse is refused now, not found out at delivery.
    if (auto fits = storable_in_database(event); !fits) {
      return fits.error();
    }
    text += stored->line;
    text += '\n';
  }

  const size_t slash = m_directory.rfind('/');
  const std::string key = m_directory.substr(slash + 1);
  auto root_fd = open_root(m_directory.substr(0, slash));
  if (!root_fd) {
    return root_fd.error();
  }
  auto dir_fd = open_subdirectory(root_fd->get(), key.c_str(), true);
  if (!dir_fd) {
    return make_error(m_directory, dir_fd.error().message);
  }
  const int dir = dir_fd->get();
  if (::faccessat(dir, "url", F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
    (void)write_whole(dir, ".url-" + call + ".tmp", dir, "url", m_url + "\n"); // for people: best effort
  }
  // Held until the entry is in calls/: a deliverer never lists a later
  // number without the earlier ones.
  util::Fd sequence_lock;
  auto sequence = next_sequence(dir, sequence_lock);
  if (!sequence) {
    return make_error(m_directory, sequence.error().message);
  }
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%020lld", static_cast<long long>(*sequence));
  const std::string name = std::string(stamp) + "-" + call + ".jsonl";
  // A deliverer removes calls/ when it empties it: then make it again.
  Expected<void> written = Error{};
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto calls_fd = open_subdirectory(dir, "calls", true);
    if (!calls_fd) {
      return make_error(m_directory, calls_fd.error().message);
    }
    written = write_whole(dir, ".call-" + call + ".tmp", calls_fd->get(), name, text);
    if (written) {
      if (::fsync(calls_fd->get()) != 0) {
        return make_error(m_directory + "/calls", util::errno_text(errno));
      }
      break;
    }
    if (::faccessat(dir, "calls", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
      break; // not the race with a deliverer: a real failure
    }
  }
  sequence_lock.reset();
  if (!written) {
    return make_error(m_directory, written.error().message);
  }

  Spooled spooled{m_directory + "/calls/" + name};
  // One warning per build: whoever makes its marker first.
  if (!mark_build) {
    return spooled;
  }
  if (auto warned = open_subdirectory(dir, "warned", true); warned) {
    const std::string marker = sha256_hex(events.front().project + '\0' + events.front().build).substr(0, 32);
    util::Fd fd(::openat(warned->get(), marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    spooled.first_of_build = fd.valid() || errno != EEXIST;
  } else {
    spooled.first_of_build = true;
  }
  return spooled;
}

SpoolContents
Spool::contents() const
{
  SpoolContents contents;
  if (util::Fd dir_fd(::open(m_directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)); dir_fd) {
    contents.refused = count_entries(dir_fd.get(), "refused");
    contents.damaged = count_entries(dir_fd.get(), "damaged");
  }
  util::Fd calls_fd(::open((m_directory + "/calls").c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!calls_fd) {
    return contents;
  }
  for (const auto& name : list_names(calls_fd.get(), any_name)) {
    if (!is_entry_name(name)) {
      contents.problems.push_back(m_directory + "/calls/" + name + ": not a journaled call");
      continue;
    }
    auto entry = read_entry(calls_fd.get(), m_directory + "/calls", name);
    if (!entry) {
      contents.problems.push_back(entry.error().message);
      continue;
    }
    ++contents.calls;
    contents.events += entry->events.size();
    contents.manifests += entry->manifests.size();
  }
  return contents;
}

DeliveryReport
Spool::deliver(const Store& store,
               bool wait,
               const std::function<void(size_t, size_t)>& progress,
               const DeliveryLimit& limit) const
{
  DeliveryReport report;
  const int64_t started = steady_ns();
  util::Fd dir_fd(::open(m_directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd) {
    if (errno != ENOENT) {
      report.error = make_error(m_directory, util::errno_text(errno));
    }
    return report;
  }
  auto lock = JournalLock::take(dir_fd.get(), wait);
  if (!lock) {
    report.error = make_error(m_directory, lock.error().message);
    return report;
  }
  if (!lock->locked()) {
    report.locked_out = true; // another process delivers this journal right now
    return report;
  }
  const std::string calls_path = m_directory + "/calls";
  util::Fd calls_fd(::openat(dir_fd.get(), "calls", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!calls_fd) {
    return report;
  }
  // For tests only (tests/pg/outage.sh): the deliverer is killed (SIGKILL,
  // as `kill -9` would) right after the store took this many calls, before
  // their entries are removed.
  const char* die_after = std::getenv("FINGERPRINT_TEST_DIE_AFTER_DELIVERING");
  const long long die_at = die_after != nullptr ? std::atoll(die_after) : 0;
  long long taken = 0;
  // Entries left where they are (they could not be set aside): listed once, not retried.
  std::set<std::string> skipped;
  size_t done = 0;
  // Calls journaled while this one delivers are delivered too.
  for (bool more = true; more;) {
    more = false;
    std::vector<std::string> names;
    for (auto& name : list_names(calls_fd.get(), any_name)) {
      if (skipped.count(name) == 0) {
        names.push_back(std::move(name));
      }
    }
    const size_t total = done + names.size();
    for (const auto& name : names) {
      more = true;
      if (done >= limit.calls || (limit.ns > 0 && done > 0 && steady_ns() - started >= limit.ns)) {
        report.cut_short = true;
        return report;
      }
      // Unreadable (or not a journaled call at all): moved out of the way,
      // so that the next deliverer neither meets it again nor keeps calls/
      // alive for it; never deleted.
      auto entry = is_entry_name(name) ? read_entry(calls_fd.get(), calls_path, name)
                                       : Expected<Entry>(make_error(calls_path + "/" + name, "not a journaled call"));
      if (!entry) {
        if (set_aside(dir_fd.get(), calls_fd.get(), name, "damaged")) {
          ++report.damaged;
          report.problems.push_back(entry.error().message + " (moved to " + m_directory + "/damaged/" + name + ")");
        } else {
          report.problems.push_back(entry.error().message + " (left as it is)");
          skipped.insert(name);
        }
        continue;
      }
      // The manifests first, as a hook puts them: the events that name them
      // find them whole. Put again after a deliverer died, each is the same
      // one, and the store keeps it once.
      size_t manifests_new = 0;
      Expected<bool> appended = true;
      if (entry->provenance) {
        // Written once: put again after a deliverer died, it is there already.
        if (auto put = store.put_provenance(entry->provenance->build, entry->provenance->document); !put) {
          appended = put.error();
        }
      }
      for (const EntryManifest& manifest : entry->manifests) {
        if (!appended) {
          break;
        }
        auto put = store.put_manifest(manifest.key, manifest.encoded, manifest.manifest);
        if (!put) {
          appended = put.error();
          break;
        }
        manifests_new += *put ? 1 : 0;
      }
      if (appended) {
        appended = store.append_call(entry->call, entry->events);
      }
      if (!appended) {
        if (appended.error().unavailable) {
          report.error = appended.error();
          return report;
        }
        // The database will not take it (it is not a matter of time): set
        // aside, never deleted, and the calls after it go on.
        std::string where = calls_path + "/" + name;
        if (set_aside(dir_fd.get(), calls_fd.get(), name, "refused")) {
          where = m_directory + "/refused/" + name;
        } else {
          skipped.insert(name);
        }
        ++report.refused;
        report.problems.push_back(where + ": refused by " + store.location() + ": " + appended.error().message
                                  + " (once the cause is fixed: fingerprint sync --retry-refused)");
        continue;
      }
      if (die_at > 0 && ++taken == die_at) {
        ::kill(::getpid(), SIGKILL);
      }
      // Only now: a deliverer killed before this line leaves the call to be
      // skipped (its id is in the store) by the next.
      if (::unlinkat(calls_fd.get(), name.c_str(), 0) != 0) {
        report.error =
          make_error(calls_path + "/" + name, "delivered, but cannot be removed: " + util::errno_text(errno));
        return report;
      }
      report.manifests += manifests_new;
      if (*appended) {
        ++report.delivered;
        report.events += entry->events.size();
      } else {
        ++report.already;
      }
      if (progress) {
        progress(++done, total);
      } else {
        ++done;
      }
    }
  }
  // Emptied: the next hook's stat() finds nothing. A call journaled since
  // keeps calls/ (ENOTEMPTY), and the next contact delivers it.
  if (skipped.empty() && ::unlinkat(dir_fd.get(), "calls", AT_REMOVEDIR) == 0) {
    if (auto warned = open_subdirectory(dir_fd.get(), "warned", false); warned && warned->valid()) {
      for (const auto& marker : list_names(warned->get(), any_name)) {
        ::unlinkat(warned->get(), marker.c_str(), 0);
      }
      ::unlinkat(dir_fd.get(), "warned", AT_REMOVEDIR);
    }
  }
  return report;
}

Expected<size_t>
Spool::retry_refused() const
{
  util::Fd dir_fd(::open(m_directory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_fd) {
    if (errno == ENOENT) {
      return size_t{0};
    }
    return make_error(m_directory, util::errno_text(errno));
  }
  auto lock = JournalLock::take(dir_fd.get(), true);
  if (!lock) {
    return make_error(m_directory, lock.error().message);
  }
  auto refused = open_subdirectory(dir_fd.get(), "refused", false);
  if (!refused) {
    return make_error(m_directory, refused.error().message);
  }
  if (!refused->valid()) {
    return size_t{0};
  }
  size_t moved = 0;
  for (const auto& name : list_names(refused->get(), is_entry_name)) {
    if (!set_aside(dir_fd.get(), refused->get(), name, "calls")) {
      return make_error(m_directory + "/refused/" + name, "cannot be put back into calls/: " + util::errno_text(errno));
    }
    ++moved;
  }
  return moved;
}

std::string
Spool::waiting_note(const SpoolContents& contents, const Spool& spool, bool hint)
{
  return std::to_string(contents.events) + (contents.events == 1 ? " event of " : " events of ")
         + std::to_string(contents.calls) + (contents.calls == 1 ? " record call waits in " : " record calls wait in ")
         + spool.directory() + " for delivery to " + spool.url() + (hint ? " (run: fingerprint sync)" : "");
}

} // namespace fingerprint::store
