# Writes `RUNNER help --format FORMAT` to OUTPUT (runner/CMakeLists.txt):
# through a temporary file, so a failed run leaves no half page behind.
execute_process(COMMAND "${RUNNER}" help --format "${FORMAT}"
  OUTPUT_FILE "${OUTPUT}.tmp"
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  file(REMOVE "${OUTPUT}.tmp")
  message(FATAL_ERROR "${RUNNER} help --format ${FORMAT} failed: ${status}")
endif()
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
