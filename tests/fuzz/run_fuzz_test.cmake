# One fuzz.<name> test: the fuzzer over its seed corpus, then a bounded run
# from it with a fixed seed. New inputs go to a fresh working corpus in the
# build tree (libFuzzer writes only to the first corpus directory it is
# given), so the source tree is never written and every run starts alike.
# libFuzzer exits non-zero on a crash, a sanitizer report, a leak or an
# input slower than -timeout; the input is kept in WORK/artifacts.
foreach(_variable FUZZER SEEDS DICT WORK RUNS)
  if(NOT DEFINED ${_variable})
    message(FATAL_ERROR "run_fuzz_test.cmake: -D ${_variable}=... is required")
  endif()
endforeach()

if(NOT EXISTS "${FUZZER}")
  message(FATAL_ERROR "${FUZZER} is not built (cmake --build <dir> --target fingerprint_fuzzers)")
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus" "${WORK}/artifacts")
execute_process(
  COMMAND "${FUZZER}"
    -seed=1 -runs=${RUNS} -max_total_time=60 -timeout=10 -rss_limit_mb=2048
    "-dict=${DICT}" "-artifact_prefix=${WORK}/artifacts/"
    -print_final_stats=1 -close_fd_mask=3
    "${WORK}/corpus" "${SEEDS}"
  RESULT_VARIABLE _result)
if(NOT _result EQUAL 0)
  file(GLOB _artifacts "${WORK}/artifacts/*")
  if(_artifacts)
    message(FATAL_ERROR "${FUZZER} failed (${_result}) on ${_artifacts}\nReproduce: ${FUZZER} <that file>")
  endif()
  message(FATAL_ERROR "${FUZZER} failed (${_result}); see its output above")
endif()
