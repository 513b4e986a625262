#[=======================================================================[.rst:
Fingerprint
-----------

Records, for every target a build links, which build produced its file and
which files it consumed, in a fingerprint store shared by every project on
the machine. Query it with the ``fingerprint`` runner (``fingerprint show``,
``fingerprint consumers --transitive``, ``fingerprint verify``).

Three ways to use it:

.. code-block:: cmake

  find_package(Fingerprint REQUIRED)   # an installed Fingerprint
  include(Fingerprint)

  list(APPEND CMAKE_MODULE_PATH <checkout>/cmake-modules)   # a checkout
  include(Fingerprint)

or, for a project that does not mention Fingerprint at all::

  cmake -DCMAKE_PROJECT_TOP_LEVEL_INCLUDES=<prefix>/lib/cmake/Fingerprint/Fingerprint.cmake ...

At the end of the top-level directory every executable, static, shared and
module library (in any subdirectory) gets a link launcher (``RULE_LAUNCH_LINK``)
that runs its link as usual and then ``fingerprint launch`` records the
produced file and what it read, each with its role: ``link``, the linker's own
dependency file (``-Wl,--dependency-file=``, detected at configure time) or
else the libraries on the link line; ``compile``, the sources and headers its
compiles read, from the compilers' dependency files as the build tool keeps
them (Ninja's deps log ``.ninja_deps``, the Makefile generators' ``.d`` files),
read at link time: no compile runs anything more; ``interface``, for a static library,
the files of its ``INTERFACE_LINK_LIBRARIES`` closure; ``declared``, what
:command:`fingerprint_target` names. Custom commands run through
``fingerprint generate`` (``RULE_LAUNCH_CUSTOM``), which records the file each
generates from what its command line names, its ``DEPENDS`` and what its
``DEPFILE`` lists (read from the generated build files). Every ``install()`` ed file is recorded at install time as an
``installed`` event linked to the build-tree or source file it came from,
after every install rule has run, whatever the policy ``CMP0082``.

Cache variables:

``FINGERPRINT_DIR``
  The store: a directory, or a PostgreSQL URL such as
  ``postgresql://fingerprint@db.example:5432/fingerprint``. A URL holding a
  password (``postgresql://user:<password>@...``, ``?password=<password>``)
  is a ``FATAL_ERROR``: it would be in ``CMakeCache.txt``, in the build files
  and, through every hook's command line, in ``ps``. The cache entry is then
  masked; give the URL without the password, and the password to libpq in
  ``~/.pgpass``, the file ``PGPASSFILE`` names, or the service ``PGSERVICE``
  names. A relative directory is taken from the directory cmake runs in (as
  CMake takes a relative ``PATH`` given with ``-D``) and kept absolute. Empty,
  and ``FINGERPRINT_DIR`` set in the environment at configure time: that one,
  kept in the cache, so that the build writes where configure said. Empty
  (the default) otherwise: the runner's own default at build time,
  ``${XDG_DATA_HOME:-$HOME/.local/share}/fingerprint``.

``FINGERPRINT_AUTO``
  ``ON`` (default): fingerprint every buildable target. ``OFF``: only those
  named in :command:`fingerprint_target`.

``FINGERPRINT_REQUIRED``
  ``OFF`` (default): a hook that cannot record prints one warning and the
  build goes on. ``ON``: the build step fails.

``FINGERPRINT_RUNNER``
  The ``fingerprint`` executable. Found next to an installed package, built
  in the same tree when this repository is a subproject, or on ``PATH``.

``FINGERPRINT_RECORDER``
  ``ON`` (default): a link hook starts ``fingerprint-launch`` (installed
  beside the runner; x86-64 Linux), a program without a C library that
  hands the link to one resident runner process, the recorder, which
  records it from a warm copy of itself; the first hook of a build starts
  the recorder, which ends after a minute without links
  (``FINGERPRINT_RECORDER_IDLE`` seconds). ``OFF``, or no
  ``fingerprint-launch``: every link hook starts the runner; so do the
  hooks of a build run with ``FINGERPRINT_RECORDER=off`` in its
  environment.

``FINGERPRINT_PROVENANCE``
  ``ON`` (default): the first hook of each build records the build's
  provenance once: the source tree's git commit, branch, whether it is
  dirty and its remote (credentials stripped), CMake's version and
  generator, the build type, each language's compiler id, version and path,
  the flags every target starts from (and their digest), and the CI run's
  URL. ``OFF``: none of it.

``FINGERPRINT_COMPILE_LAUNCHER``
  ``OFF`` (default): what the compiles read is taken at link time from the
  build tool's own records. ``ON``: every compile also runs through
  ``fingerprint compile`` (``<LANG>_COMPILER_LAUNCHER``, with a launcher the
  target has, such as ccache, inside it), which keeps its dependency file
  next to the object. Other generators always get it.

``FINGERPRINT_ALGORITHM``
  ``sha256`` (default), ``sha512``, ``sha1``, ``md5`` or ``blake2b512``.

Build ids: ``$FINGERPRINT_BUILD_ID`` at build time, else the CI's run id
(GitHub Actions, GitLab, Jenkins, Buildkite), else a per-build-tree sequence
number that advances once per ``ninja`` (or ``make``) invocation.

.. command:: fingerprint_target

  .. code-block:: cmake

    fingerprint_target(<target> [CONSUMES <file>...] [PRODUCES <file>...])

  Fingerprints ``<target>`` (also when ``FINGERPRINT_AUTO`` is ``OFF``);
  an ``ALIAS`` stands for the target it names.
  ``CONSUMES`` names files the target reads that the linker does not see
  (data it embeds, a generator's input); ``PRODUCES`` names further files
  its link step writes. Both may be given again later: they are read at
  generate time from the ``FINGERPRINT_CONSUMES`` and
  ``FINGERPRINT_PRODUCES`` target properties. A relative path is taken
  from the current source directory (``CONSUMES``) or binary directory
  (``PRODUCES``). A value may be a generator expression, such as
  ``$<TARGET_FILE:<other>>``: it is kept as given and evaluated at
  generate time for ``<target>``; a relative result (or a relative path
  set on the property directly) is taken from the target's source
  (``CONSUMES``) or binary (``PRODUCES``) directory.

.. command:: fingerprint_exclude

  .. code-block:: cmake

    fingerprint_exclude(<target>...)

  Leaves the targets out (sets their ``FINGERPRINT_EXCLUDE`` property; an
  ``ALIAS`` stands for the target it names).

.. command:: fingerprint_add_tests

  .. code-block:: cmake

    fingerprint_add_tests([TARGETS <target>...])

  Registers one CTest test per fingerprinted target (or per ``<target>``
  given), named ``fingerprint.<target>`` (by the real name when ``<target>``
  is an ``ALIAS``). It re-digests the target's file,
  checks that the store holds a producer event for those bytes from this
  build tree, and that every line of its record survives
  serialize -> parse -> serialize byte for byte. Call after
  ``enable_testing()``. A project that does not include the module (the
  module injected with ``CMAKE_PROJECT_TOP_LEVEL_INCLUDES``) gets the same
  tests, for every fingerprinted target, with ``-DFINGERPRINT_TESTS=ON``;
  testing is enabled for it if the project did not.
#]=======================================================================]

include_guard(GLOBAL)

# STRING, not PATH: CMake would turn a postgresql:// URL into a path.
set(FINGERPRINT_DIR "" CACHE STRING "The fingerprint store: a directory or postgresql:// URL (empty: the runner's default)")
include("${CMAKE_CURRENT_LIST_DIR}/Fingerprint/store_url.cmake")
_fingerprint_settle_store()
# Now, before the project's own checks run: the store is used only at the
# end (_fingerprint_finalize, which checks again what the project set since).
_fingerprint_refuse_password()
option(FINGERPRINT_AUTO "Fingerprint every executable and library target" ON)
option(FINGERPRINT_REQUIRED "Fail the build when a target cannot be fingerprinted" OFF)
option(FINGERPRINT_PROVENANCE "Record each build's source revision, toolchain and CI run" ON)
option(FINGERPRINT_TESTS "Add a fingerprint.<target> CTest test per fingerprinted target, as fingerprint_add_tests() does"
  OFF)
option(FINGERPRINT_COMPILE_LAUNCHER "Run every compile through the fingerprint compile launcher, also where the link hook reads the build tool's dependency records" OFF)
option(FINGERPRINT_RECORDER "Serve link hooks from one resident recorder process (fingerprint-launch), not a runner started per link" ON)
set(FINGERPRINT_ALGORITHM "sha256" CACHE STRING "Digest algorithm of the fingerprints")
set_property(CACHE FINGERPRINT_ALGORITHM PROPERTY STRINGS sha256 sha512 sha1 md5 blake2b512)

# The module's own directory, for the installed layout's runner lookup.
set(_FINGERPRINT_MODULE_DIR "${CMAKE_CURRENT_LIST_DIR}")

# The target `target` names: itself, or the one it is an ALIAS of (as
# GoogleTest.cmake does; properties cannot be set on an ALIAS).
function(_fingerprint_resolve_alias out target)
  get_target_property(aliased "${target}" ALIASED_TARGET)
  if(aliased)
    set(${out} "${aliased}" PARENT_SCOPE)
  else()
    set(${out} "${target}" PARENT_SCOPE)
  endif()
endfunction()

# Appends the list `files` to the path-list property `property` of
# `target`: plain relative paths made absolute from `base` now, as the caller
# wrote them; generator expressions kept as given, for the hook to evaluate.
function(_fingerprint_append_paths target property base files)
  foreach(file IN LISTS files)
    if(NOT file MATCHES [[\$<]])
      cmake_path(ABSOLUTE_PATH file BASE_DIRECTORY "${base}" NORMALIZE)
    endif()
    set_property(TARGET "${target}" APPEND PROPERTY ${property} "${file}")
  endforeach()
endfunction()

function(fingerprint_target target)
  list(APPEND CMAKE_MESSAGE_CONTEXT fingerprint)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "CONSUMES;PRODUCES")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "fingerprint_target(${target}): unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "fingerprint_target(${target}): no such target")
  endif()
  _fingerprint_resolve_alias(real "${target}")
  get_target_property(type "${real}" TYPE)
  if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY)$")
    message(FATAL_ERROR "fingerprint_target(${target}): a ${type} has no link step to hook; "
      "only executables and static, shared and module libraries can be fingerprinted")
  endif()
  get_property(known GLOBAL PROPERTY _FINGERPRINT_TARGETS)
  if("${real}" IN_LIST known)
    message(WARNING "fingerprint_target(${target}) was called before; the new CONSUMES/PRODUCES are added")
  else()
    set_property(GLOBAL APPEND PROPERTY _FINGERPRINT_TARGETS "${real}")
  endif()
  _fingerprint_append_paths("${real}" FINGERPRINT_CONSUMES "${CMAKE_CURRENT_SOURCE_DIR}" "${arg_CONSUMES}")
  _fingerprint_append_paths("${real}" FINGERPRINT_PRODUCES "${CMAKE_CURRENT_BINARY_DIR}" "${arg_PRODUCES}")
endfunction()

function(fingerprint_exclude)
  list(APPEND CMAKE_MESSAGE_CONTEXT fingerprint)
  foreach(target IN LISTS ARGN)
    if(NOT TARGET "${target}")
      message(FATAL_ERROR "fingerprint_exclude(${target}): no such target")
    endif()
    _fingerprint_resolve_alias(real "${target}")
    set_property(TARGET "${real}" PROPERTY FINGERPRINT_EXCLUDE ON)
  endforeach()
endfunction()

function(fingerprint_add_tests)
  list(APPEND CMAKE_MESSAGE_CONTEXT fingerprint)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "" "TARGETS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "fingerprint_add_tests: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  set(targets "")
  foreach(target IN LISTS arg_TARGETS)
    if(NOT TARGET "${target}")
      message(FATAL_ERROR "fingerprint_add_tests: no such target: ${target}")
    endif()
    _fingerprint_resolve_alias(real "${target}")
    list(APPEND targets "${real}")
  endforeach()
  # The targets are known only at the end of the top-level directory.
  set_property(GLOBAL PROPERTY _FINGERPRINT_ADD_TESTS ON)
  set_property(GLOBAL APPEND PROPERTY _FINGERPRINT_TEST_TARGETS ${targets})
endfunction()

include("${CMAKE_CURRENT_LIST_DIR}/Fingerprint/hooks.cmake")

# Everything else waits for the end of the top-level directory: targets are
# defined by then, and under CMAKE_PROJECT_TOP_LEVEL_INCLUDES neither the
# project name nor the compilers are known yet at this point.
get_property(_fingerprint_deferred GLOBAL PROPERTY _FINGERPRINT_DEFERRED)
if(NOT _fingerprint_deferred)
  set_property(GLOBAL PROPERTY _FINGERPRINT_DEFERRED ON)
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _fingerprint_finalize)
  # FINGERPRINT_TESTS for a project that may never enable testing itself:
  # enable_testing() counts only in the top-level directory's own scope,
  # where a deferred call runs (not a function's).
  if(FINGERPRINT_TESTS)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL enable_testing)
  endif()
endif()
unset(_fingerprint_deferred)
