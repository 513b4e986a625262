#include <fingerprint/store/format.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <cerrno>
#include <dirent.h>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::store::layout {

namespace {

using util::Fd;

constexpr std::string_view k_leftover = "a temporary file left by an interrupted compaction, repair or manifest write";

std::string_view
tag_name(TempTag tag)
{
  switch (tag) {
    case TempTag::compact:
      return "compact";
    case TempTag::repair:
      return "repair";
    case TempTag::create:
      break;
  }
  return "tmp";
}

// The entries of one directory, sorted by name, with their types (asked of
// the filesystem where readdir() does not say).
struct Listed
{
  std::string name;
  unsigned char type = DT_UNKNOWN;
};

class Walker
{
public:
  explicit Walker(Walk& out)
    : m_out(out)
  {
  }

  // Opens `name` in `parent` as a directory and lists it; a missing one
  // lists as empty, anything else that cannot be opened is an error.
  std::vector<Listed>
  list(int parent, const std::string& name, const std::string& relative, Fd& fd)
  {
    fd = Fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) {
      if (errno == ELOOP || errno == ENOTDIR) {
        m_out.errors.push_back({relative, "not a directory (symbolic links are not followed inside the store)", errno});
      } else if (errno != ENOENT) {
        m_out.errors.push_back({relative, util::errno_text(errno), errno});
      }
      return {};
    }
    Fd for_dir(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    std::unique_ptr<DIR, int (*)(DIR*)> dir(for_dir ? ::fdopendir(for_dir.release()) : nullptr, ::closedir);
    if (!dir) {
      m_out.errors.push_back({relative, util::errno_text(errno), errno});
      return {};
    }
    std::vector<Listed> entries;
    while (const dirent* entry = ::readdir(dir.get())) {
      const std::string_view entry_name = entry->d_name;
      if (entry_name != "." && entry_name != "..") {
        entries.push_back({std::string(entry_name), entry->d_type});
      }
    }
    for (Listed& entry : entries) {
      if (entry.type == DT_UNKNOWN) {
        struct stat st
        {};
        if (::fstatat(fd.get(), entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
          entry.type = S_ISDIR(st.st_mode)   ? DT_DIR
                       : S_ISREG(st.st_mode) ? DT_REG
                       : S_ISLNK(st.st_mode) ? DT_LNK
                                             : DT_UNKNOWN;
        }
      }
    }
    std::sort(entries.begin(), entries.end(), [](const Listed& a, const Listed& b) { return a.name < b.name; });
    return entries;
  }

  void
  stray(std::string relative, std::string_view name, unsigned char type)
  {
    Entry entry;
    entry.relative = std::move(relative);
    if (type == DT_LNK) {
      entry.why_stray = "a symbolic link inside the store (never followed)";
    } else if (type != DT_REG) {
      entry.why_stray = type == DT_DIR ? "a directory where a log belongs" : "not a regular file";
    } else if (is_temp_name(name)) {
      entry.why_stray = k_leftover;
      entry.leftover = true;
    } else {
      entry.why_stray = "not a log of the store";
    }
    m_out.entries.push_back(std::move(entry));
  }

  // One content-addressed tree: <tree>/<algorithm>/<2 hex>/<hex><suffix>,
  // each such file of kind `kind`, anything else a stray (a temporary file
  // of an interrupted writer is a leftover).
  void
  content_tree(int root_fd, std::string_view tree, std::string_view suffix, Entry::Kind kind)
  {
    Fd tree_fd;
    const std::string tree_dir(tree);
    for (const Listed& algorithm : list(root_fd, tree_dir, tree_dir, tree_fd)) {
      const std::string algorithm_dir = tree_dir + "/" + algorithm.name;
      if (algorithm.type != DT_DIR || !digest::parse_algorithm(algorithm.name)) {
        // A directory of no known algorithm is "not a regular file".
        stray(algorithm_dir,
              algorithm.name,
              algorithm.type == DT_DIR ? static_cast<unsigned char>(DT_UNKNOWN) : algorithm.type);
        continue;
      }
      Fd algorithm_fd;
      for (const Listed& shard : list(tree_fd.get(), algorithm.name, algorithm_dir, algorithm_fd)) {
        const std::string shard_dir = algorithm_dir + "/" + shard.name;
        if (kind == Entry::Kind::reverse_index && shard.name == k_input_journal && shard.type == DT_REG) {
          Entry entry;
          entry.relative = shard_dir;
          entry.kind = Entry::Kind::input_journal;
          entry.key.algorithm = *digest::parse_algorithm(algorithm.name);
          m_out.entries.push_back(std::move(entry));
          continue;
        }
        if (shard.type != DT_DIR) {
          stray(shard_dir, shard.name, shard.type);
          continue;
        }
        Fd shard_fd;
        for (const Listed& file : list(algorithm_fd.get(), shard.name, shard_dir, shard_fd)) {
          const std::string relative = shard_dir + "/" + file.name;
          if (file.name.ends_with(suffix)) {
            const std::string hex = file.name.substr(0, file.name.size() - suffix.size());
            auto key = parse_digest_key(algorithm.name + ":" + hex);
            if (key && shard.name.size() == 2 && hex.starts_with(shard.name)) {
              if (file.type != DT_REG) {
                stray(relative, file.name, file.type);
                m_out.entries.back().key = std::move(*key);
                m_out.entries.back().log_name = true;
                continue;
              }
              Entry entry;
              entry.relative = relative;
              entry.kind = kind;
              entry.key = std::move(*key);
              m_out.entries.push_back(std::move(entry));
              continue;
            }
          }
          stray(relative, file.name, file.type);
        }
      }
    }
  }

  void
  objects(int root_fd)
  {
    content_tree(root_fd, k_objects, k_log_suffix, Entry::Kind::artifact_log);
  }

  void
  manifests(int root_fd)
  {
    content_tree(root_fd, k_manifests, "", Entry::Kind::manifest);
    content_tree(root_fd, k_inputs, "", Entry::Kind::reverse_index);
  }

  void
  builds(int root_fd)
  {
    Fd builds_fd;
    const std::string builds_dir(k_builds);
    for (const Listed& project : list(root_fd, builds_dir, builds_dir, builds_fd)) {
      const std::string project_dir = builds_dir + "/" + project.name;
      if (project.type != DT_DIR) {
        stray(project_dir, project.name, project.type);
        continue;
      }
      Fd project_fd;
      for (const Listed& file : list(builds_fd.get(), project.name, project_dir, project_fd)) {
        const std::string relative = project_dir + "/" + file.name;
        if (file.name.size() > k_provenance_suffix.size() && file.name.ends_with(k_provenance_suffix)
            && file.type == DT_REG) {
          Entry entry;
          entry.relative = relative;
          entry.kind = Entry::Kind::provenance;
          entry.build = BuildRef{
            decode_component(project.name),
            decode_component(std::string_view(file.name).substr(0, file.name.size() - k_provenance_suffix.size()))};
          m_out.entries.push_back(std::move(entry));
          continue;
        }
        if (file.name.size() > k_log_suffix.size() && file.name.ends_with(k_log_suffix)) {
          BuildRef build{
            decode_component(project.name),
            decode_component(std::string_view(file.name).substr(0, file.name.size() - k_log_suffix.size()))};
          if (file.type != DT_REG) {
            stray(relative, file.name, file.type);
            m_out.entries.back().build = std::move(build);
            m_out.entries.back().log_name = true;
            continue;
          }
          Entry entry;
          entry.relative = relative;
          entry.kind = Entry::Kind::build_index;
          entry.build = std::move(build);
          m_out.entries.push_back(std::move(entry));
          continue;
        }
        stray(relative, file.name, file.type);
      }
    }
  }

  void
  root_leftovers(int root_fd)
  {
    Fd again;
    const std::string format_temp = std::string(k_format_file) + "." + std::string(tag_name(TempTag::create)) + ".";
    // The builds summary's (build_summary.hpp), which is written the same way.
    const std::string summary_temp = "builds.summary." + std::string(tag_name(TempTag::create)) + ".";
    // And the index pack's (index_pack.hpp).
    const std::string pack_temp = "index.pack." + std::string(tag_name(TempTag::create)) + ".";
    // And the index by path's, and builds.recent's when gc trims it
    // (path_index.hpp).
    const std::string paths_temp = "paths.index." + std::string(tag_name(TempTag::create)) + ".";
    const std::string recent_temp = "builds.recent." + std::string(tag_name(TempTag::compact)) + ".";
    for (const Listed& entry : list(root_fd, ".", ".", again)) {
      if (entry.name.starts_with(format_temp) || entry.name.starts_with(summary_temp)
          || entry.name.starts_with(pack_temp) || entry.name.starts_with(paths_temp)
          || entry.name.starts_with(recent_temp)) {
        stray(entry.name, entry.name, entry.type);
      }
    }
  }

private:
  Walk& m_out;
};

} // namespace

namespace {

std::string
content_path(std::string_view tree, const DigestKey& key)
{
  std::string result(tree);
  result += '/';
  result += digest::algorithm_name(key.algorithm);
  result += '/';
  result.append(key.hex, 0, 2);
  result += '/';
  result += key.hex;
  return result;
}

} // namespace

std::string
artifact_log(const DigestKey& key)
{
  return content_path(k_objects, key) + std::string(k_log_suffix);
}

std::string
manifest_file(const DigestKey& key)
{
  return content_path(k_manifests, key);
}

std::string
reverse_index(const DigestKey& key)
{
  return content_path(k_inputs, key);
}

std::string
input_journal(digest::Algorithm algorithm)
{
  std::string result(k_inputs);
  result += '/';
  result += digest::algorithm_name(algorithm);
  result += '/';
  result += k_input_journal;
  return result;
}

std::string
build_index(const BuildRef& build)
{
  std::string result(k_builds);
  result += '/';
  result += encode_component(build.project);
  result += '/';
  result += encode_component(build.build);
  result += k_log_suffix;
  return result;
}

std::string
build_provenance(const BuildRef& build)
{
  std::string result(k_builds);
  result += '/';
  result += encode_component(build.project);
  result += '/';
  result += encode_component(build.build);
  result += k_provenance_suffix;
  return result;
}

std::string
encode_component(std::string_view text)
{
  static constexpr char k_digits[] = "0123456789ABCDEF";
  std::string result;
  result.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'
                       || c == '-' || c == '+' || (c == '.' && i > 0);
    if (plain) {
      result += static_cast<char>(c);
    } else {
      result += '%';
      result += k_digits[c >> 4];
      result += k_digits[c & 0xf];
    }
  }
  return result.empty() ? "%" : result;
}

std::string
decode_component(std::string_view text)
{
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    return -1;
  };
  std::string result;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && nibble(text[i + 1]) >= 0 && nibble(text[i + 2]) >= 0) {
      result += static_cast<char>(nibble(text[i + 1]) * 16 + nibble(text[i + 2]));
      i += 2;
    } else if (text != "%") { // "%" alone stands for the empty string
      result += text[i];
    }
  }
  return result;
}

std::string
temp_name(std::string_view name, TempTag tag)
{
  std::string result(name);
  result += '.';
  result += tag_name(tag);
  result += '.';
  result += std::to_string(::getpid());
  if (tag == TempTag::create) {
    result += '.';
    result += std::to_string(util::now_ns());
  }
  return result;
}

bool
is_temp_name(std::string_view name)
{
  for (const TempTag tag : {TempTag::compact, TempTag::repair, TempTag::create}) {
    if (name.find("." + std::string(tag_name(tag)) + ".") != std::string_view::npos) {
      return true;
    }
  }
  return false;
}

std::string
quarantine_run(int64_t now_ns)
{
  std::string stamp;
  for (const char c : util::format_rfc3339(now_ns)) {
    if (c != '-' && c != ':' && c != '.') {
      stamp += c;
    }
  }
  return std::string(k_quarantine) + "/" + stamp + "-" + std::to_string(::getpid());
}

Walk
walk(int root_fd, WalkScope scope)
{
  Walk out;
  Walker walker(out);
  if (scope == WalkScope::everything) {
    walker.root_leftovers(root_fd);
  }
  if (scope == WalkScope::logs || scope == WalkScope::everything) {
    walker.objects(root_fd);
  }
  if (scope == WalkScope::builds || scope == WalkScope::everything) {
    walker.builds(root_fd);
  }
  if (scope == WalkScope::manifests || scope == WalkScope::everything) {
    walker.manifests(root_fd);
  }
  return out;
}

} // namespace fingerprint::store::layout
