# Private part of Fingerprint.cmake: attaching the hooks at the end of the
# top-level directory. Nothing here is a public interface.

include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/store_url.cmake")

# Quotes `value` for the shell command line Ninja and Make run: "$" becomes
# "\$" for the shell. The Makefile generators escape a RULE_LAUNCH_* value's
# "$" for make; the Ninja ones write it as it is, where "$" starts a
# variable, so there it is also doubled ("/tmp/a$b" is written "/tmp/a\$$b").
function(_fingerprint_quote out value)
  if(value MATCHES "^[A-Za-z0-9_./+:=@%,-]+$")
    set(${out} "${value}" PARENT_SCOPE)
  else()
    string(REPLACE "\\" "\\\\" value "${value}")
    string(REPLACE "\"" "\\\"" value "${value}")
    string(REPLACE "`" "\\`" value "${value}")
    if(CMAKE_GENERATOR MATCHES "Ninja")
      string(REPLACE "$" "\\$$" value "${value}")
    else()
      string(REPLACE "$" "\\$" value "${value}")
    endif()
    set(${out} "\"${value}\"" PARENT_SCOPE)
  endif()
endfunction()

# Every target defined in `dir` and below (also how this repository's own
# CMakeLists.txt finds its targets to exclude them).
function(_fingerprint_collect_targets dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    _fingerprint_collect_targets("${subdir}" more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} "${targets}" PARENT_SCOPE)
endfunction()

# Finds the runner: FINGERPRINT_RUNNER, the one built in this tree (this
# repository added with add_subdirectory or FetchContent), the one installed
# beside this module, or one on PATH.
function(_fingerprint_find_runner out_path out_in_tree)
  set(${out_in_tree} FALSE PARENT_SCOPE)
  if(FINGERPRINT_RUNNER)
    set(${out_path} "${FINGERPRINT_RUNNER}" PARENT_SCOPE)
    return()
  endif()
  if(TARGET fingerprint)
    get_target_property(path fingerprint FINGERPRINT_RUNNER_PATH)
    if(path)
      set(${out_path} "${path}" PARENT_SCOPE)
      set(${out_in_tree} TRUE PARENT_SCOPE)
      return()
    endif()
  endif()
  find_program(FINGERPRINT_RUNNER NAMES fingerprint
    HINTS "${_FINGERPRINT_MODULE_DIR}/../../../bin"
    DOC "The fingerprint runner")
  set(${out_path} "${FINGERPRINT_RUNNER}" PARENT_SCOPE)
endfunction()

# fingerprint-launch, beside the runner (built without a C library; see
# docs/ARCHITECTURE.md, "The recorder"), when FINGERPRINT_RECORDER is ON and
# it is there: link hooks then start it, and it hands each link to the
# runner's resident recorder. Empty: the hooks start the runner.
function(_fingerprint_find_launcher out runner in_tree)
  set(${out} "" PARENT_SCOPE)
  if(NOT FINGERPRINT_RECORDER)
    return()
  endif()
  if(in_tree)
    get_target_property(path fingerprint FINGERPRINT_LAUNCHER_PATH)
  else()
    get_filename_component(dir "${runner}" DIRECTORY)
    set(path "${dir}/fingerprint-launch${CMAKE_EXECUTABLE_SUFFIX}")
    if(NOT EXISTS "${path}" OR IS_DIRECTORY "${path}")
      set(path "")
    endif()
  endif()
  if(path)
    set(${out} "${path}" PARENT_SCOPE)
  endif()
endfunction()

# The compilers whose links accept -Wl,--dependency-file= (GNU ld >= 2.35,
# lld, mold), checked once per build tree.
function(_fingerprint_depfile_drivers out)
  include(CheckLinkerFlag)
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  set(drivers "")
  # The linker writes the file during the check, so its directory must exist.
  file(MAKE_DIRECTORY "${CMAKE_BINARY_DIR}/CMakeFiles/fingerprint")
  foreach(lang IN ITEMS CXX C)
    if(lang IN_LIST languages AND CMAKE_${lang}_COMPILER)
      set(CMAKE_REQUIRED_QUIET ON)
      check_linker_flag(${lang}
        "LINKER:--dependency-file=${CMAKE_BINARY_DIR}/CMakeFiles/fingerprint/check-${lang}.d"
        FINGERPRINT_LINKER_DEPFILE_${lang})
      if(FINGERPRINT_LINKER_DEPFILE_${lang})
        list(APPEND drivers "${CMAKE_${lang}_COMPILER}")
      endif()
    endif()
  endforeach()
  set(${out} "${drivers}" PARENT_SCOPE)
endfunction()

# The options every runner call passes, from the cache variables, as a list.
function(_fingerprint_store_options out)
  set(options "")
  if(FINGERPRINT_DIR)
    list(APPEND options --store "${FINGERPRINT_DIR}")
  endif()
  if(FINGERPRINT_REQUIRED)
    list(APPEND options --required)
  endif()
  if(NOT FINGERPRINT_ALGORITHM STREQUAL "sha256")
    list(APPEND options --algorithm "${FINGERPRINT_ALGORITHM}")
  endif()
  set(${out} "${options}" PARENT_SCOPE)
endfunction()

# The start of every launcher: the runner, `subcommand` and its common
# options, quoted for the shell.
function(_fingerprint_common_args out runner subcommand)
  set(words "${runner}" ${subcommand} --project "${CMAKE_PROJECT_NAME}" --build-dir "${CMAKE_BINARY_DIR}")
  if(CMAKE_PROJECT_VERSION)
    list(APPEND words --version "${CMAKE_PROJECT_VERSION}")
  endif()
  _fingerprint_store_options(options)
  list(APPEND words ${options})
  set(args "")
  foreach(word IN LISTS words)
    _fingerprint_quote(quoted "${word}")
    string(APPEND args " ${quoted}")
  endforeach()
  string(STRIP "${args}" args)
  set(${out} "${args}" PARENT_SCOPE)
endfunction()

# The files a static library hands to every consumer: its
# INTERFACE_LINK_LIBRARIES closure (PRIVATE dependencies of a static library
# are there as $<LINK_ONLY:...>), as generator expressions and paths for
# file(GENERATE). Flags (-lm) and items that are generator expressions of
# their own are left out.
function(_fingerprint_link_interface target out)
  set(files "")
  set(seen "${target}")
  set(queue "${target}")
  while(queue)
    list(POP_FRONT queue current)
    get_target_property(items "${current}" INTERFACE_LINK_LIBRARIES)
    if(NOT items)
      continue()
    endif()
    foreach(item IN LISTS items)
      if(item MATCHES [[^\$<(LINK_ONLY|BUILD_INTERFACE):(.*)>$]])
        set(item "${CMAKE_MATCH_2}")
      endif()
      if(item MATCHES [[\$<|^-|^::@]])
        continue()
      endif()
      if(TARGET "${item}")
        _fingerprint_resolve_alias(item "${item}")
        if("${item}" IN_LIST seen)
          continue()
        endif()
        list(APPEND seen "${item}")
        list(APPEND queue "${item}")
        get_target_property(type "${item}" TYPE)
        if(type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|UNKNOWN_LIBRARY)$")
          list(APPEND files "$<TARGET_FILE:${item}>")
        endif()
      elseif(IS_ABSOLUTE "${item}")
        list(APPEND files "${item}")
      endif()
    endforeach()
  endwhile()
  set(${out} "${files}" PARENT_SCOPE)
endfunction()

# Runs `target`'s compiles through `fingerprint compile`, which keeps what
# each one read (its dependency file); a launcher the target has already
# (ccache) runs inside it. Only where the link hook cannot read that itself:
# Ninja keeps every compile's dependencies in its deps log (.ninja_deps,
# written as the compile finishes, before any link that needs the object
# starts) and the Makefile generators keep the compiler's .d files, so with
# them no compile starts one more process (docs/ARCHITECTURE.md, "Where a
# hook's time goes on trivial targets"). FINGERPRINT_COMPILE_LAUNCHER=ON
# asks for it all the same.
function(_fingerprint_compile_hook target runner)
  if(CMAKE_GENERATOR MATCHES "Ninja|Unix Makefiles" AND NOT FINGERPRINT_COMPILE_LAUNCHER)
    return()
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  foreach(lang IN ITEMS C CXX OBJC OBJCXX)
    if(lang IN_LIST languages)
      get_target_property(existing "${target}" ${lang}_COMPILER_LAUNCHER)
      if(NOT existing)
        set(existing "")
      endif()
      set_property(TARGET "${target}" PROPERTY ${lang}_COMPILER_LAUNCHER "${runner}" compile -- ${existing})
    endif()
  endforeach()
endfunction()

# Runs every custom command through `fingerprint generate`, which records
# the file it generated (its first OUTPUT) from the files its command line
# names. Set once, globally: a directory's value chains to its parent's and
# at last to the global one, so setting it per directory would wrap a
# subdirectory's commands once per level. A launcher already there (CTest's)
# runs inside it; a directory with a launcher of its own keeps it alone.
function(_fingerprint_custom_hook runner)
  _fingerprint_common_args(common "${runner}" generate)
  get_property(existing GLOBAL PROPERTY RULE_LAUNCH_CUSTOM)
  set_property(GLOBAL PROPERTY RULE_LAUNCH_CUSTOM "${common} --output=<OUTPUT> -- ${existing}")
endfunction()

# Wraps `target`'s link rule in `fingerprint launch`.
function(_fingerprint_hook target common drivers)
  get_target_property(type "${target}" TYPE)
  get_target_property(source_dir "${target}" SOURCE_DIR)
  get_target_property(binary_dir "${target}" BINARY_DIR)
  set(args_dir "${CMAKE_BINARY_DIR}/CMakeFiles/fingerprint/targets")

  # Read at generate time, so CONSUMES/PRODUCES set after this point count;
  # one file per configuration, never shared between two targets. Files of
  # configurations built before (another CMAKE_BUILD_TYPE) go first.
  # Generator expressions in the values ($<TARGET_FILE:other>) are evaluated
  # for this target (Corrosion reads user-given properties the same way);
  # the runner takes what is still relative from the target's directories,
  # which only CMake knows.
  file(REMOVE_RECURSE "${args_dir}/${target}")
  set(consumes "$<GENEX_EVAL:$<TARGET_PROPERTY:${target},FINGERPRINT_CONSUMES>>")
  set(produces "$<GENEX_EVAL:$<TARGET_PROPERTY:${target},FINGERPRINT_PRODUCES>>")
  set(interface "")
  if(type STREQUAL "STATIC_LIBRARY")
    _fingerprint_link_interface("${target}" files)
    foreach(file IN LISTS files)
      string(APPEND interface "interface=${file}\n")
    endforeach()
  endif()
  file(GENERATE OUTPUT "${args_dir}/${target}/config-$<CONFIG>.args"
    CONTENT "output=$<TARGET_FILE:${target}>
config=$<CONFIG>
source_dir=${source_dir}
binary_dir=${binary_dir}
$<$<BOOL:${consumes}>:consumes=$<JOIN:${consumes},\nconsumes=>\n>$<$<BOOL:${produces}>:produces=$<JOIN:${produces},\nproduces=>\n>${interface}"
    TARGET "${target}")

  _fingerprint_quote(q_target "${target}")
  _fingerprint_quote(q_args_dir "${args_dir}")
  set(launcher "${common} --target ${q_target} --output <TARGET> --type <TARGET_TYPE> --args-dir ${q_args_dir}")
  if(type STREQUAL "STATIC_LIBRARY")
    # rm, ar and ranlib run as separate commands; record after the last.
    get_target_property(lang "${target}" LINKER_LANGUAGE)
    if(NOT lang)
      get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
      set(lang C)
      if(CXX IN_LIST languages)
        set(lang CXX)
      endif()
    endif()
    if(CMAKE_${lang}_ARCHIVE_FINISH AND CMAKE_RANLIB)
      set(tool "${CMAKE_RANLIB}")
    else()
      set(tool "${CMAKE_AR}")
    endif()
    _fingerprint_quote(q_tool "${tool}")
    string(APPEND launcher " --record-after ${q_tool}")
  elseif(drivers)
    string(APPEND launcher " --depfile-driver")
    foreach(driver IN LISTS drivers)
      _fingerprint_quote(q_driver "${driver}")
      string(APPEND launcher " ${q_driver}")
    endforeach()
  endif()

  # Keep a launcher the project already has (CTest's, say): it runs inside ours.
  get_target_property(existing "${target}" RULE_LAUNCH_LINK)
  if(NOT existing)
    get_property(existing DIRECTORY "${source_dir}" PROPERTY RULE_LAUNCH_LINK)
  endif()
  if(NOT existing)
    get_property(existing GLOBAL PROPERTY RULE_LAUNCH_LINK)
  endif()
  if(existing)
    string(APPEND launcher " -- ${existing}")
  else()
    string(APPEND launcher " --")
  endif()
  if(type STREQUAL "STATIC_LIBRARY" AND NOT existing)
    _fingerprint_archive_steps(launcher "${launcher}" "${tool}")
  endif()
  set_property(TARGET "${target}" PROPERTY RULE_LAUNCH_LINK "${launcher}")
endfunction()

# An archive's rule is several commands (rm, ar, ranlib), and
# RULE_LAUNCH_LINK prefixes each. With Ninja, whose commands run in
# `/bin/sh -c`, the prefix is a shell function instead, so that only the
# last step (`tool`) starts the launcher: a step before it runs as in a
# plain build, and the shell keeps its words for the last (hook/
# archive_steps.hpp's format, in the target's object directory) with
# builtins alone: a step that names members (an object file, a response
# file) appends its command, any other (the first, rm) empties the file.
# One process start fewer for each of those steps (docs/ARCHITECTURE.md,
# "An archive's steps in the build's own shell"). Makefiles run each
# command of an archive without a shell (cmake_link_script): there the
# launcher does it, as a project's own launcher needs it done inside ours.
function(_fingerprint_archive_steps out launcher tool)
  get_filename_component(tool_name "${tool}" NAME)
  if(NOT CMAKE_GENERATOR MATCHES "Ninja" OR NOT tool_name MATCHES "^[A-Za-z0-9_.+-]+$")
    set(${out} "${launcher}" PARENT_SCOPE)
    return()
  endif()
  # $$ is Ninja's escape of the shell's $; <OBJECT_DIR> is CMake's
  # placeholder, per configuration.
  set(steps "<OBJECT_DIR>/fingerprint.ar-steps")
  set(function [=[_fingerprint_step() { case $${1##*/} in @TOOL@) @LAUNCHER@ "$$@";; *) case " $$* " in *".o "*|*".obj "*|*" @"*) { printf '%s\0' "$$@" '' >>@STEPS@; } 2>/dev/null;; *) { printf '' >@STEPS@; } 2>/dev/null;; esac; "$$@";; esac; } && _fingerprint_step]=])
  string(REGEX REPLACE " --$" " --archive-steps ${steps} --" launcher "${launcher}")
  string(REPLACE "@TOOL@" "${tool_name}" function "${function}")
  string(REPLACE "@STEPS@" "${steps}" function "${function}")
  string(REPLACE "@LAUNCHER@" "${launcher}" function "${function}") # last: nothing in it is replaced
  set(${out} "${function}" PARENT_SCOPE)
endfunction()

# `value` as a bracket argument (`[==[value]==]`), which CMake reads back
# byte for byte: no escapes, no variable references, semicolons kept.
function(_fingerprint_bracket out value)
  set(equals "")
  while(value MATCHES "]${equals}(]|$)")
    string(APPEND equals "=")
  endwhile()
  # A newline right after the opening bracket is dropped when read back.
  if(value MATCHES "^\n")
    set(value "\n${value}")
  endif()
  set(${out} "[${equals}[${value}]${equals}]" PARENT_SCOPE)
endfunction()

# Records every install()ed file once every install rule has run, whatever
# the project's policy CMP0082 (OLD runs the subdirectories' install rules
# after the top-level directory's own, so a rule of its own would come too
# early): the rule only watches CMAKE_INSTALL_MANIFEST, which the top-level
# install script sets after every rule of every directory has run, when
# CMAKE_INSTALL_MANIFEST_FILES lists everything installed.
function(_fingerprint_install_rule runner)
  _fingerprint_store_options(options)
  set(words "${runner}" installed --project "${CMAKE_PROJECT_NAME}" --build-dir "${CMAKE_BINARY_DIR}"
    --source-dir "${CMAKE_SOURCE_DIR}")
  if(CMAKE_PROJECT_VERSION)
    list(APPEND words --version "${CMAKE_PROJECT_VERSION}")
  endif()
  set(command "")
  foreach(word IN LISTS words options)
    _fingerprint_bracket(bracketed "${word}")
    string(APPEND command " ${bracketed}")
  endforeach()
  set(code [==[
    function(_fingerprint_installed variable access)
      if(access STREQUAL "MODIFIED_ACCESS" AND NOT _fingerprint_installed_done)
        set(_fingerprint_installed_done TRUE PARENT_SCOPE)
        execute_process(COMMAND@command@ -- ${CMAKE_INSTALL_MANIFEST_FILES} RESULT_VARIABLE result)
        if(NOT result EQUAL 0)
          message(FATAL_ERROR "fingerprint: recording the installed files failed")
        endif()
      endif()
    endfunction()
    variable_watch(CMAKE_INSTALL_MANIFEST _fingerprint_installed)
  ]==])
  string(REPLACE "@command@" "${command}" code "${code}")
  install(CODE "${code}" ALL_COMPONENTS)
endfunction()

# `value` as a JSON string, quoted.
function(_fingerprint_json_string out value)
  string(REPLACE "\\" "\\\\" value "${value}")
  string(REPLACE "\"" "\\\"" value "${value}")
  string(REPLACE "\n" "\\n" value "${value}")
  string(REPLACE "\t" "\\t" value "${value}")
  string(REPLACE "\r" "\\r" value "${value}")
  set(${out} "\"${value}\"" PARENT_SCOPE)
endfunction()

# The flags every target of configuration `config` starts from, as a JSON
# object of "<LANG>", "<LANG>_<CONFIG>", "<KIND>_LINKER[_<CONFIG>]" and the
# top directory's COMPILE_OPTIONS, COMPILE_DEFINITIONS and LINK_OPTIONS
# (empty ones left out).
function(_fingerprint_config_flags out config languages)
  get_property(options DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY COMPILE_OPTIONS)
  get_property(definitions DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY COMPILE_DEFINITIONS)
  get_property(link_options DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY LINK_OPTIONS)
  string(TOUPPER "${config}" upper)
  set(flags "{}")
  set(names "")
  foreach(lang IN LISTS languages)
    list(APPEND names "${lang}=CMAKE_${lang}_FLAGS")
    if(NOT upper STREQUAL "")
      list(APPEND names "${lang}_${upper}=CMAKE_${lang}_FLAGS_${upper}")
    endif()
  endforeach()
  foreach(kind IN ITEMS EXE SHARED MODULE STATIC)
    list(APPEND names "${kind}_LINKER=CMAKE_${kind}_LINKER_FLAGS")
    if(NOT upper STREQUAL "")
      list(APPEND names "${kind}_LINKER_${upper}=CMAKE_${kind}_LINKER_FLAGS_${upper}")
    endif()
  endforeach()
  foreach(pair IN LISTS names)
    string(REPLACE "=" ";" pair "${pair}")
    list(GET pair 0 name)
    list(GET pair 1 variable)
    string(STRIP "${${variable}}" text)
    if(text STREQUAL "")
      continue()
    endif()
    _fingerprint_json_string(value "${text}")
    string(JSON flags SET "${flags}" "${name}" "${value}")
  endforeach()
  foreach(pair IN ITEMS "COMPILE_OPTIONS=options" "COMPILE_DEFINITIONS=definitions" "LINK_OPTIONS=link_options")
    string(REPLACE "=" ";" pair "${pair}")
    list(GET pair 0 name)
    list(GET pair 1 variable)
    if(${variable})
      list(JOIN ${variable} " " text)
      _fingerprint_json_string(value "${text}")
      string(JSON flags SET "${flags}" "${name}" "${value}")
    endif()
  endforeach()
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# What a build's provenance says of its toolchain (hook/provenance.hpp):
# CMake, the generator, each enabled language's compiler, and per
# configuration the flags every target starts from. Written at the end of
# configuring, when every language is enabled; removed when
# FINGERPRINT_PROVENANCE is OFF, which is how the hooks know.
function(_fingerprint_write_toolchain)
  set(file "${CMAKE_BINARY_DIR}/CMakeFiles/fingerprint/toolchain.json")
  if(NOT FINGERPRINT_PROVENANCE)
    file(REMOVE "${file}")
    return()
  endif()
  get_property(multi GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
  if(multi)
    set(multi_json true)
  else()
    set(multi_json false)
  endif()
  set(json "{}")
  _fingerprint_json_string(value "${CMAKE_SOURCE_DIR}")
  string(JSON json SET "${json}" source_dir "${value}")
  string(JSON json SET "${json}" multi_config "${multi_json}")
  _fingerprint_json_string(version "${CMAKE_VERSION}")
  _fingerprint_json_string(generator "${CMAKE_GENERATOR}")
  string(JSON json SET "${json}" cmake "{\"version\": ${version}, \"generator\": ${generator}}")
  string(JSON json SET "${json}" compilers "{}")
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  list(REMOVE_ITEM languages NONE)
  foreach(lang IN LISTS languages)
    if(NOT CMAKE_${lang}_COMPILER)
      continue()
    endif()
    _fingerprint_json_string(id "${CMAKE_${lang}_COMPILER_ID}")
    _fingerprint_json_string(version "${CMAKE_${lang}_COMPILER_VERSION}")
    _fingerprint_json_string(path "${CMAKE_${lang}_COMPILER}")
    string(JSON json SET "${json}" compilers "${lang}" "{\"id\": ${id}, \"version\": ${version}, \"path\": ${path}}")
  endforeach()
  string(JSON json SET "${json}" flags "{}")
  if(multi)
    set(configs ${CMAKE_CONFIGURATION_TYPES})
  else()
    set(configs "${CMAKE_BUILD_TYPE}") # "" is a configuration too: no build type
  endif()
  list(LENGTH configs count)
  if(count EQUAL 0)
    set(count 1) # the one, empty, CMAKE_BUILD_TYPE: a list of nothing
  endif()
  math(EXPR last "${count} - 1")
  foreach(index RANGE ${last})
    set(config "")
    if(configs)
      list(GET configs ${index} config)
    endif()
    _fingerprint_config_flags(flags "${config}" "${languages}")
    string(JSON json SET "${json}" flags "${config}" "${flags}")
  endforeach()
  set(old "")
  if(EXISTS "${file}")
    file(READ "${file}" old)
  endif()
  if(NOT old STREQUAL "${json}\n")
    file(WRITE "${file}" "${json}\n")
  endif()
endfunction()

function(_fingerprint_finalize)
  list(APPEND CMAKE_MESSAGE_CONTEXT fingerprint)
  # Again: the project may have set FINGERPRINT_DIR after include(Fingerprint).
  _fingerprint_refuse_password()
  _fingerprint_find_runner(runner in_tree)
  if(NOT runner)
    set(message "the fingerprint runner was not found; set FINGERPRINT_RUNNER to its path, or install Fingerprint")
    if(FINGERPRINT_REQUIRED)
      message(FATAL_ERROR "${message}")
    endif()
    message(WARNING "${message}. Nothing is fingerprinted.")
    return()
  endif()

  if(FINGERPRINT_AUTO)
    _fingerprint_collect_targets("${CMAKE_SOURCE_DIR}" candidates)
  endif()
  get_property(named GLOBAL PROPERTY _FINGERPRINT_TARGETS)
  list(APPEND candidates ${named})
  list(REMOVE_DUPLICATES candidates)

  _fingerprint_write_toolchain()
  _fingerprint_depfile_drivers(drivers)
  _fingerprint_common_args(common "${runner}" launch)
  _fingerprint_find_launcher(launcher "${runner}" "${in_tree}")
  if(launcher)
    _fingerprint_quote(q_launcher "${launcher}")
    set(common "${q_launcher} ${common}")
  endif()
  # A runner built in this tree does not exist yet when the first custom
  # commands run (its own, a custom target's, rebuild_cache): then
  # generated files are not recorded.
  if(NOT in_tree)
    _fingerprint_custom_hook("${runner}")
  endif()
  set(hooked "")
  foreach(target IN LISTS candidates)
    get_target_property(type "${target}" TYPE)
    get_target_property(excluded "${target}" FINGERPRINT_EXCLUDE)
    get_target_property(imported "${target}" IMPORTED)
    if(excluded OR imported)
      continue()
    endif()
    if(type STREQUAL "OBJECT_LIBRARY")
      _fingerprint_compile_hook("${target}" "${runner}") # its objects are linked into other targets
      if(in_tree)
        add_dependencies("${target}" fingerprint)
      endif()
      continue()
    endif()
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY)$")
      continue()
    endif()
    _fingerprint_compile_hook("${target}" "${runner}")
    _fingerprint_hook("${target}" "${common}" "${drivers}")
    if(in_tree)
      add_dependencies("${target}" fingerprint) # the runner must exist before the first hooked link
    endif()
    list(APPEND hooked "${target}")
  endforeach()
  list(LENGTH hooked count)
  # Refused above; masked all the same, by the same reading of the URL.
  _fingerprint_url_password("${FINGERPRINT_DIR}" found store without)
  if(NOT store)
    set(store "the default store (\${XDG_DATA_HOME:-\$HOME/.local/share}/fingerprint of whoever builds)")
  endif()
  message(STATUS "Fingerprinting ${count} targets into ${store} with ${runner}")

  _fingerprint_install_rule("${runner}")

  get_property(add_tests GLOBAL PROPERTY _FINGERPRINT_ADD_TESTS)
  if(FINGERPRINT_TESTS)
    set(add_tests ON) # testing is enabled by the module (Fingerprint.cmake)
  endif()
  if(add_tests)
    get_property(test_targets GLOBAL PROPERTY _FINGERPRINT_TEST_TARGETS)
    if(NOT test_targets)
      set(test_targets "${hooked}")
    endif()
    set(store_args "")
    if(FINGERPRINT_DIR)
      set(store_args --store "${FINGERPRINT_DIR}")
    endif()
    foreach(target IN LISTS test_targets)
      if(NOT target IN_LIST hooked)
        message(WARNING "fingerprint_add_tests: ${target} is not fingerprinted; no test for it")
        continue()
      endif()
      add_test(NAME "fingerprint.${target}"
        COMMAND "${runner}" check ${store_args} --algorithm "${FINGERPRINT_ALGORITHM}"
                --build-dir "${CMAKE_BINARY_DIR}" --target "${target}" "$<TARGET_FILE:${target}>")
    endforeach()
  endif()
endfunction()
