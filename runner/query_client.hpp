#pragma once

// The runner's side of the query server: fingerprint-postgresql, resident,
// answers the per-artifact queries of a PostgreSQL store over a UNIX
// socket, keeping its connections to the database between calls
// (docs/ARCHITECTURE.md, "The query server"). The protocol is the
// recorder's (recorder_protocol.hpp): the runner sends its argv,
// environment, standard streams and working directory, and the server
// answers with the exit status.

#include <optional>
#include <string>

namespace fingerprint::recorder {

// Whether the query server answers this call: show, consumers, why and
// history, which read a few rows; every other command runs in a process of
// its own.
bool is_served_query(int argc, char** argv);

// Asks the query server of `server` (the path of fingerprint-postgresql)
// to run this call, and returns its exit status. Returns nothing when no
// server took the call (none runs: one is started for the next calls; it
// declined; it ended without an answer), and the caller runs `server`
// itself. $FINGERPRINT_RECORDER=off leaves the server out, as it does the
// recorder.
std::optional<int> ask_query_server(const std::string& server, int argc, char** argv);

} // namespace fingerprint::recorder
