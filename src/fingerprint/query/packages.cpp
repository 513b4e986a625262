#include <fingerprint/query/packages.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fcntl.h>
#include <map>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::query {

namespace {

constexpr std::string_view k_index_prefix = "dpkg-";
constexpr std::string_view k_index_suffix = ".index";

// A package's name, architecture and version, as the status file has them.
struct Installed
{
  std::string package;
  std::string architecture;
  std::string version;
};

// The installed packages of a status file, by "<package>:<architecture>"
// and, for a name only one architecture of is installed, by "<package>":
// a list file is named either way (multi-arch "same" packages by the
// first).
std::map<std::string, Installed, std::less<>>
installed_packages(std::string_view status)
{
  std::map<std::string, Installed, std::less<>> by_name;
  std::map<std::string, int, std::less<>> architectures_of;
  auto finish = [&](Installed& paragraph, bool installed) {
    if (installed && !paragraph.package.empty()) {
      by_name[paragraph.package + ":" + paragraph.architecture] = paragraph;
      if (++architectures_of[paragraph.package] == 1) {
        by_name[paragraph.package] = paragraph;
      } else {
        by_name.erase(paragraph.package);
      }
    }
    paragraph = Installed{};
  };
  Installed paragraph;
  bool installed = false;
  while (!status.empty()) {
    const size_t newline = status.find('\n');
    const std::string_view line = status.substr(0, newline);
    status.remove_prefix(newline == std::string_view::npos ? status.size() : newline + 1);
    if (line.empty()) {
      finish(paragraph, installed);
      installed = false;
      continue;
    }
    auto value = [&](std::string_view field) { return std::string(line.substr(field.size())); };
    if (line.starts_with("Package: ")) {
      paragraph.package = value("Package: ");
    } else if (line.starts_with("Architecture: ")) {
      paragraph.architecture = value("Architecture: ");
    } else if (line.starts_with("Version: ")) {
      paragraph.version = value("Version: ");
    } else if (line.starts_with("Status: ")) {
      installed = line.ends_with(" installed");
    }
  }
  finish(paragraph, installed);
  return by_name;
}

// The names of `dir`'s entries ending in `suffix`, sorted.
std::vector<std::string>
names_ending(const std::string& dir, std::string_view suffix)
{
  std::vector<std::string> names = util::sorted_entries(dir);
  std::erase_if(names,
                [&](const std::string& name) { return name.size() <= suffix.size() || !name.ends_with(suffix); });
  return names;
}

// Names the state of the database: the status file and the info directory
// change whenever a package is installed, upgraded or removed.
std::string
state_name(const struct stat& status, const struct stat& info)
{
  uint64_t hash = 14695981039346656037ULL; // FNV-1a over the numbers
  for (const int64_t number : {static_cast<int64_t>(status.st_mtim.tv_sec),
                               static_cast<int64_t>(status.st_mtim.tv_nsec),
                               static_cast<int64_t>(status.st_size),
                               static_cast<int64_t>(status.st_ino),
                               static_cast<int64_t>(info.st_mtim.tv_sec),
                               static_cast<int64_t>(info.st_mtim.tv_nsec)}) {
    for (int shift = 0; shift < 64; shift += 8) {
      hash = (hash ^ ((static_cast<uint64_t>(number) >> shift) & 0xff)) * 1099511628211ULL;
    }
  }
  static constexpr char k_hex[] = "0123456789abcdef";
  std::string name(k_index_prefix);
  for (int shift = 60; shift >= 0; shift -= 4) {
    name += k_hex[(hash >> shift) & 15];
  }
  return name + std::string(k_index_suffix);
}

// The other spelling of a path under Debian 12's merged /usr.
std::optional<std::string>
merged_alias(const std::string& path)
{
  for (const std::string_view top : {"/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/"}) {
    if (path.starts_with(top)) {
      return "/usr" + path;
    }
    if (path.starts_with("/usr") && std::string_view(path).substr(4).starts_with(top)) {
      return path.substr(4);
    }
  }
  return std::nullopt;
}

// A read-only mapping of a whole file, or its bytes in memory.
struct Mapped
{
  const char* data = nullptr;
  size_t size = 0;
  std::string owned;

  Mapped() = default;
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  ~Mapped()
  {
    if (owned.empty() && data != nullptr) {
      ::munmap(const_cast<char*>(data), size);
    }
  }
};

} // namespace

Expected<std::string>
PackageIndex::make_index(const std::string& admin_dir)
{
  auto status = util::read_regular_file(admin_dir + "/status");
  if (!status) {
    return status.error();
  }
  const auto packages = installed_packages(*status);
  const std::string info = admin_dir + "/info";
  std::vector<std::string> lines;
  for (const std::string& name : names_ending(info, ".list")) {
    const std::string_view stem = std::string_view(name).substr(0, name.size() - 5);
    auto found = packages.find(stem);
    if (found == packages.end()) {
      continue; // a package removed but not purged keeps its list a while
    }
    const Installed& package = found->second;
    auto list = util::read_regular_file(info + "/" + name);
    if (!list) {
      continue; // one unreadable list must not hide every other package
    }
    const std::string tail = "\t" + package.package + "\t" + package.architecture + "\t" + package.version + "\n";
    std::string_view rest = *list;
    while (!rest.empty()) {
      const size_t newline = rest.find('\n');
      const std::string_view path = rest.substr(0, newline);
      rest.remove_prefix(newline == std::string_view::npos ? rest.size() : newline + 1);
      if (path.starts_with('/') && path != "/." && path.find('\t') == std::string_view::npos) {
        lines.push_back(std::string(path) + tail);
      }
    }
  }
  // By path; a path several packages list (a directory) once, the first
  // package in that order.
  std::sort(lines.begin(), lines.end());
  auto path_of = [](const std::string& line) { return std::string_view(line).substr(0, line.find('\t')); };
  lines.erase(std::unique(lines.begin(),
                          lines.end(),
                          [&](const std::string& a, const std::string& b) { return path_of(a) == path_of(b); }),
              lines.end());
  std::string text;
  size_t total = 0;
  for (const std::string& line : lines) {
    total += line.size();
  }
  text.reserve(total);
  for (const std::string& line : lines) {
    text += line;
  }
  return text;
}

Expected<PackageIndex>
PackageIndex::open(const std::string& admin_dir, const std::string& cache_dir)
{
  PackageIndex index;
  auto mapped = std::make_shared<Mapped>();
  struct stat status
  {};
  struct stat info
  {};
  if (::stat((admin_dir + "/status").c_str(), &status) != 0 || ::stat((admin_dir + "/info").c_str(), &info) != 0) {
    index.m_keep = mapped;
    return index; // not a dpkg system
  }
  const std::string name = state_name(status, info);
  const std::string cached = cache_dir + "/" + name;
  if (util::Fd fd(::open(cached.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)); fd) {
    struct stat st
    {};
    if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
      mapped->size = static_cast<size_t>(st.st_size);
      void* data = mapped->size == 0 ? MAP_FAILED : ::mmap(nullptr, mapped->size, PROT_READ, MAP_SHARED, fd.get(), 0);
      if (data != MAP_FAILED) {
        mapped->data = static_cast<const char*>(data);
        index.m_cached = true;
      }
    }
  }
  if (!index.m_cached) {
    auto text = make_index(admin_dir);
    if (!text) {
      return text.error();
    }
    mapped->owned = std::move(*text);
    mapped->data = mapped->owned.data();
    mapped->size = mapped->owned.size();
    // Kept for the next query: written whole under a temporary name, then
    // renamed; the indexes of earlier states go.
    if (auto dir = util::open_directory(cache_dir, true); dir && dir->valid()) {
      const std::string temp = name + ".tmp." + std::to_string(::getpid());
      util::Fd out(::openat(dir->get(), temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
      if (out && util::write_all(out.get(), mapped->owned)
          && ::renameat(dir->get(), temp.c_str(), dir->get(), name.c_str()) == 0) {
        for (const std::string& old : names_ending(cache_dir, k_index_suffix)) {
          if (old.starts_with(k_index_prefix) && old != name) {
            ::unlink((cache_dir + "/" + old).c_str());
          }
        }
      } else {
        ::unlinkat(dir->get(), temp.c_str(), 0);
      }
    }
  }
  index.m_keep = mapped;
  index.m_view = std::string_view(mapped->data == nullptr ? "" : mapped->data, mapped->size);
  return index;
}

std::optional<PackageOrigin>
PackageIndex::exact(std::string_view path) const
{
  const std::string_view text = m_view;
  auto path_at = [&](size_t start) {
    const size_t tab = text.find('\t', start);
    return text.substr(start, tab == std::string_view::npos ? text.size() - start : tab - start);
  };
  // Lines start at lo (0, or after a newline); the first whose path is not
  // less than `path` is found by halving the bytes between lo and hi.
  size_t lo = 0;
  size_t hi = text.size();
  while (lo < hi) {
    size_t start = lo + (hi - lo) / 2;
    while (start > lo && text[start - 1] != '\n') {
      --start;
    }
    if (path_at(start) < path) {
      const size_t newline = text.find('\n', start);
      lo = newline == std::string_view::npos ? text.size() : newline + 1;
    } else {
      hi = start;
    }
  }
  if (lo >= text.size() || path_at(lo) != path) {
    return std::nullopt;
  }
  const size_t newline = text.find('\n', lo);
  std::string_view line = text.substr(lo, newline == std::string_view::npos ? text.size() - lo : newline - lo);
  std::vector<std::string_view> fields;
  while (fields.size() < 3) {
    const size_t tab = line.find('\t');
    if (tab == std::string_view::npos) {
      return std::nullopt;
    }
    fields.push_back(line.substr(0, tab));
    line.remove_prefix(tab + 1);
  }
  return PackageOrigin{std::string(fields[1]), std::string(fields[2]), std::string(line), std::string(fields[0])};
}

std::optional<PackageOrigin>
PackageIndex::owner(const std::string& path) const
{
  std::vector<std::string> candidates{path};
  if (auto alias = merged_alias(path)) {
    candidates.push_back(*alias);
  }
  if (char* resolved = ::realpath(path.c_str(), nullptr)) {
    const std::string real = resolved;
    std::free(resolved);
    if (real != path) {
      candidates.push_back(real);
      if (auto alias = merged_alias(real)) {
        candidates.push_back(*alias);
      }
    }
  }
  for (const std::string& candidate : candidates) {
    if (auto origin = exact(candidate)) {
      return origin;
    }
  }
  return std::nullopt;
}

} // namespace fingerprint::query
