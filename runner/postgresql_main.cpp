#include <fingerprint/cmd/command.hpp>
#include <fingerprint/postgresql/postgres_store.hpp>

#include "query_client.hpp"
#include "recorder.hpp"
#include <cstdio>
#include <cstring>
#include <unistd.h>

// The runner with the PostgreSQL store: what `fingerprint` runs when a call
// names a database (runner/main.cpp), and, resident, the query server that
// answers the runner's per-artifact queries on connections it keeps
// (runner/query_client.hpp).
int
main(int argc, char** argv)
{
  fingerprint::store::enable_postgresql();
  // Started by a query that found none.
  if (argc == 3 && std::strcmp(argv[1], "--serve-queries") == 0) {
    fingerprint::store::PostgresStore::keep_connections(true);
    const int status = fingerprint::recorder::serve(argv[2],
                                                    {fingerprint::recorder::is_served_query,
                                                     fingerprint::cmd::fingerprint_main,
                                                     fingerprint::recorder::write_cpu_line});
    std::fflush(nullptr);
    ::_exit(status); // no exit handlers while its threads end
  }
  return fingerprint::cmd::fingerprint_main(argc, argv);
}
