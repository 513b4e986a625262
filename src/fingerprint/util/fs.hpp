#pragma once

#include <fingerprint/util/expected.hpp>
#include <fingerprint/util/fd.hpp>

#include <string>
#include <string_view>
#include <sys/types.h>

namespace fingerprint::util {

// Opens directory `path`, creating it and its parents first when `create`.
// The path itself may be a symbolic link (a store may live elsewhere).
Expected<Fd> open_directory(const std::string& path, bool create);

// Opens the directory `relative` ("a/b/c") beneath `base_fd`, one component at
// a time with O_NOFOLLOW, so a component replaced by a symbolic link is refused
// rather than followed. With `create`, missing components are made; without,
// a missing component yields an Fd that is not valid (not an error).
Expected<Fd> open_directory_beneath(int base_fd, std::string_view relative, bool create);

// Makes a rename or a new entry in the directory durable.
Expected<void> fsync_directory(int dir_fd);

// True when `name` is usable as one path component: not empty, not "." or
// "..", no '/' and no NUL.
bool is_safe_component(std::string_view name);

// `path` made absolute and lexically normal, without resolving symlinks and
// without a trailing slash ("/a/b/." -> "/a/b").
std::string absolute_path(const std::string& path);

// The last component of `path`: "/a/b/libx.so" -> "libx.so".
std::string base_name(const std::string& path);

// Splits "a/b/c" into directory "a/b" and name "c".
std::pair<std::string_view, std::string_view> split_last(std::string_view relative);

} // namespace fingerprint::util
