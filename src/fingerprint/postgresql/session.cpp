#include <fingerprint/postgresql/session.hpp>

namespace fingerprint::store::postgresql {

std::string
one_line(std::string text)
{
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
    text.pop_back();
  }
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at)) {
    const size_t end = text.find_first_not_of(" \t\n", at);
    text.replace(at, (end == std::string::npos ? text.size() : end) - at, "; ");
  }
  return text;
}

std::string
text_array(const std::vector<std::string>& values)
{
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    out += i == 0 ? "\"" : ",\"";
    for (char c : values[i]) {
      if (c == '"' || c == '\\') {
        out += '\\';
      }
      out += c;
    }
    out += '"';
  }
  out += '}';
  return out;
}

std::string
bool_array(const std::vector<bool>& values)
{
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    out += i == 0 ? "" : ",";
    out += values[i] ? 't' : 'f';
  }
  out += '}';
  return out;
}

Expected<Result>
Session::run(std::string_view what, const char* sql, const std::vector<std::string>& params) const
{
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& param : params) {
    values.push_back(param.c_str());
  }
  Result result(
    values.empty()
      ? PQexec(m_conn, sql)
      : PQexecParams(m_conn, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0),
    &PQclear);
  const auto status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
    return result;
  }
  const char* state = result ? PQresultErrorField(result.get(), PG_DIAG_SQLSTATE) : nullptr;
  m_last_state = state != nullptr ? state : "";
  return Error{m_location + ": " + std::string(what) + ": "
               + one_line(result ? PQresultErrorMessage(result.get()) : PQerrorMessage(m_conn))};
}

} // namespace fingerprint::store::postgresql
