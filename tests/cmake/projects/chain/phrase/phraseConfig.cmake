include(CMakeFindDependencyMacro)
find_dependency(word)
include("${CMAKE_CURRENT_LIST_DIR}/phraseTargets.cmake")
