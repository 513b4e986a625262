#include <fingerprint/store/build_summary.hpp>
#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/store/layout.hpp>
#include <fingerprint/store/log_io.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fnv1a.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <charconv>
#include <fcntl.h>
#include <map>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace fingerprint::store {

namespace {

constexpr std::string_view k_magic = "fingerprint-builds-summary 1\n";
constexpr size_t k_fields = 12;

uint64_t
fnv1a(std::string_view text)
{
  return util::fnv1a(util::k_fnv_basis, text.data(), text.size());
}

// A field as one space-free word, and back (layout::encode_component, which
// writes "" as "%").
std::string
word(std::string_view text)
{
  return layout::encode_component(text);
}

bool
same_build(const BuildRef& a, const BuildRef& b)
{
  return a.project == b.project && a.build == b.build;
}

std::string
key_of(const BuildRef& ref)
{
  return ref.project + '\0' + ref.build;
}

// A consumed digest as a fixed-width key, to be counted once: its
// algorithm, then its raw bytes (zeros after them).
using RawDigest = std::array<unsigned char, 1 + digest::k_max_digest_size>;

RawDigest
raw_digest(digest::Algorithm algorithm, std::string_view raw)
{
  RawDigest key{};
  key[0] = static_cast<unsigned char>(algorithm);
  std::copy(raw.begin(), raw.end(), key.begin() + 1);
  return key;
}

} // namespace

BuildSummary
summarize_build(const Store& store,
                const BuildRef& ref,
                const std::vector<Event>& events,
                std::vector<LogProblem>& problems)
{
  BuildSummary summary;
  summary.ref = ref;
  std::set<std::string> produced;
  // The digests consumed: the manifests' entries (about 100 a product) and
  // old consumed events, raw; a digest an old event names that does not
  // parse, as written.
  std::vector<RawDigest> consumed;
  std::set<std::string> consumed_unparsed;
  auto consumed_event = [&](const std::string& digest) {
    // parse_digest_key() takes only the algorithm's length of lowercase hex.
    if (const auto key = parse_digest_key(digest)) {
      std::string raw;
      util::append_from_hex(key->hex, raw);
      consumed.push_back(raw_digest(key->algorithm, raw));
    } else {
      consumed_unparsed.insert(digest);
    }
  };
  // A manifest is read as columns, once (an unchanged relink names the same
  // one again); true: it has entries.
  std::map<std::string, bool> manifests;
  ManifestColumns columns;
  const Event* last = nullptr; // whose build_dir and host the summary has
  const Event* last_with_inputs = nullptr;
  auto seen_time = [&](const std::string& time) {
    if (summary.first_time.empty() || time < summary.first_time) {
      summary.first_time = time;
    }
    summary.last_time = std::max(summary.last_time, time);
  };
  for (const Event& event : events) {
    seen_time(event.time);
    last = &event;
    switch (event.event) {
      case EventKind::produced:
        produced.insert(event.digest);
        break;
      case EventKind::consumed:
        consumed_event(event.digest);
        break;
      case EventKind::installed:
        ++summary.installed;
        break;
    }
    if (event.event != EventKind::produced || event.inputs.empty()) {
      continue;
    }
    auto [slot, added] = manifests.try_emplace(event.inputs, false);
    if (added) {
      auto key = parse_digest_key(event.inputs);
      auto read = key ? store.read_manifest_columns(*key, columns) : Expected<bool>(key.error());
      if (!read || !*read) {
        problems.push_back(
          {"manifest " + event.inputs, 0, !read ? read.error().message : std::string(k_manifest_missing)});
      } else {
        slot->second = columns.size() > 0;
        for (size_t i = 0; i < columns.size(); ++i) {
          consumed.push_back(raw_digest(columns.algorithm, columns.raw_digest(i)));
        }
      }
    }
    if (slot->second) {
      // Its edges are the product's event with the entry's digest and
      // path: the same time, tree and host.
      last_with_inputs = &event;
    }
  }
  // The manifests' edges come after the index's events (builds reads them
  // in that order), so the last of them names the tree and host.
  if (const Event* named = last_with_inputs != nullptr ? last_with_inputs : last) {
    summary.build_dir = named->build_dir;
    summary.host = named->host;
  }
  summary.produced = produced.size();
  std::sort(consumed.begin(), consumed.end());
  summary.consumed =
    static_cast<uint64_t>(std::unique(consumed.begin(), consumed.end()) - consumed.begin()) + consumed_unparsed.size();
  return summary;
}

std::string
encode_summaries(const std::vector<SummaryLine>& lines)
{
  std::string text(k_magic);
  for (const SummaryLine& line : lines) {
    const BuildSummary& s = line.summary;
    text += word(s.ref.project) + ' ' + word(s.ref.build) + ' ' + std::to_string(line.stamp.size) + ' '
            + std::to_string(line.stamp.inode) + ' ' + std::to_string(line.stamp.mtime_ns) + ' '
            + std::to_string(line.stamp.ctime_ns) + ' ' + std::to_string(s.produced) + ' ' + std::to_string(s.consumed)
            + ' ' + std::to_string(s.installed) + ' ' + word(s.first_time) + ' ' + word(s.last_time) + ' '
            + word(s.host) + ' ' + word(s.build_dir) + '\n';
  }
  text += "end " + std::to_string(lines.size()) + ' ' + util::hex64(fnv1a(text)) + '\n';
  return text;
}

Expected<std::vector<SummaryLine>>
parse_summaries(std::string_view text)
{
  if (!text.starts_with(k_magic)) {
    return Error{"not a builds summary (its first line is not \"" + std::string(k_magic.substr(0, k_magic.size() - 1))
                 + "\")"};
  }
  if (!text.ends_with('\n')) {
    return Error{"cut short (no end line)"};
  }
  const size_t end_at = text.rfind('\n', text.size() - 2);
  if (end_at == std::string_view::npos || end_at + 1 < k_magic.size()) {
    return Error{"cut short (no end line)"};
  }
  const std::string_view body = text.substr(0, end_at + 1);
  const auto end = util::split_spaces(text.substr(end_at + 1, text.size() - end_at - 2));
  size_t count = 0;
  if (end.size() != 3 || end[0] != "end" || !util::parse_number(end[1], count)) {
    return Error{"cut short (no end line)"};
  }
  if (end[2] != util::hex64(fnv1a(body))) {
    return Error{"damaged (its checksum does not match its lines)"};
  }
  std::vector<SummaryLine> lines;
  size_t at = k_magic.size();
  size_t number_of_line = 1;
  while (at < body.size()) {
    const size_t newline = body.find('\n', at);
    const std::string_view line = body.substr(at, newline - at);
    at = newline + 1;
    ++number_of_line;
    const auto words = util::split_spaces(line);
    SummaryLine parsed;
    BuildSummary& s = parsed.summary;
    if (words.size() != k_fields + 1 || !util::parse_number(words[2], parsed.stamp.size)
        || !util::parse_number(words[3], parsed.stamp.inode) || !util::parse_number(words[4], parsed.stamp.mtime_ns)
        || !util::parse_number(words[5], parsed.stamp.ctime_ns) || !util::parse_number(words[6], s.produced)
        || !util::parse_number(words[7], s.consumed) || !util::parse_number(words[8], s.installed)) {
      return Error{"line " + std::to_string(number_of_line) + " does not read"};
    }
    s.ref.project = layout::decode_component(words[0]);
    s.ref.build = layout::decode_component(words[1]);
    s.first_time = layout::decode_component(words[9]);
    s.last_time = layout::decode_component(words[10]);
    s.host = layout::decode_component(words[11]);
    s.build_dir = layout::decode_component(words[12]);
    lines.push_back(std::move(parsed));
  }
  if (lines.size() != count) {
    return Error{"damaged (its end line counts " + std::to_string(count) + " builds, it holds "
                 + std::to_string(lines.size()) + ")"};
  }
  return lines;
}

namespace {

// build_summaries(), and with `write` the file replaced when it was not up
// to date.
Expected<std::vector<BuildSummary>>
collect_summaries(const Store& store, const std::string& project, std::vector<LogProblem>& problems, bool write)
{
  std::vector<BuildSummary> out;
  if (!store.keeps_build_summaries()) {
    auto read = store.for_each_build(project, [&](const BuildRef& ref, LogContents& index) {
      problems.insert(problems.end(), index.problems.begin(), index.problems.end());
      out.push_back(summarize_build(store, ref, index.events, problems));
    });
    if (!read) {
      return read.error();
    }
    return out;
  }
  auto refs = store.list_builds();
  if (!refs) {
    return refs.error();
  }
  // What the file says, by build; nothing when it is absent or unusable
  // (fsck says which), and nothing at all for a store that keeps none.
  std::map<std::string, SummaryLine> known;
  if (auto text = store.read_build_summaries(); text && *text) {
    if (auto lines = parse_summaries(**text)) {
      for (SummaryLine& line : *lines) {
        known.emplace(key_of(line.summary.ref), std::move(line));
      }
    }
  }
  // Each build's place in the answer and the file, in the order listed:
  // its line when up to date, else a summary made from its index below.
  struct Slot
  {
    const BuildRef* ref = nullptr;
    std::optional<BuildStamp> stamp;
    std::optional<SummaryLine> line; // up to date
    bool wanted = false;
    bool had_line = false;
    std::optional<BuildSummary> made; // from its index
    bool clean = false;               // ... with no problem, so it gets a line
  };
  std::vector<Slot> slots;
  slots.reserve(refs->size());
  std::map<std::string, size_t> stale; // key_of(ref) -> slot
  bool changed = false;
  for (const BuildRef& ref : *refs) {
    Slot& slot = slots.emplace_back();
    slot.ref = &ref;
    slot.wanted = project.empty() || ref.project == project;
    // Stat before reading: an append that lands in between leaves a stamp
    // that no longer matches, so the next call reads the index again.
    slot.stamp = store.build_stamp(ref);
    auto found = known.find(key_of(ref));
    slot.had_line = found != known.end();
    if (slot.had_line && slot.stamp && found->second.stamp == *slot.stamp
        && same_build(found->second.summary.ref, ref)) {
      slot.line = std::move(found->second);
    } else if (slot.wanted) {
      stale.emplace(key_of(ref), slots.size() - 1);
    } else {
      changed = changed || slot.had_line; // a line that is out of date goes
    }
  }
  auto summarize = [&](Slot& slot, const LogContents& index) {
    const size_t before = problems.size();
    problems.insert(problems.end(), index.problems.begin(), index.problems.end());
    slot.made = summarize_build(store, *slot.ref, index.events, problems);
    slot.clean = problems.size() == before;
  };
  // Read together: a database answers them, and their manifests, in a
  // statement each rather than a round trip per build and manifest.
  std::vector<BuildRef> stale_refs;
  stale_refs.reserve(stale.size());
  for (const auto& [key, at] : stale) {
    stale_refs.push_back(*slots[at].ref);
  }
  auto read = store.for_each_build_of(stale_refs, [&](const BuildRef& ref, LogContents& index) {
    if (const auto it = stale.find(key_of(ref)); it != stale.end()) {
      summarize(slots[it->second], index);
    }
  });
  if (!read) {
    return read.error();
  }
  for (const auto& [key, at] : stale) {
    if (!slots[at].made) { // its index went since it was listed
      summarize(slots[at], LogContents{});
    }
  }
  std::vector<SummaryLine> file;
  for (Slot& slot : slots) {
    if (slot.line) {
      if (slot.wanted) {
        out.push_back(slot.line->summary);
      }
      file.push_back(std::move(*slot.line));
    } else if (slot.made) {
      if (slot.stamp && slot.clean) {
        file.push_back({*slot.made, *slot.stamp});
        changed = true;
      } else if (slot.had_line) {
        changed = true;
      }
      out.push_back(std::move(*slot.made));
    }
  }
  changed = changed || file.size() != known.size();
  if (write && changed) {
    if (auto written = store.write_build_summaries(encode_summaries(file)); !written) {
      return written.error();
    }
  }
  return out;
}

} // namespace

Expected<std::vector<BuildSummary>>
build_summaries(const Store& store, const std::string& project, std::vector<LogProblem>& problems)
{
  return collect_summaries(store, project, problems, false);
}

Expected<bool>
refresh_build_summaries(const Store& store)
{
  if (!store.keeps_build_summaries()) {
    return false;
  }
  std::vector<LogProblem> problems; // the builds they concern get no line; fsck names them
  auto done = collect_summaries(store, {}, problems, true);
  if (!done) {
    return done.error();
  }
  return true;
}

void
check_build_summaries(const Store& store, FsckReport& report, bool repair, const std::string& relative)
{
  if (!store.keeps_build_summaries()) {
    return;
  }
  auto text = store.read_build_summaries();
  if (!text) {
    report.findings.push_back({relative, 0, text.error().message, FsckKind::damage, {}});
    return;
  }
  auto refs = store.list_builds();
  if (!refs) {
    return; // the rest of fsck said why
  }
  std::vector<SummaryLine> fresh;
  bool stamped = false;
  auto summarize_one = [&](const BuildRef& ref, const BuildStamp& stamp, const LogContents& index) {
    std::vector<LogProblem> problems;
    if (!index.problems.empty()) {
      return;
    }
    BuildSummary summary = summarize_build(store, ref, index.events, problems);
    // An append that landed while it was read makes it no measure of a
    // line stamped as the index was before (and no line of its own).
    if (const auto after = store.build_stamp(ref); problems.empty() && after && *after == stamp) {
      fresh.push_back({std::move(summary), stamp});
    }
  };
  auto summarize_all = [&] {
    fresh.clear();
    // Every stamp before any index is read (a database reads them together).
    std::vector<BuildRef> stamped_refs;
    std::map<std::string, BuildStamp> stamps;
    for (const BuildRef& ref : *refs) {
      if (const auto stamp = store.build_stamp(ref)) {
        stamped_refs.push_back(ref);
        stamps.emplace(key_of(ref), *stamp);
      }
    }
    stamped = stamped || !stamped_refs.empty();
    std::set<std::string> read;
    auto all = store.for_each_build_of(stamped_refs, [&](const BuildRef& ref, LogContents& index) {
      if (const auto it = stamps.find(key_of(ref)); it != stamps.end() && read.insert(it->first).second) {
        summarize_one(ref, it->second, index);
      }
    });
    if (all) {
      return;
    }
    // One that does not read gets no line; the rest still do.
    for (const BuildRef& ref : stamped_refs) {
      if (!read.contains(key_of(ref))) {
        if (auto index = store.read_build(ref)) {
          summarize_one(ref, stamps.at(key_of(ref)), *index);
        }
      }
    }
  };
  size_t first_finding = report.findings.size();
  bool damaged = false;
  if (*text) {
    auto lines = parse_summaries(**text);
    if (!lines) {
      damaged = true;
      report.findings.push_back({relative, 0, lines.error().message, FsckKind::damage, {}});
    } else {
      summarize_all();
      std::map<std::string, const SummaryLine*> now;
      for (const SummaryLine& line : fresh) {
        now.emplace(key_of(line.summary.ref), &line);
      }
      size_t number_of_line = 1;
      for (const SummaryLine& line : *lines) {
        ++number_of_line;
        auto it = now.find(key_of(line.summary.ref));
        // Out of date (its index grew or was rewritten since, or is gone):
        // the next query refreshes it. Up to date but different: damage.
        if (it == now.end() || !(it->second->stamp == line.stamp)) {
          continue;
        }
        if (!(it->second->summary == line.summary)) {
          report.findings.push_back({relative,
                                     number_of_line,
                                     "the summary of build " + line.summary.ref.build + " of "
                                       + line.summary.ref.project + " does not match its build index",
                                     FsckKind::damage,
                                     {}});
        }
      }
    }
  }
  if (!repair) {
    return;
  }
  summarize_all(); // after the rest of the repair
  if (!stamped && !*text) {
    return;
  }
  // Nothing is lost by replacing it: every line is made from the indexes.
  const std::string repaired = damaged ? "replaced: " : "";
  auto written = store.write_build_summaries(encode_summaries(fresh));
  for (size_t f = first_finding; f < report.findings.size(); ++f) {
    if (written) {
      report.findings[f].repair = repaired + "written anew from " + std::to_string(fresh.size()) + " build indexes";
      ++report.repaired;
    } else {
      report.findings[f].problem += " (not repaired: " + written.error().message + ")";
    }
  }
}

// The directory store's file.

Expected<std::optional<std::string>>
DirectoryStore::read_build_summaries() const
{
  if (!m_root_fd) {
    return std::optional<std::string>();
  }
  return read_whole(std::string(k_build_summary_file));
}

Expected<bool>
DirectoryStore::write_build_summaries(const std::string& text) const
{
  return write_root_file(std::string(k_build_summary_file), text);
}

Expected<bool>
DirectoryStore::write_root_file(const std::string& name, std::string_view text) const
{
  if (!m_root_fd) {
    return false;
  }
  const std::string full = m_root + "/" + name;
  const std::string temp = layout::temp_name(name, layout::TempTag::create);
  const int root_fd = m_root_fd.get();
  util::Fd out(::openat(root_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (!out) {
    return Error{full + ": " + util::errno_text(errno)};
  }
  auto failed = [&](const std::string& why) {
    ::unlinkat(root_fd, temp.c_str(), 0);
    return Error{full + ": " + why};
  };
  // A group-shared store's summary stays writable by the group, as its
  // format file is readable by it.
  util::Fd format(::openat(root_fd, "fingerprint-store.json", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (format) {
    if (auto access = util::copy_access(format.get(), out.get()); !access) {
      return failed(access.error().message);
    }
  }
  if (auto written = util::write_all(out.get(), text); !written) {
    return failed(written.error().message);
  }
  if (::fsync(out.get()) != 0) {
    return failed(util::errno_text(errno));
  }
  if (::renameat(root_fd, temp.c_str(), root_fd, name.c_str()) != 0) {
    return failed(util::errno_text(errno));
  }
  (void)util::fsync_directory(root_fd);
  return true;
}

std::optional<BuildStamp>
DirectoryStore::build_stamp(const BuildRef& build) const
{
  if (!m_root_fd) {
    return std::nullopt;
  }
  struct stat st
  {};
  if (::fstatat(m_root_fd.get(), layout::build_index(build).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0
      || !S_ISREG(st.st_mode)) {
    return std::nullopt;
  }
  return BuildStamp{static_cast<uint64_t>(st.st_size),
                    static_cast<uint64_t>(st.st_ino),
                    static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                    static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec};
}

} // namespace fingerprint::store
