#include <fingerprint/cmd/command.hpp>

int
main(int argc, char** argv)
{
  return fingerprint::cmd::fingerprint_main(argc, argv);
}
