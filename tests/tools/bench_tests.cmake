# Included from tests/CMakeLists.txt after server/server_tests.cmake: the bench-serve end-to-end
# test drives a real `deepinfer serve` (the server_model fixture's default model, started by
# tests/server/harness.mjs on a random loopback port) with `deepinfer bench-serve`. Like the
# server tests it needs node, and fails rather than skips without it.
if(DEEPINFER_NODE)
  add_test(NAME tools.bench_serve
           COMMAND ${DEEPINFER_NODE} --test-reporter=spec
                   ${PROJECT_SOURCE_DIR}/tests/tools/bench_serve.test.mjs)
else()
  add_test(NAME tools.bench_serve COMMAND ${CMAKE_COMMAND} -E false)
endif()
set_tests_properties(tools.bench_serve PROPERTIES LABELS tools FIXTURES_REQUIRED server_model
    TIMEOUT 600 RUN_SERIAL ON ENVIRONMENT
    "DEEPINFER_BIN=$<TARGET_FILE:deepinfer>;DEEPINFER_TEST_MODEL=${DEEPINFER_TEST_MODEL_DIR};DEEPINFER_NPM_DIR=${DEEPINFER_NPM_DIR}")
