#include "query_client.hpp"

#include <fingerprint/cmd/launch.hpp>

#include "recorder.hpp"
#include "recorder_protocol.hpp"
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <string_view>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

extern char** environ;

namespace fingerprint::recorder {

namespace {

// The socket of the query server of `server`, as fingerprint-launch names
// the recorder's (runner/fingerprint_launch.cpp): this user's, and a
// rebuilt or reinstalled binary's own.
bool
server_address(const std::string& server, std::string& name, sockaddr_un& address, socklen_t& size)
{
  struct stat st
  {};
  if (::stat(server.c_str(), &st) != 0) {
    return false;
  }
  uint64_t hash = fnv1a(k_fnv_basis, server.data(), server.size());
  const int64_t identity[] = {static_cast<int64_t>(st.st_dev),
                              static_cast<int64_t>(st.st_ino),
                              st.st_size,
                              st.st_mtim.tv_sec,
                              st.st_mtim.tv_nsec};
  hash = fnv1a(hash, identity, sizeof identity);
  char text[96];
  const int length = std::snprintf(text,
                                   sizeof text,
                                   "%s%u-%016llx",
                                   k_query_name_prefix,
                                   static_cast<unsigned>(::geteuid()),
                                   static_cast<unsigned long long>(hash));
  name.assign(text, static_cast<size_t>(length));
  address = {};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, name.data(), name.size()); // abstract: sun_path[0] is NUL
  size = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return true;
}

// The request: its header with the standard streams and the working
// directory, then argv and the environment as NUL-terminated strings.
bool
send_request(int fd, int argc, char** argv, int cwd)
{
  std::string strings;
  uint32_t envc = 0;
  for (int i = 0; i < argc; ++i) {
    strings.append(argv[i], std::strlen(argv[i]) + 1);
  }
  for (char** variable = environ; *variable != nullptr; ++variable, ++envc) {
    strings.append(*variable, std::strlen(*variable) + 1);
  }
  Request request{k_magic, 0, static_cast<uint32_t>(argc), envc, static_cast<uint32_t>(strings.size())};
  const mode_t mask = ::umask(0);
  ::umask(mask);
  request.umask = static_cast<uint32_t>(mask);
  const int fds[k_request_fds] = {0, 1, 2, cwd};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  iovec part{&request, sizeof request};
  msghdr message{};
  message.msg_iov = &part;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(header), fds, sizeof fds);
  ssize_t sent = 0;
  do {
    sent = ::sendmsg(fd, &message, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    return false;
  }
  if (static_cast<size_t>(sent) < sizeof request
      && !send_all(fd, reinterpret_cast<const char*>(&request) + sent, sizeof request - static_cast<size_t>(sent))) {
    return false;
  }
  return send_all(fd, strings.data(), strings.size());
}

} // namespace

bool
is_served_query(int argc, char** argv)
{
  const char* command = command_of(argc, argv);
  if (command == nullptr) {
    return false;
  }
  const std::string_view name = command;
  return name == "show" || name == "consumers" || name == "why" || name == "history";
}

std::optional<int>
ask_query_server(const std::string& server, int argc, char** argv)
{
  if (const char* wanted = std::getenv("FINGERPRINT_RECORDER");
      wanted != nullptr
      && (std::strcmp(wanted, "off") == 0 || std::strcmp(wanted, "OFF") == 0 || std::strcmp(wanted, "0") == 0)) {
    return std::nullopt;
  }
  if (!is_served_query(argc, argv)) {
    return std::nullopt;
  }
  std::string name;
  sockaddr_un address{};
  socklen_t address_size = 0;
  if (!server_address(server, name, address, address_size)) {
    return std::nullopt; // the caller's exec says what is wrong with it
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return std::nullopt;
  }
  int connected = 0;
  do {
    connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), address_size);
  } while (connected != 0 && errno == EINTR);
  if (connected != 0) {
    const bool nobody = errno == ECONNREFUSED;
    ::close(fd);
    if (nobody) {
      // Started for the next queries; this one runs as it always did.
      cmd::start_resident(server, "fingerprint-postgresql", "--serve-queries", name);
    }
    return std::nullopt;
  }
  // Abstract names belong to no one: the server must be this user's.
  ucred peer{};
  socklen_t peer_size = sizeof peer;
  const int cwd = ::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  Reply reply{};
  const bool answered = ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_size) == 0 && peer.uid == ::geteuid()
                        && cwd >= 0 && send_request(fd, argc, argv, cwd) && read_all(fd, &reply, sizeof reply);
  if (cwd >= 0) {
    ::close(cwd);
  }
  ::close(fd);
  // A server that declined, or ended before it ran the query (a call is
  // answered only when it is done): the caller runs it.
  if (!answered || reply.action != k_exit) {
    return std::nullopt;
  }
  return static_cast<int>(reply.value);
}

} // namespace fingerprint::recorder
