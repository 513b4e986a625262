#pragma once

#include <fingerprint/util/expected.hpp>

#include <string>
#include <string_view>

namespace fingerprint::store {

// The directory store's layout version, in <store>/fingerprint-store.json.
// A reader accepts [k_oldest_supported_format, k_current_format]; a newer
// store is refused with a clear error rather than misread.
//
// Format 2 adds manifests/ and inputs/ (layout.hpp) and the optional
// `inputs` field of produced events. It only adds: a format-1 store reads
// as it is (its consumed events are link edges), and the first write to it
// rewrites its format file to say 2 (upgrade_format_file), so that a
// runner that knows format 1 only refuses a store it would misread.
//
// Format 3 adds inputs/<algorithm>/journal (input_journal.hpp): the reverse
// index's lines of the newest manifests, which a runner of format 2 would
// not read. A format-2 store reads as it is and is raised to 3 likewise.
//
// Format 4 adds builds.recent (path_index.hpp): every write of events names
// its build there, which a runner of format 3 would not do, and the index
// by path would then miss its builds. A format-3 store reads as it is (it
// has no paths.index until gc writes one) and is raised to 4 likewise.
inline constexpr int k_oldest_supported_format = 1;
inline constexpr int k_current_format = 4;

inline constexpr std::string_view k_format_file = "fingerprint-store.json";

// The format file's text for a store created now.
std::string make_format_file(int64_t created_ns);

// Checks a format file's text; `path` names it in errors. Returns its format.
Expected<int> check_format_file(std::string_view text, const std::string& path);

// The text of an older format file (checked) raised to k_current_format:
// its other fields (when the store was created) kept, the layout named
// anew, the time of the upgrade added.
std::string upgrade_format_file(std::string_view text, int64_t now_ns);

} // namespace fingerprint::store
