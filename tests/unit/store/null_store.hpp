#pragma once

// A store that holds nothing and refuses every change: the base of the
// unit tests' fakes, which override only what they exercise.

#include <fingerprint/store/store.hpp>

#include <string>
#include <vector>

namespace fingerprint::test {

using namespace fingerprint::store;

class NullStore : public store::Store
{
public:
  explicit NullStore(std::string location)
    : m_location(std::move(location))
  {
  }
  const std::string&
  location() const override
  {
    return m_location;
  }
  Expected<void>
  append(const std::vector<Event>&, Warnings*) const override
  {
    return Error{"unused"};
  }
  Expected<void>
  append_link(const DigestKey&, const Event&, Warnings*) const override
  {
    return Error{"unused"};
  }
  Expected<LogContents>
  read_log(const DigestKey&) const override
  {
    return LogContents{};
  }
  Expected<std::string>
  read_raw_log(const DigestKey&) const override
  {
    return std::string();
  }
  Expected<std::vector<BuildRef>>
  list_builds() const override
  {
    return std::vector<BuildRef>{};
  }
  Expected<LogContents>
  read_build(const BuildRef&) const override
  {
    return LogContents{};
  }
  Expected<CompactionResult>
  remove_events(const DigestKey&, const EventFilter&, bool) const override
  {
    return Error{"unused"};
  }
  Expected<CompactionResult>
  remove_build_events(const BuildRef&, const EventFilter&, bool) const override
  {
    return Error{"unused"};
  }
  Expected<FsckReport>
  fsck(const FsckOptions&) const override
  {
    return Error{"unused"};
  }

private:
  std::string m_location;
};

} // namespace fingerprint::test
