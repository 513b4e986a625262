file(READ "${IN}" version)
string(STRIP "${version}" version)
file(WRITE "${OUT}" "#pragma once\n#define MID_VERSION \"${version}\"\n")
