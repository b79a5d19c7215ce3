# Included from tests/CMakeLists.txt: the server end-to-end tests. A fixture makes the bundled
# random-weight model (scripts/default-model.sh --random: fixed seed, the real DeepSeek tokenizer) in the
# build tree once; each node script starts `deepinfer serve` on a random loopback port itself
# (tests/server/harness.mjs) and drives it with the real `openai` / `@anthropic-ai/sdk` clients
# from .deps/npm (--expose-gc: operations.test.mjs collects garbage before it aborts a request,
# see harness.mjs abortableFetch). Without node the tests fail rather than skip: CI must run them.
set(DEEPINFER_TEST_MODEL_DIR ${CMAKE_BINARY_DIR}/default-model)
add_test(NAME server.default_model
         COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/default-model.sh --random $<TARGET_FILE:deepinfer>
                 ${DEEPINFER_TEST_MODEL_DIR})
set_tests_properties(server.default_model PROPERTIES LABELS server FIXTURES_SETUP server_model
                     TIMEOUT 300)
foreach(name openai_api anthropic_api operations load determinism generation_config)
  if(DEEPINFER_NODE)
    add_test(NAME server.${name}
             COMMAND ${DEEPINFER_NODE} --expose-gc --test-reporter=spec
                     ${PROJECT_SOURCE_DIR}/tests/server/${name}.test.mjs)
  else()
    add_test(NAME server.${name} COMMAND ${CMAKE_COMMAND} -E false)
  endif()
  set_tests_properties(server.${name} PROPERTIES LABELS server FIXTURES_REQUIRED server_model
      TIMEOUT 600 ENVIRONMENT
      "DEEPINFER_BIN=$<TARGET_FILE:deepinfer>;DEEPINFER_TEST_MODEL=${DEEPINFER_TEST_MODEL_DIR};DEEPINFER_NPM_DIR=${DEEPINFER_NPM_DIR}")
endforeach()
# The load and determinism tests and the others each run a server with two compute threads: keep them apart on
# a 2-core machine.
set_tests_properties(server.load server.determinism PROPERTIES RUN_SERIAL ON)
# The determinism soak (3 x 40 requests on two servers, ~25 s in release) is about bytes, which
# a sanitizer does not change; it would take over 10 minutes under ASan, whose server coverage
# comes from the other server tests. The asan-ubsan test preset leaves out label `slow`.
set_tests_properties(server.determinism PROPERTIES LABELS "server;slow")
