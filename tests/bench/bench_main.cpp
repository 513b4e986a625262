// fingerprint_bench: see CMakeLists.txt beside this file for how to run it.

#include <benchmark/benchmark.h>

#include "bench_support.hpp"
#include <cstdio>
#include <exception>

int
main(int argc, char** argv)
{
  try {
    // Declared first so it outlives every benchmark that uses its files, and
    // removed on every normal exit, including a failed benchmark.
    fingerprint::bench::ScratchDir scratch;
    fingerprint::bench::register_digest_benchmarks(scratch);
    fingerprint::bench::register_store_benchmarks(scratch);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
      return 1;
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fingerprint_bench: %s\n", e.what());
    return 1;
  }
}
