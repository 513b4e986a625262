#pragma once

#include <fingerprint/util/expected.hpp>
#include <fingerprint/util/fd.hpp>

#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace fingerprint::util {

// Opens directory `path`, creating it and its parents first when `create`.
// The path itself may be a symbolic link (a store may live elsewhere).
// Directories it makes get `mode` less the umask. The default leaves the
// choice to the umask, which is what keeps a group-shared store shared: in a
// setgid directory the kernel gives a new one the parent's group and setgid
// bit, and umask 002 its group write bit. A private place (the digest cache)
// passes 0700.
Expected<Fd> open_directory(const std::string& path, bool create, mode_t mode = 0777);

// Opens the directory `relative` ("a/b/c") beneath `base_fd`, one component at
// a time with O_NOFOLLOW, so a component replaced by a symbolic link is refused
// rather than followed. With `create`, missing components are made; without,
// a missing component yields an Fd that is not valid (not an error).
// New directories get 0777 less the umask, as with open_directory.
Expected<Fd> open_directory_beneath(int base_fd, std::string_view relative, bool create);

// Gives the file `to_fd` the permission bits of the file `from_fd`, and its
// group where this user may (a member of it): a file rewritten through a
// temporary one and renamed over the original keeps the access the original
// had, rather than taking the rewriter's umask. In a group-shared store, a
// log another user rebuilt with umask 022 would otherwise be closed to the
// group. The group is best effort (in a setgid directory it is right
// already); the mode is not.
Expected<void> copy_access(int from_fd, int to_fd);

// Makes a rename or a new entry in the directory durable.
Expected<void> fsync_directory(int dir_fd);

// True when `name` is usable as one path component: not empty, not "." or
// "..", no '/' and no NUL.
bool is_safe_component(std::string_view name);

// `path` made absolute and lexically normal, without resolving symlinks and
// without a trailing slash ("/a/b/." -> "/a/b").
std::string absolute_path(const std::string& path);

// The names in directory `dir` but "." and "..", sorted; none when it
// cannot be listed.
std::vector<std::string> sorted_entries(const std::string& dir);

// The last component of `path`: "/a/b/libx.so" -> "libx.so".
std::string base_name(const std::string& path);

// Splits "a/b/c" into directory "a/b" and name "c".
std::pair<std::string_view, std::string_view> split_last(std::string_view relative);

} // namespace fingerprint::util
