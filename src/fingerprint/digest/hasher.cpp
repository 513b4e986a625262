#include <fingerprint/digest/hasher.hpp>
#include <fingerprint/util/text.hpp>

#include <openssl/evp.h>

#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <fcntl.h>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace fingerprint::digest {

namespace {

// A file truncated by another process while it is mapped raises SIGBUS on
// the next access. The digesting thread jumps back out and reports it rather
// than letting the whole runner die.
thread_local sigjmp_buf* t_sigbus_jump = nullptr;

void
on_sigbus(int signal_number, siginfo_t*, void*)
{
  if (t_sigbus_jump != nullptr) {
    siglongjmp(*t_sigbus_jump, 1);
  }
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

void
install_sigbus_handler()
{
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action
    {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGBUS, &action, nullptr);
  });
}

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
    if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      return make_error(path, "dangling symbolic link (its target does not exist)");
    }
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
  , m_ctx(EVP_MD_CTX_new())
{
  install_sigbus_handler();
}

Hasher::~Hasher() = default;
Hasher::Hasher(Hasher&&) noexcept = default;
Hasher& Hasher::operator=(Hasher&&) noexcept = default;

Expected<void>
Hasher::begin()
{
  if (!m_ctx || EVP_DigestInit_ex2(m_ctx.get(), evp_md(m_algorithm), nullptr) != 1) {
    return Error{"OpenSSL could not start a digest"};
  }
  return {};
}

Expected<std::string>
Hasher::finish()
{
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(m_ctx.get(), out, &length) != 1) {
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
  if (EVP_DigestUpdate(m_ctx.get(), bytes.data(), bytes.size()) != 1) {
    return Error{"OpenSSL digest update failed"};
  }
  return finish();
}

Expected<bool>
Hasher::update_by_mmap(int fd, uint64_t size)
{
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED) {
    return false; // some filesystems (FUSE, /proc) cannot map: read instead
  }
  ::madvise(map, size, MADV_SEQUENTIAL);
  sigjmp_buf jump;
  bool truncated = false;
  bool updated = false;
  if (sigsetjmp(jump, 1) == 0) {
    t_sigbus_jump = &jump;
    updated = EVP_DigestUpdate(m_ctx.get(), map, size) == 1;
  } else {
    truncated = true;
  }
  t_sigbus_jump = nullptr;
  ::munmap(map, size);
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
    if (EVP_DigestUpdate(m_ctx.get(), m_buffer.data(), static_cast<size_t>(n)) != 1) {
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
  const bool use_mmap =
    size > 0
    && (m_strategy == ReadStrategy::mmap || (m_strategy == ReadStrategy::automatic && size >= k_mmap_threshold));
  if (use_mmap) {
    auto mapped = update_by_mmap(file.fd.get(), size);
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
