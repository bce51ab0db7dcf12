# Installs the built ember into a scratch prefix, then configures, builds and runs a
# consumer project that finds it with find_package(ember) and links ember::ember.
# Invoked by CTest with -DSOURCE_DIR -DBINARY_DIR -DWORK_DIR.
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install "${BINARY_DIR}" --prefix "${prefix}")
if(NOT EXISTS "${prefix}/include/ember/ember.h")
  message(FATAL_ERROR "ember/ember.h was not installed under ${prefix}/include")
endif()
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/install/consumer" -B "${WORK_DIR}/build"
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("${WORK_DIR}/build/consumer")
if(NOT last_output MATCHES "^\\[3, 2\\] \\[1, 3\\]")
  message(FATAL_ERROR "consumer printed an unexpected result: '${last_output}'")
endif()
message(STATUS "find_package(ember) consumer printed: ${last_output}")
