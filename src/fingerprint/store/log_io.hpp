#pragma once

// The directory store's file primitives, shared by the store and by fsck.
// Not part of the store's interface.

#include <fingerprint/store/directory_store.hpp>
#include <fingerprint/util/expected.hpp>
#include <fingerprint/util/fd.hpp>

#include <string>
#include <string_view>
#include <sys/types.h>

namespace fingerprint::store::detail {

// Opens `relative` below the store root with O_NOFOLLOW on every component;
// a file that does not exist yields an invalid Fd unless `flags` has O_CREAT.
Expected<util::Fd> open_below(int root_fd, const std::string& relative, int flags, bool create_parents);

// flock(), retrying on EINTR.
bool lock(int fd, int operation);

// Whether `fd` is still the file called `name` in `dir_fd` (a compaction or
// a repair may have renamed a new log over it while we waited for the lock).
bool still_linked(int dir_fd, std::string_view name, int fd);

// Splits a log into events and problems; `file` names it in problems.
void parse_lines(std::string_view text, const std::string& file, LogContents& out);

} // namespace fingerprint::store::detail
