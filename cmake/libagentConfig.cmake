# CMake package of libagent (installed by `make install`):
#   find_package(libagent CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE libagent::agent)          # the shared library (C ABI)
#   target_link_libraries(app PRIVATE libagent::agent_static)   # the static library
#   target_link_libraries(app PRIVATE libagent::cpp)            # + the C++17 header-only binding
# The package is relocatable: every path is computed from this file's location
# (<prefix>/lib/cmake/libagent/).
include("${CMAKE_CURRENT_LIST_DIR}/libagentTargets.cmake")
