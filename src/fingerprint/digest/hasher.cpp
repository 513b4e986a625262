// SHA256_Init and friends are deprecated in OpenSSL 3.0 in favour of EVP,
// whose fetch this avoids (Hasher::m_sha256); they remain supported in 3.x.
// Defined before any OpenSSL header is read.
#define OPENSSL_SUPPRESS_DEPRECATED

#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/digest/sigbus.hpp>
#include <fingerprint/util/text.hpp>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

namespace fingerprint::digest {

namespace {

const char*
file_type_name(mode_t mode)
{
  if (S_ISDIR(mode)) {
    return "is a directory";
  }
  if (S_ISFIFO(mode)) {
    return "not a regular file (a FIFO)";
  }
  if (S_ISCHR(mode)) {
    return "not a regular file (a character device)";
  }
  if (S_ISBLK(mode)) {
    return "not a regular file (a block device)";
  }
  if (S_ISSOCK(mode)) {
    return "not a regular file (a socket)";
  }
  return "not a regular file";
}

Error
open_error(const std::string& path, int open_errno)
{
  if (open_errno == ENOENT) {
    struct stat st
    {};
    Error error = ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)
                    ? make_error(path, "dangling symbolic link (its target does not exist)")
                    : make_error(path, util::errno_text(open_errno));
    error.missing = true;
    return error;
  }
  if (open_errno == ELOOP) {
    return make_error(path, "symbolic link loop (too many levels of symbolic links)");
  }
  return make_error(path, util::errno_text(open_errno));
}

} // namespace

FileIdentity
FileIdentity::from_stat(const struct stat& st)
{
  FileIdentity id;
  id.device = st.st_dev;
  id.inode = st.st_ino;
  id.size = static_cast<uint64_t>(st.st_size);
  id.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
  id.ctime_ns = int64_t{st.st_ctim.tv_sec} * 1'000'000'000 + st.st_ctim.tv_nsec;
  return id;
}

Expected<OpenFile>
open_regular_file(const std::string& path)
{
  OpenFile file;
  // O_NONBLOCK: opening a FIFO must not wait for a writer. The type check
  // follows on the descriptor itself, so no race can swap the file between
  // the check and the read.
  file.fd.reset(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!file.fd) {
    return open_error(path, errno);
  }
  if (::fstat(file.fd.get(), &file.st) != 0) {
    return make_error(path, util::errno_text(errno));
  }
  if (!S_ISREG(file.st.st_mode)) {
    return make_error(path, file_type_name(file.st.st_mode));
  }
  return file;
}

void
Hasher::CtxDeleter::operator()(EVP_MD_CTX* ctx) const
{
  EVP_MD_CTX_free(ctx);
}

Hasher::Hasher(Algorithm algorithm, ReadStrategy strategy)
  : m_algorithm(algorithm)
  , m_strategy(strategy)
{
  if (algorithm == Algorithm::sha256) {
    m_sha256 = std::make_unique<SHA256_CTX>();
  } else {
    m_ctx.reset(EVP_MD_CTX_new());
  }
  install_sigbus_handler();
}

Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

Expected<void>
Hasher::begin()
{
  const bool started = m_sha256 ? SHA256_Init(m_sha256.get()) == 1
                                : m_ctx && EVP_DigestInit_ex2(m_ctx.get(), evp_md(m_algorithm), nullptr) == 1;
  if (!started) {
    return Error{"OpenSSL could not start a digest"};
  }
  return {};
}

bool
Hasher::update(const void* data, size_t size)
{
  return m_sha256 ? SHA256_Update(m_sha256.get(), data, size) == 1 : EVP_DigestUpdate(m_ctx.get(), data, size) == 1;
}

Expected<std::string>
Hasher::finish()
{
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = SHA256_DIGEST_LENGTH;
  const bool finished =
    m_sha256 ? SHA256_Final(out, m_sha256.get()) == 1 : EVP_DigestFinal_ex(m_ctx.get(), out, &length) == 1;
  if (!finished) {
    return Error{"OpenSSL could not finish a digest"};
  }
  return util::to_hex(out, length);
}

Expected<std::string>
Hasher::digest_bytes(std::string_view bytes)
{
  if (auto ok = begin(); !ok) {
    return ok.error();
  }
  if (!update(bytes.data(), bytes.size())) {
    return Error{"OpenSSL digest update failed"};
  }
  return finish();
}

namespace {

// The second thread of ReadStrategy::ahead. It populates the page tables of
// the chunks ahead of the hasher (MADV_POPULATE_READ: one call maps a chunk
// that would otherwise take a fault per 16 pages), at most k_ahead_window
// chunks ahead, and unmaps the chunks the hasher is done with, so that the
// TLB flush happens here too. `prepared` and `hashed` count bytes from the
// start of the mapping; each side waits on the other's counter. The thread
// is woken every k_ahead_wake_every chunks; the hasher, which rarely waits,
// is woken at every chunk it may be waiting for.
class MappingAhead
{
public:
  MappingAhead(unsigned char* map, uint64_t size)
    : m_map(map)
    , m_size(size)
    , m_thread([this] { run(); })
  {
  }

  MappingAhead(const MappingAhead&) = delete;
  MappingAhead& operator=(const MappingAhead&) = delete;

  ~MappingAhead() { finish(); }

  // Blocks until at least `end` bytes are prepared (or preparing stopped:
  // the hasher then faults the rest in itself).
  void
  wait_prepared(uint64_t end)
  {
    uint64_t now = m_prepared.load(std::memory_order_acquire);
    while (now < end) {
      m_prepared.wait(now, std::memory_order_acquire);
      now = m_prepared.load(std::memory_order_acquire);
    }
  }

  // Publishes the hasher's progress; wakes the thread only every
  // k_ahead_wake_every chunks, at the end and when stopping.
  void
  set_hashed(uint64_t end)
  {
    m_hashed.store(end, std::memory_order_release);
    if (end % (k_ahead_wake_every * k_ahead_chunk) == 0 || end >= m_size) {
      m_hashed.notify_one();
    }
  }

  // Stops the thread; the caller unmaps from unmapped() to the end.
  void
  finish()
  {
    if (m_thread.joinable()) {
      set_hashed(k_stopped);
      m_thread.join();
    }
  }

  uint64_t
  unmapped() const
  {
    return m_unmapped;
  }

private:
  void
  run()
  {
    uint64_t prepared = 0;
    bool populating = true;
    while (true) {
      const uint64_t hashed = m_hashed.load(std::memory_order_acquire);
      if (hashed == k_stopped) {
        break;
      }
      release_below(hashed);
      if (prepared < m_size && prepared < hashed + k_ahead_window * k_ahead_chunk) {
        const uint64_t length = std::min(k_ahead_chunk, m_size - prepared);
        // EINVAL: a kernel before 5.14, or a mapping it cannot populate;
        // EFAULT: the file was truncated. Either way the hasher faults the
        // rest in itself, and a truncation raises SIGBUS there.
        if (populating && ::madvise(m_map + prepared, length, k_madv_populate_read) != 0 && errno != EINTR
            && errno != EAGAIN) {
          populating = false;
        }
        prepared = populating ? prepared + length : m_size;
        m_prepared.store(prepared, std::memory_order_release);
        m_prepared.notify_one();
        continue;
      }
      if (hashed >= m_size) {
        break;
      }
      m_hashed.wait(hashed, std::memory_order_acquire);
    }
  }

  // Unmaps whole batches of chunks below `hashed`, a few at a time: each
  // munmap interrupts the hashing core once to flush its TLB.
  void
  release_below(uint64_t hashed)
  {
    constexpr uint64_t k_batch = 16 * k_ahead_chunk;
    const uint64_t end = hashed / k_batch * k_batch;
    if (end > m_unmapped) {
      ::munmap(m_map + m_unmapped, end - m_unmapped);
      m_unmapped = end;
    }
  }

  static constexpr int k_madv_populate_read = 22; // MADV_POPULATE_READ, Linux 5.14
  static constexpr uint64_t k_stopped = UINT64_MAX;

  unsigned char* m_map;
  uint64_t m_size;
  uint64_t m_unmapped = 0; // the thread's own until it is joined
  std::atomic<uint64_t> m_prepared{0};
  std::atomic<uint64_t> m_hashed{0};
  std::thread m_thread;
};

} // namespace

Expected<bool>
Hasher::update_by_mmap(int fd, uint64_t size, bool ahead)
{
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) {
    return false; // some filesystems (FUSE, /proc) cannot map: read instead
  }
  auto* bytes = static_cast<unsigned char*>(map);
  ::madvise(map, size, MADV_SEQUENTIAL);
  std::optional<MappingAhead> helper;
  if (ahead) {
    try {
      helper.emplace(bytes, size);
    } catch (const std::system_error&) {
      // No thread to be had (a process or memory limit): the hasher maps
      // the pages in itself, as ReadStrategy::mmap does.
    }
  }
  sigjmp_buf jump;
  // Volatile: read after a siglongjmp back into this frame.
  volatile bool truncated = false;
  volatile bool updated = true;
  volatile uint64_t hashed = 0;
  if (sigsetjmp(jump, 1) == 0) {
    t_sigbus_jump = &jump;
    if (!helper) {
      updated = update(map, size);
      hashed = size;
    }
    while (helper && hashed < size && updated) {
      const uint64_t end = std::min(size, hashed + k_ahead_chunk);
      helper->wait_prepared(end);
      updated = update(bytes + hashed, end - hashed);
      hashed = end;
      helper->set_hashed(end);
    }
  } else {
    truncated = true;
  }
  t_sigbus_jump = nullptr;
  uint64_t unmapped = 0;
  if (helper) {
    helper->finish();
    unmapped = helper->unmapped();
  }
  ::munmap(bytes + unmapped, size - unmapped);
  if (truncated) {
    return Error{"file was truncated while being read"};
  }
  if (!updated) {
    return Error{"OpenSSL digest update failed"};
  }
  return true;
}

Expected<void>
Hasher::update_by_read(int fd, uint64_t* size_out)
{
  if (m_buffer.empty()) {
    m_buffer.resize(k_read_buffer_size);
  }
  uint64_t total = 0;
  while (true) {
    const ssize_t n = ::read(fd, m_buffer.data(), m_buffer.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      return Error{util::errno_text(errno)};
    }
    if (n == 0) {
      break;
    }
    if (!update(m_buffer.data(), static_cast<size_t>(n))) {
      return Error{"OpenSSL digest update failed"};
    }
    total += static_cast<uint64_t>(n);
  }
  if (size_out != nullptr) {
    *size_out = total;
  }
  return {};
}

Expected<std::string>
Hasher::digest_open_file(const OpenFile& file)
{
  if (auto ok = begin(); !ok) {
    return ok.error();
  }
  const auto size = static_cast<uint64_t>(file.st.st_size);
  const bool ahead =
    m_strategy == ReadStrategy::ahead || (m_strategy == ReadStrategy::automatic && size >= k_ahead_threshold);
  if (size > 0 && (ahead || m_strategy == ReadStrategy::mmap)) {
    auto mapped = update_by_mmap(file.fd.get(), size, ahead);
    if (!mapped) {
      return mapped.error();
    }
    if (*mapped) {
      return finish();
    }
  }
  ::posix_fadvise(file.fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  uint64_t read_size = 0;
  if (auto ok = update_by_read(file.fd.get(), &read_size); !ok) {
    return ok.error();
  }
  if (read_size != size) {
    return Error{"file changed size while being read"};
  }
  return finish();
}

Expected<std::string>
Hasher::digest_stream(int fd, uint64_t* size_out)
{
  if (auto ok = begin(); !ok) {
    return ok.error();
  }
  if (auto ok = update_by_read(fd, size_out); !ok) {
    return ok.error();
  }
  return finish();
}

} // namespace fingerprint::digest
