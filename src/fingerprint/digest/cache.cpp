#include <fingerprint/digest/cache.hpp>
#include <fingerprint/digest/sigbus.hpp>
#include <fingerprint/util/fd.hpp>
#include <fingerprint/util/fs.hpp>
#include <fingerprint/util/text.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <unordered_map>

namespace fingerprint::digest {

namespace {

constexpr int64_t k_second_ns = 1'000'000'000;
constexpr long k_msdos_magic = 0x4d44;
constexpr long k_exfat_magic = 0x2011BAB0;
constexpr long k_nfs_magic = 0x6969;
constexpr long k_smb2_magic = static_cast<long>(0xFE534D42);
constexpr long k_cifs_magic = static_cast<long>(0xFF534D42);

} // namespace

DigestCache::DigestCache(std::string directory)
  : m_directory(std::move(directory))
  , m_tables(tables_of(m_directory))
{
}

std::string
DigestCache::default_directory()
{
  if (const char* dir = std::getenv("FINGERPRINT_CACHE_DIR")) {
    return dir;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/fingerprint";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/fingerprint";
  }
  return {};
}

bool
DigestCache::is_trustworthy(const FileIdentity& identity, int64_t read_at_ns, int64_t granularity_ns)
{
  const int64_t last_change = std::max(identity.mtime_ns, identity.ctime_ns);
  return read_at_ns - last_change >= granularity_ns;
}

int64_t
DigestCache::granularity_ns(int fd, const FileIdentity& identity)
{
  struct statfs fs
  {};
  if (::fstatfs(fd, &fs) == 0) {
    const auto type = static_cast<long>(fs.f_type);
    if (type == k_msdos_magic || type == k_exfat_magic) {
      return 2 * k_second_ns;
    }
    if (type == k_nfs_magic || type == k_smb2_magic || type == k_cifs_magic) {
      return k_second_ns; // the server's clock and granularity are unknown
    }
  }
  if (identity.mtime_ns % k_second_ns == 0 && identity.ctime_ns % k_second_ns == 0) {
    return k_second_ns;
  }
  timespec res{};
  if (::clock_getres(CLOCK_REALTIME_COARSE, &res) != 0) {
    return k_second_ns;
  }
  return std::max<int64_t>(int64_t{res.tv_sec} * k_second_ns + res.tv_nsec, 1);
}

// The table of one algorithm. Words of the header: magic, version, words a
// slot, slot count, digest bytes, three reserved. A slot's words: sequence
// (0 empty, odd while written, else even), device, inode, size, mtime ns,
// ctime ns, checksum, then the raw digest in whole words.
//
// Lookups read a key's window of slots with one pread: a link hook looks up
// a hundred inputs or more, and through the mapping each would fault in a
// page (and the pages around it) that the process's exit then unmaps, which
// cost more than the reads (docs/ARCHITECTURE.md, "Where a link hook's time
// goes"). Stores write through the mapping, made by the first store, whose
// atomic sequence words order writers among themselves; a read sees the
// same page cache and takes a slot only whole (even sequence, checksum).
struct DigestCache::Table
{
  util::Fd fd;
  uint64_t* words = nullptr; // mapped by the first store
  bool map_failed = false;
  size_t bytes = 0;
  size_t slot_words = 0;
  size_t digest_bytes = 0;
  dev_t device = 0; // the file opened, to tell whether its name still names it
  ino_t inode = 0;
  // Set when an access raised SIGBUS or a read came back short (the file
  // was cut short): the table is not touched again by this process.
  std::atomic<bool> broken{false};

  Table() = default;
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  ~Table()
  {
    if (words != nullptr) {
      ::munmap(words, bytes);
    }
  }

  // Where slot `index` (taken modulo the slot count) begins, in words.
  uint64_t
  slot_word(uint64_t index) const
  {
    return k_header_words + (index & (k_slot_count - 1)) * slot_words;
  }

  uint64_t*
  slot(uint64_t index) const
  {
    return words + slot_word(index);
  }

  off_t
  slot_offset(uint64_t index) const
  {
    return static_cast<off_t>(slot_word(index) * sizeof(uint64_t));
  }
};

// Each algorithm's table, opened at most once for looking up and once more
// for storing (a table made by this process's first store). Shared by the
// copies of a DigestCache and by the threads digesting in parallel.
struct DigestCache::Tables
{
  std::mutex mutex;
  std::array<std::unique_ptr<Table>, k_all_algorithms.size()> tables;
  std::array<bool, k_all_algorithms.size()> looked{};
  std::array<bool, k_all_algorithms.size()> created{};
};

namespace {

std::atomic<bool> g_remember{false}; // remember_in_process()

// A recorder's tables, by cache directory, kept open (and mapped, once
// stored into) from one hook to the next: opening and mapping a table and
// unmapping it again cost each hook seven system calls, the unmapping of a
// shared mapping the dearest of them.
std::mutex g_kept_mutex;
std::unordered_map<std::string, std::shared_ptr<DigestCache::Tables>> g_kept;

// Whether each table `tables` holds is still the file its name names: a
// cache directory removed or a table replaced (a damaged one is) since
// then is opened anew.
bool
still_current(DigestCache::Tables& tables, const std::string& directory)
{
  for (size_t index = 0; index < tables.tables.size(); ++index) {
    const auto& table = tables.tables[index];
    if (!table) {
      continue;
    }
    struct stat st
    {};
    const std::string path =
      directory + "/digests/" + std::string(algorithm_name(static_cast<Algorithm>(index))) + ".table";
    if (table->broken || ::stat(path.c_str(), &st) != 0 || st.st_dev != table->device || st.st_ino != table->inode) {
      return false;
    }
  }
  return true;
}

} // namespace

std::shared_ptr<DigestCache::Tables>
DigestCache::tables_of(const std::string& directory)
{
  if (!g_remember || directory.empty()) {
    return std::make_shared<Tables>();
  }
  std::lock_guard lock(g_kept_mutex);
  auto& kept = g_kept[directory];
  if (kept) {
    std::lock_guard tables_lock(kept->mutex);
    if (still_current(*kept, directory)) {
      // A table looked for and not found then may be there now.
      kept->looked.fill(false);
      kept->created.fill(false);
      return kept;
    }
  }
  kept = std::make_shared<Tables>();
  return kept;
}

namespace {

uint64_t
load(const uint64_t& word, std::memory_order order = std::memory_order_relaxed)
{
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(word)).load(order);
}

void
store_word(uint64_t& word, uint64_t value, std::memory_order order = std::memory_order_relaxed)
{
  std::atomic_ref<uint64_t>(word).store(value, order);
}

// SplitMix64's finalizer: every input bit moves every output bit.
uint64_t
mix(uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

size_t
digest_words(Algorithm algorithm)
{
  return (digest_size(algorithm) + 7) / 8;
}

// The most any algorithm needs: SHA-512 and BLAKE2b-512, 64 bytes.
constexpr size_t k_max_digest_words = k_max_digest_size / sizeof(uint64_t);

size_t
table_bytes(Algorithm algorithm)
{
  return (DigestCache::k_header_words
          + DigestCache::k_slot_count * (DigestCache::k_key_words + digest_words(algorithm)))
         * sizeof(uint64_t);
}

// A table's header as this version writes it.
std::array<uint64_t, DigestCache::k_header_words>
header_of(Algorithm algorithm)
{
  return {DigestCache::k_magic,
          DigestCache::k_version,
          DigestCache::k_key_words + digest_words(algorithm),
          DigestCache::k_slot_count,
          digest_size(algorithm),
          0,
          0,
          0};
}

// Writes a new, empty table under a temporary name in `dir_fd` and puts it
// in place: linked when `replace` is false (a table another process made
// meanwhile wins), renamed over a damaged one otherwise. A table that
// exists is therefore always whole, header and size.
void
make_table(int dir_fd, const std::string& name, Algorithm algorithm, bool replace)
{
  const std::string temp = name + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(util::now_ns());
  util::Fd fd(::openat(dir_fd, temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) {
    return;
  }
  const auto header = header_of(algorithm);
  // Allocated, not sparse: a write into a hole of a shared mapping on a
  // full filesystem raises SIGBUS; the table is refused here instead.
  const bool made = ::posix_fallocate(fd.get(), 0, static_cast<off_t>(table_bytes(algorithm))) == 0
                    && ::pwrite(fd.get(), header.data(), sizeof(header), 0) == static_cast<ssize_t>(sizeof(header));
  fd.reset();
  if (made) {
    if (replace) {
      ::renameat(dir_fd, temp.c_str(), dir_fd, name.c_str());
    } else {
      ::linkat(dir_fd, temp.c_str(), dir_fd, name.c_str(), 0);
    }
  }
  ::unlinkat(dir_fd, temp.c_str(), 0);
}

enum class Opened
{
  opened,
  absent,
  unusable, // another user's, not a regular file, or damaged
  damaged,  // this user's, of the wrong size or header: may be replaced
};

Opened
open_table(int dir_fd, const std::string& name, Algorithm algorithm, DigestCache::Table& table)
{
  util::Fd fd(::openat(dir_fd, name.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    return errno == ENOENT ? Opened::absent : Opened::unusable;
  }
  // A table is taken for the files' digests unread, so it must be this
  // user's own: one another user wrote (a cache directory shared through an
  // inherited $FINGERPRINT_CACHE_DIR) could name any digest for our files.
  struct stat st
  {};
  static const uid_t k_euid = ::geteuid();
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != k_euid) {
    return Opened::unusable;
  }
  const size_t bytes = table_bytes(algorithm);
  if (static_cast<uint64_t>(st.st_size) != bytes) {
    return Opened::damaged;
  }
  const auto header = header_of(algorithm);
  std::array<uint64_t, DigestCache::k_header_words> read{};
  if (::pread(fd.get(), read.data(), sizeof(read), 0) != static_cast<ssize_t>(sizeof(read)) || read != header) {
    return Opened::damaged;
  }
  table.fd = std::move(fd);
  table.device = st.st_dev;
  table.inode = st.st_ino;
  table.bytes = bytes;
  table.slot_words = header[2];
  table.digest_bytes = header[4];
  return Opened::opened;
}

// Maps an opened table for storing into it.
bool
map_table(DigestCache::Table& table)
{
  void* map = ::mmap(nullptr, table.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, table.fd.get(), 0);
  if (map == MAP_FAILED) {
    table.map_failed = true;
    return false;
  }
  table.words = static_cast<uint64_t*>(map);
  return true;
}

} // namespace

uint64_t
DigestCache::home_slot(const FileIdentity& identity)
{
  return mix(identity.device * 0x9e3779b97f4a7c15ULL ^ identity.inode) & (k_slot_count - 1);
}

uint64_t
DigestCache::checksum(const FileIdentity& identity, const uint64_t* digest, size_t count)
{
  uint64_t h = mix(identity.device ^ 0x6669'6e67'6572'7072ULL);
  for (const uint64_t word : {identity.inode,
                              identity.size,
                              static_cast<uint64_t>(identity.mtime_ns),
                              static_cast<uint64_t>(identity.ctime_ns)}) {
    h = mix(h ^ word);
  }
  for (size_t i = 0; i < count; ++i) {
    h = mix(h ^ digest[i]);
  }
  return h | 1; // never 0, the word of a slot never written
}

std::string
DigestCache::table_path(Algorithm algorithm) const
{
  return m_directory + "/digests/" + std::string(algorithm_name(algorithm)) + ".table";
}

DigestCache::Table*
DigestCache::table(Algorithm algorithm, bool create) const
{
  const auto index = static_cast<size_t>(algorithm);
  std::lock_guard lock(m_tables->mutex);
  auto& opened_table = m_tables->tables[index];
  // A store needs the table mapped; a lookup only open.
  const auto usable = [&]() -> Table* {
    Table* table = opened_table.get();
    if (table != nullptr && create && table->words == nullptr && (table->map_failed || !map_table(*table))) {
      return nullptr;
    }
    return table;
  };
  if (opened_table || (create ? m_tables->created[index] : m_tables->looked[index])) {
    return usable();
  }
  m_tables->looked[index] = true;
  if (create) {
    m_tables->created[index] = true;
  }
  const std::string path = table_path(algorithm);
  const auto [dir, name] = util::split_last(path);
  // Private (0700, the table 0600): a cache is one user's, never shared, so
  // another user's runs neither write into it nor read from it.
  auto dir_fd = util::open_directory(std::string(dir), create, 0700);
  if (!dir_fd || !dir_fd->valid()) {
    return nullptr; // an unwritable cache only costs time
  }
  const std::string file(name);
  auto table = std::make_unique<Table>();
  Opened opened = open_table(dir_fd->get(), file, algorithm, *table);
  if (create && (opened == Opened::absent || opened == Opened::damaged)) {
    make_table(dir_fd->get(), file, algorithm, opened == Opened::damaged);
    table = std::make_unique<Table>();
    opened = open_table(dir_fd->get(), file, algorithm, *table);
  }
  if (opened == Opened::opened) {
    opened_table = std::move(table);
  }
  return usable();
}

namespace {

// What a process that serves many hooks (the recorder) remembers of the
// table: the digests it found or stored, by cache directory, algorithm and
// key, so that an input every link reads costs its stat alone. The key is
// the table's own (ctime is in it: no write leaves it as it was), so a
// remembered digest is exactly as good as the slot it came from.
struct MemoKey
{
  FileIdentity identity;
  Algorithm algorithm;
  bool operator==(const MemoKey&) const = default;
};

struct MemoKeyHash
{
  size_t
  operator()(const MemoKey& key) const
  {
    return static_cast<size_t>(DigestCache::home_slot(key.identity) ^ (static_cast<uint64_t>(key.algorithm) << 56));
  }
};

constexpr size_t k_memo_entries = 1 << 18; // about 40 MB at most; forgotten whole when full
std::mutex g_memo_mutex;
std::unordered_map<std::string, std::unordered_map<MemoKey, std::string, MemoKeyHash>> g_memo;
size_t g_memo_size = 0;

std::optional<std::string>
remembered(const std::string& directory, Algorithm algorithm, const FileIdentity& identity)
{
  std::lock_guard lock(g_memo_mutex);
  const auto of_directory = g_memo.find(directory);
  if (of_directory == g_memo.end()) {
    return std::nullopt;
  }
  const auto found = of_directory->second.find({identity, algorithm});
  return found == of_directory->second.end() ? std::nullopt : std::optional(found->second);
}

void
remember(const std::string& directory, Algorithm algorithm, const FileIdentity& identity, const std::string& hex)
{
  std::lock_guard lock(g_memo_mutex);
  if (g_memo_size >= k_memo_entries) {
    g_memo.clear();
    g_memo_size = 0;
  }
  g_memo_size += g_memo[directory].insert_or_assign({identity, algorithm}, hex).second ? 1 : 0;
}

} // namespace

void
DigestCache::remember_in_process(bool on)
{
  g_remember = on;
}

std::optional<std::string>
DigestCache::lookup(Algorithm algorithm, const FileIdentity& identity) const
{
  if (!enabled()) {
    return std::nullopt;
  }
  if (g_remember) {
    if (auto hex = remembered(m_directory, algorithm, identity)) {
      return hex;
    }
    auto found = lookup_table(algorithm, identity);
    if (found) {
      remember(m_directory, algorithm, identity, *found);
    }
    return found;
  }
  return lookup_table(algorithm, identity);
}

std::optional<std::string>
DigestCache::lookup_table(Algorithm algorithm, const FileIdentity& identity) const
{
  Table* table = this->table(algorithm, false);
  if (table == nullptr || table->broken) {
    return std::nullopt;
  }
  const size_t words = digest_words(algorithm);
  // The key's window of slots, in one read (two where it wraps around the
  // table's end).
  std::array<uint64_t, k_probe*(k_key_words + k_max_digest_words)> window;
  const uint64_t home = home_slot(identity) & (k_slot_count - 1);
  const uint64_t before_end = std::min<uint64_t>(k_probe, k_slot_count - home);
  const size_t slot_bytes = table->slot_words * sizeof(uint64_t);
  const auto read_slots = [&](uint64_t first, uint64_t count, uint64_t* into) {
    const auto want = static_cast<ssize_t>(count * slot_bytes);
    return ::pread(table->fd.get(), into, static_cast<size_t>(want), table->slot_offset(first)) == want;
  };
  if (table->slot_words > k_key_words + k_max_digest_words || !read_slots(home, before_end, window.data())
      || (before_end < k_probe
          && !read_slots(0, k_probe - before_end, window.data() + before_end * table->slot_words))) {
    table->broken = true; // cut short under us, or not a table this version reads
    return std::nullopt;
  }
  uint64_t digest[k_max_digest_words];
  bool found = false;
  for (uint64_t probe = 0; probe < k_probe && !found; ++probe) {
    const uint64_t* slot = window.data() + probe * table->slot_words;
    const uint64_t sequence = slot[0];
    if (sequence == 0) {
      break; // never written: the key was never stored past here
    }
    if (sequence % 2 != 0) {
      continue; // being written, or its writer died
    }
    FileIdentity entry;
    entry.device = slot[1];
    entry.inode = slot[2];
    entry.size = slot[3];
    entry.mtime_ns = static_cast<int64_t>(slot[4]);
    entry.ctime_ns = static_cast<int64_t>(slot[5]);
    std::copy_n(slot + k_key_words, words, digest);
    // A slot read while a writer was at it mixes two entries: its checksum
    // does not hold.
    found = entry == identity && slot[6] == checksum(entry, digest, words);
  }
  if (!found) {
    return std::nullopt;
  }
  return util::to_hex(reinterpret_cast<const unsigned char*>(digest), digest_size(algorithm));
}

void
DigestCache::store(Algorithm algorithm,
                   const FileIdentity& identity,
                   const std::string& hex,
                   int64_t read_at_ns,
                   int64_t granularity_ns) const
{
  if (!enabled() || !is_trustworthy(identity, read_at_ns, granularity_ns)) {
    return;
  }
  const size_t words = digest_words(algorithm);
  uint64_t digest[k_max_digest_words] = {};
  auto* bytes = reinterpret_cast<unsigned char*>(digest);
  if (hex.size() != 2 * digest_size(algorithm) || !util::from_hex(hex, bytes)) {
    return;
  }
  if (g_remember) {
    remember(m_directory, algorithm, identity, hex);
  }
  Table* table = this->table(algorithm, true);
  if (table == nullptr || table->broken) {
    return;
  }
  const bool written = run_guarded([&] { write_slot(*table, identity, digest, words); });
  if (!written) {
    table->broken = true;
  }
}

void
DigestCache::write_slot(Table& table, const FileIdentity& identity, const uint64_t* digest, size_t words)
{
  // The slot: this file's own (an older version of it), else the first
  // never written, else one of the window chosen by the key.
  const uint64_t home = home_slot(identity);
  uint64_t* chosen = nullptr;
  for (uint64_t probe = 0; probe < k_probe && chosen == nullptr; ++probe) {
    uint64_t* slot = table.slot(home + probe);
    const uint64_t sequence = load(slot[0], std::memory_order_acquire);
    if (sequence == 0 || (sequence % 2 == 0 && load(slot[1]) == identity.device && load(slot[2]) == identity.inode)) {
      chosen = slot;
    }
  }
  if (chosen == nullptr) {
    chosen = table.slot(home + (static_cast<uint64_t>(identity.mtime_ns) ^ identity.size) % k_probe);
  }
  uint64_t sequence = load(chosen[0]);
  if (sequence % 2 != 0
      || !std::atomic_ref<uint64_t>(chosen[0]).compare_exchange_strong(
        sequence, sequence + 1, std::memory_order_acquire, std::memory_order_relaxed)) {
    return; // another writer has it: its entry is as good as ours
  }
  std::atomic_thread_fence(std::memory_order_release);
  store_word(chosen[1], identity.device);
  store_word(chosen[2], identity.inode);
  store_word(chosen[3], identity.size);
  store_word(chosen[4], static_cast<uint64_t>(identity.mtime_ns));
  store_word(chosen[5], static_cast<uint64_t>(identity.ctime_ns));
  store_word(chosen[6], checksum(identity, digest, words));
  for (size_t i = 0; i < words; ++i) {
    store_word(chosen[k_key_words + i], digest[i]);
  }
  store_word(chosen[0], sequence + 2, std::memory_order_release);
}

} // namespace fingerprint::digest
