# Writes OUT from table.inc, which it reads without any command line naming
# it, and says so in DEPFILE, as code generators with --depfile do.
include("${CMAKE_CURRENT_LIST_DIR}/table.inc")
file(WRITE "${OUT}" "#pragma once\n#define MID_TABLE ${MID_TABLE}\n")
file(WRITE "${DEPFILE}" "${OUT}: ${CMAKE_CURRENT_LIST_DIR}/table.inc\n")
