#include <fingerprint/cmd/command.hpp>
#include <fingerprint/postgresql/postgres_store.hpp>

// The runner with the PostgreSQL store: what `fingerprint` runs when a call
// names a database (runner/main.cpp).
int
main(int argc, char** argv)
{
  fingerprint::store::enable_postgresql();
  return fingerprint::cmd::fingerprint_main(argc, argv);
}
