include("${CMAKE_CURRENT_LIST_DIR}/baseTargets.cmake")
