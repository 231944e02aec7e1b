# protobuf for the TensorFlow plugin and the release: Debian's protobuf 3.21 source package
# (fetched by scripts/fetch_protobuf_source.sh with `apt-get source protobuf`), built here
# static and position-independent (Debian's libprotobuf.a is not built for a shared
# object), hidden in the plugin (TensorFlow exports a protobuf of its own). Sources are generated with
# Debian's protoc of the same version.
set(GRAPHJIT_PROTOBUF_SOURCE "${PROJECT_SOURCE_DIR}/build-deps/protobuf" CACHE PATH
    "protobuf's source tree (apt-get source protobuf)")
if(NOT EXISTS ${GRAPHJIT_PROTOBUF_SOURCE}/CMakeLists.txt)
  message(FATAL_ERROR "protobuf's source is not at ${GRAPHJIT_PROTOBUF_SOURCE}: "
                      "run scripts/setup_tf_plugin.sh, or pass -DGRAPHJIT_PROTOBUF_SOURCE=DIR")
endif()
set(protobuf_BUILD_TESTS OFF CACHE BOOL "" FORCE)
set(protobuf_BUILD_SHARED_LIBS OFF CACHE BOOL "" FORCE)
set(protobuf_BUILD_PROTOC_BINARIES OFF CACHE BOOL "" FORCE)
set(protobuf_WITH_ZLIB OFF CACHE BOOL "" FORCE)
set(protobuf_INSTALL OFF CACHE BOOL "" FORCE)
add_subdirectory(${GRAPHJIT_PROTOBUF_SOURCE} ${PROJECT_BINARY_DIR}/protobuf EXCLUDE_FROM_ALL SYSTEM)
# protobuf's own sources warn under this project's -Wall -Wextra.
target_compile_options(libprotobuf PRIVATE -w)

find_program(GRAPHJIT_PROTOC protoc REQUIRED)
execute_process(COMMAND ${GRAPHJIT_PROTOC} --version OUTPUT_VARIABLE protoc_version OUTPUT_STRIP_TRAILING_WHITESPACE)
file(READ ${GRAPHJIT_PROTOBUF_SOURCE}/version.json version_json)
string(REGEX MATCH "\"cpp\": \"([0-9.]+)\"" unused "${version_json}")
if(NOT protoc_version STREQUAL "libprotoc ${CMAKE_MATCH_1}")
  message(FATAL_ERROR "${GRAPHJIT_PROTOC} is ${protoc_version}, protobuf's source is ${CMAKE_MATCH_1}: they must match")
endif()
message(STATUS "protobuf for the plugin: ${CMAKE_MATCH_1} from ${GRAPHJIT_PROTOBUF_SOURCE}")
add_executable(protobuf::protoc IMPORTED)
set_target_properties(protobuf::protoc PROPERTIES IMPORTED_LOCATION ${GRAPHJIT_PROTOC})
