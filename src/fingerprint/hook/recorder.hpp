#pragma once

#include <fingerprint/digest/algorithm.hpp>
#include <fingerprint/util/expected.hpp>

#include <functional>
#include <string>
#include <vector>

namespace fingerprint::hook {

// One build step's outputs and inputs, to be recorded.
struct RecordRequest
{
  std::string store_root;
  std::string project;
  std::string version;
  std::string target;
  std::string build_id;  // never empty: see build_id.hpp
  std::string build_dir; // absolute
  std::vector<std::string> produced;
  std::vector<std::string> consumed;
  digest::Algorithm algorithm = digest::k_default_algorithm;
};

// Digests every file first (through the digest cache), then appends one
// `produced` event per product and one `consumed` event per (input,
// product). One unreadable file means nothing is appended: each such file
// is passed to `on_file_error`, and the result is an error. Returns the
// number of events appended. `on_warning` hears about damaged logs met while
// appending (the events are appended regardless).
Expected<size_t> record(const RecordRequest& request,
                        const std::function<void(const Error&)>& on_file_error,
                        const std::function<void(const std::string&)>& on_warning = {});

// The host name, as events carry it.
std::string host_name();

} // namespace fingerprint::hook
