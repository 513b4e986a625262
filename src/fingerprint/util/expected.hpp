#pragma once

// A value or an error message. std::expected would do, but libstdc++ 12 only
// offers it to compilers with C++23 concepts, and the fuzz targets are built
// with clang 14, which has not.

#include <string>
#include <utility>
#include <variant>

namespace fingerprint {

struct Error
{
  std::string message;
  // What failed was out of reach (a database server down, unreachable or
  // too busy to answer in time), not wrong: the same call may succeed
  // later, so a hook journals it (store/spool.hpp) rather than lose it.
  bool unavailable = false;
  // What was given is malformed or ambiguous (a digest of the wrong
  // length, a prefix that several digests begin with): a usage error.
  bool usage = false;
  // The file named does not exist (ENOENT), which for some inputs is
  // said, not fatal (hook::Input::may_be_gone).
  bool missing = false;
};

// Builds an Error; `what` is usually a path or a name, `why` the reason.
inline Error
make_error(std::string what, std::string_view why)
{
  if (what.empty()) {
    return Error{std::string(why)};
  }
  what += ": ";
  what += why;
  return Error{std::move(what)};
}

template <typename T>
class [[nodiscard]] Expected
{
public:
  Expected(T value)
    : m_data(std::in_place_index<0>, std::move(value))
  {
  }
  Expected(Error error)
    : m_data(std::in_place_index<1>, std::move(error))
  {
  }

  explicit operator bool() const { return m_data.index() == 0; }
  bool
  has_value() const
  {
    return m_data.index() == 0;
  }

  T&
  value() &
  {
    return std::get<0>(m_data);
  }
  const T&
  value() const&
  {
    return std::get<0>(m_data);
  }
  T&&
  value() &&
  {
    return std::get<0>(std::move(m_data));
  }
  T&
  operator*() &
  {
    return value();
  }
  const T&
  operator*() const&
  {
    return value();
  }
  T*
  operator->()
  {
    return &value();
  }
  const T*
  operator->() const
  {
    return &value();
  }

  const Error&
  error() const
  {
    return std::get<1>(m_data);
  }

private:
  std::variant<T, Error> m_data;
};

template <>
class [[nodiscard]] Expected<void>
{
public:
  Expected() = default;
  Expected(Error error)
    : m_error(std::move(error))
    , m_ok(false)
  {
  }

  explicit operator bool() const { return m_ok; }
  bool
  has_value() const
  {
    return m_ok;
  }
  const Error&
  error() const
  {
    return m_error;
  }

private:
  Error m_error;
  bool m_ok = true;
};

} // namespace fingerprint
