#pragma once

#include <csetjmp>

namespace fingerprint::digest {

// A file truncated by another process while it is mapped raises SIGBUS on
// the next access to a page past its new end. A thread that reads a mapping
// points t_sigbus_jump at a sigsetjmp buffer; the handler jumps back there
// rather than letting the whole runner die. With no buffer set the signal
// does what it would have done without the handler.
extern thread_local sigjmp_buf* t_sigbus_jump;

// Installs the handler, once per process.
void install_sigbus_handler();

// After a jump back from a buffer set with sigsetjmp(buffer, 0) (which
// saves no signal mask, and so costs no system call): SIGBUS is still
// blocked, as it is inside its handler; this unblocks it.
void unblock_sigbus();

// Runs `body`, which reads a mapping, and answers false when it was cut
// short by SIGBUS. `body` must hold nothing that needs destroying while it
// touches the mapping (the jump back runs no destructors).
template <class Body>
bool
run_guarded(Body&& body)
{
  install_sigbus_handler();
  sigjmp_buf jump;
  sigjmp_buf* const outer = t_sigbus_jump;
  if (sigsetjmp(jump, 0) != 0) {
    t_sigbus_jump = outer;
    unblock_sigbus();
    return false;
  }
  t_sigbus_jump = &jump;
  body();
  t_sigbus_jump = outer;
  return true;
}

} // namespace fingerprint::digest
