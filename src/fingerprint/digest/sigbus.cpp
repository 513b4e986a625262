#include <fingerprint/digest/sigbus.hpp>

#include <csignal>
#include <mutex>

namespace fingerprint::digest {

thread_local sigjmp_buf* t_sigbus_jump = nullptr;

namespace {

void
on_sigbus(int signal_number, siginfo_t*, void*)
{
  if (t_sigbus_jump != nullptr) {
    siglongjmp(*t_sigbus_jump, 1);
  }
  ::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

} // namespace

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

void
unblock_sigbus()
{
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGBUS);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

} // namespace fingerprint::digest
