# Private part of Fingerprint.cmake: keeping a PostgreSQL password out of
# the build files. FINGERPRINT_DIR is written into CMakeCache.txt and into
# every hook's command line (build.ninja, rules.ninja or the Makefiles, all
# world-readable by default), and `ps` shows that command line to every user
# of the machine while the hook runs; so a URL holding a password is refused
# at configure time, and libpq is left to find the password itself.

include_guard(GLOBAL)

# `key` with its %XX escapes of printable ASCII decoded, in one pass as
# libpq's conninfo_uri_decode does (`%2577` is `%77`, not `w`).
function(_fingerprint_percent_decode out key)
  set(decoded "${key}")
  string(REGEX MATCHALL "%[2-7][0-9A-Fa-f]" escapes "${key}")
  list(REMOVE_DUPLICATES escapes)
  foreach(escape IN LISTS escapes)
    string(SUBSTRING "${escape}" 1 2 hex)
    math(EXPR code "0x${hex}")
    string(ASCII ${code} char)
    string(REPLACE "${escape}" "${char}" decoded "${decoded}")
  endforeach()
  set(${out} "${decoded}" PARENT_SCOPE)
endfunction()

# The query `query` (what follows the ?) of a URL: whether a pair whose key,
# percent-decoded and in any case, is `password` has a non-empty value, in
# `out_found`; the query with those values as *** in `out_masked`, and without
# those pairs in `out_without`.
function(_fingerprint_query_password query out_found out_masked out_without)
  set(found FALSE)
  set(masked "")
  set(without "")
  set(masked_sep "")
  set(without_sep "")
  set(more TRUE)
  while(more)
    string(FIND "${query}" "&" amp)
    if(amp LESS 0)
      set(pair "${query}")
      set(more FALSE)
    else()
      string(SUBSTRING "${query}" 0 ${amp} pair)
      math(EXPR amp "${amp} + 1")
      string(SUBSTRING "${query}" ${amp} -1 query)
    endif()
    string(FIND "${pair}" "=" eq)
    if(eq GREATER 0)
      string(SUBSTRING "${pair}" 0 ${eq} key)
      math(EXPR eq "${eq} + 1")
      string(SUBSTRING "${pair}" ${eq} -1 value)
      _fingerprint_percent_decode(key "${key}")
      string(TOLOWER "${key}" key)
      if(key STREQUAL "password" AND NOT value STREQUAL "")
        set(found TRUE)
        string(SUBSTRING "${pair}" 0 ${eq} pair)
        string(APPEND masked "${masked_sep}${pair}***")
        set(masked_sep "&")
        continue()
      endif()
    endif()
    string(APPEND masked "${masked_sep}${pair}")
    string(APPEND without "${without_sep}${pair}")
    set(masked_sep "&")
    set(without_sep "&")
  endwhile()
  set(${out_found} ${found} PARENT_SCOPE)
  set(${out_masked} "${masked}" PARENT_SCOPE)
  set(${out_without} "${without}" PARENT_SCOPE)
endfunction()

# Whether `url` (a postgresql:// or postgres:// URL; anything else is a
# directory and has none) holds a non-empty password, in `out_found`; the URL
# with each password replaced by *** (for messages) in `out_masked`, and with
# each one removed (what to configure instead) in `out_without`.
#
# The user part is read as libpq reads it (fe-connect.c,
# conninfo_uri_parse_options): it exists when an @ comes before any /, and its
# password is what follows its first `:`. An unencoded @ inside the password
# (`user:p@ss@host`) ends libpq's user part early, so the part masked runs on
# to the last @ before the first / or ? (the runner's mask). An @ or : after
# a / (in the database name, or in a query after it) is never a password; a
# %3A is not a `:`. The query is what follows the first ? (where the runner
# masks `password=`), see _fingerprint_query_password.
# An empty password (`user:@host`, `?password=`) is none: libpq then reads
# ~/.pgpass as if none had been given, and there is nothing to hide.
function(_fingerprint_url_password url out_found out_masked out_without)
  set(found FALSE)
  set(masked "${url}")
  set(without "${url}")
  if(url MATCHES "^(postgres(ql)?://)(.*)$")
    set(scheme "${CMAKE_MATCH_1}")
    set(rest "${CMAKE_MATCH_3}")
    set(rest_masked "${rest}")

    string(REGEX MATCH "^[^@/]*@" user_part "${rest}")
    if(user_part)
      string(LENGTH "${user_part}" at) # one past libpq's @
      string(REGEX MATCH "^[^/?]*" authority "${rest}")
      string(FIND "${authority}" "@" last_at REVERSE)
      if(last_at GREATER_EQUAL at)
        math(EXPR at "${last_at} + 1")
      endif()
      string(SUBSTRING "${rest}" 0 ${at} user_part)
      string(FIND "${user_part}" ":" colon)
      math(EXPR password_length "${at} - ${colon} - 2")
      if(colon GREATER_EQUAL 0 AND password_length GREATER 0)
        set(found TRUE)
        string(SUBSTRING "${rest}" 0 ${colon} user)
        string(SUBSTRING "${rest}" ${at} -1 after)
        set(rest_masked "${user}:***@${after}")
        set(rest "${user}@${after}")
      endif()
    endif()

    # Masked and removed separately: a ? inside a masked password moves the
    # query's start.
    string(FIND "${rest_masked}" "?" question)
    if(question GREATER_EQUAL 0)
      string(SUBSTRING "${rest_masked}" 0 ${question} head)
      math(EXPR question "${question} + 1")
      string(SUBSTRING "${rest_masked}" ${question} -1 query)
      _fingerprint_query_password("${query}" query_found query_masked query_without)
      set(rest_masked "${head}?${query_masked}")
    endif()
    string(FIND "${rest}" "?" question)
    if(question GREATER_EQUAL 0)
      string(SUBSTRING "${rest}" 0 ${question} head)
      math(EXPR question "${question} + 1")
      string(SUBSTRING "${rest}" ${question} -1 query)
      _fingerprint_query_password("${query}" query_found query_masked query_without)
      if(query_found)
        set(found TRUE)
      endif()
      set(rest "${head}")
      if(NOT query_without STREQUAL "")
        string(APPEND rest "?${query_without}")
      endif()
    endif()
    set(masked "${scheme}${rest_masked}")
    set(without "${scheme}${rest}")
  endif()
  set(${out_found} ${found} PARENT_SCOPE)
  set(${out_masked} "${masked}" PARENT_SCOPE)
  set(${out_without} "${without}" PARENT_SCOPE)
endfunction()

# Refuses a FINGERPRINT_DIR (cache entry, or a variable the project set)
# that holds a password. CMake saves CMakeCache.txt even when the configure
# fails, so the cache entry is masked first: the password is gone from the
# build tree, a configure with a fixed -DFINGERPRINT_DIR works, and one
# without it is refused again rather than falling back to the default store.
function(_fingerprint_refuse_password)
  list(APPEND CMAKE_MESSAGE_CONTEXT fingerprint)
  _fingerprint_url_password("${FINGERPRINT_DIR}" found masked without)
  set(cache_note "")
  if(DEFINED CACHE{FINGERPRINT_DIR})
    _fingerprint_url_password("$CACHE{FINGERPRINT_DIR}" cache_found cache_masked cache_without)
    if(cache_found)
      # Also when a variable of the project hides the entry: the password
      # was given, and would stay in CMakeCache.txt.
      set_property(CACHE FINGERPRINT_DIR PROPERTY VALUE "${cache_masked}")
      set(cache_note " CMakeCache.txt now holds the URL masked.")
      if(NOT found)
        set(found TRUE)
        set(masked "${cache_masked}")
        set(without "${cache_without}")
      endif()
    endif()
  endif()
  if(found)
    # The URLs on lines of their own, indented: CMake wraps the rest.
    message(FATAL_ERROR "FINGERPRINT_DIR holds a password:\n"
      "  ${masked}\n"
      "Refused: the build files would show it (CMakeCache.txt, and every hook's command line in "
      "build.ninja or the Makefiles, readable by anyone who can read the build tree), and so "
      "would the process list: `ps` shows a running hook's command line to every user of the "
      "machine.${cache_note} Give FINGERPRINT_DIR the URL without it:\n"
      "  -DFINGERPRINT_DIR=${without}\n"
      "and let libpq find the password, as it does for every hook: a line "
      "`host:port:database:user:password` in ~/.pgpass (mode 0600, else libpq ignores it) or in "
      "the file the PGPASSFILE environment variable names, or a service in ~/.pg_service.conf "
      "(or the file PGSERVICEFILE names) with a `password=` line, chosen by PGSERVICE=<service> "
      "or by ?service=<service> in the URL.")
  endif()
endfunction()

# The store as configure names it and the build uses it: a relative
# FINGERPRINT_DIR made absolute against the directory cmake runs in (as
# CMake makes a relative PATH given with -D; the source directory would put
# `-DFINGERPRINT_DIR=relstore` inside the source tree, the build directory
# inside the build tree), and FINGERPRINT_DIR of the environment kept in the
# cache when the cache names none, so that a build run without it in the
# environment still writes where configure said. A URL is kept as it is;
# _fingerprint_refuse_password looks at it next.
function(_fingerprint_settle_store)
  set(dir "${FINGERPRINT_DIR}")
  set(from_environment FALSE)
  if(dir STREQUAL "" AND NOT "$ENV{FINGERPRINT_DIR}" STREQUAL "")
    set(dir "$ENV{FINGERPRINT_DIR}")
    set(from_environment TRUE)
  endif()
  if(dir STREQUAL "")
    return()
  endif()
  if(NOT dir MATCHES "^postgres(ql)?://" AND NOT IS_ABSOLUTE "${dir}")
    # execute_process runs in cmake's own working directory.
    execute_process(COMMAND pwd OUTPUT_VARIABLE cwd OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE failed)
    if(failed OR cwd STREQUAL "")
      set(cwd "$ENV{PWD}")
    endif()
    cmake_path(ABSOLUTE_PATH dir BASE_DIRECTORY "${cwd}" NORMALIZE)
    string(REGEX REPLACE "(.)/$" "\\1" dir "${dir}")
  endif()
  if(from_environment OR NOT dir STREQUAL "${FINGERPRINT_DIR}")
    if(from_environment AND NOT dir MATCHES "^postgres(ql)?://")
      message(STATUS "Fingerprint store from the environment's FINGERPRINT_DIR, kept in the cache: ${dir}")
    endif()
    set_property(CACHE FINGERPRINT_DIR PROPERTY VALUE "${dir}")
  endif()
endfunction()
