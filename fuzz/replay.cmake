# Included from tests/CMakeLists.txt: replays each fuzz target's seed corpus with an ordinary
# main() (fuzz/replay_main.cc), so any compiler and every ctest run (also under ASan/UBSan)
# exercise the targets' invariant checks on the corpus.
set(DEEPINFER_FUZZ_DIR ${PROJECT_SOURCE_DIR}/fuzz)

add_executable(safetensors_header_replay ${DEEPINFER_FUZZ_DIR}/safetensors_header_fuzz.cc
                                         ${DEEPINFER_FUZZ_DIR}/replay_main.cc)
target_link_libraries(safetensors_header_replay PRIVATE deepinfer_io)
add_test(NAME fuzz_replay.safetensors_header
         COMMAND safetensors_header_replay ${DEEPINFER_FUZZ_DIR}/corpus/safetensors_header)
set_tests_properties(fuzz_replay.safetensors_header PROPERTIES LABELS io)

add_executable(output_parser_replay ${DEEPINFER_FUZZ_DIR}/output_parser_fuzz.cc
                                    ${DEEPINFER_FUZZ_DIR}/replay_main.cc)
target_link_libraries(output_parser_replay PRIVATE deepinfer_tokenizer)
add_test(NAME fuzz_replay.output_parser
         COMMAND output_parser_replay ${DEEPINFER_FUZZ_DIR}/corpus/output_parser)
set_tests_properties(fuzz_replay.output_parser PROPERTIES LABELS tokenizer)

add_executable(tokenizer_roundtrip_replay ${DEEPINFER_FUZZ_DIR}/tokenizer_roundtrip_fuzz.cc
                                          ${DEEPINFER_FUZZ_DIR}/replay_main.cc)
target_link_libraries(tokenizer_roundtrip_replay PRIVATE deepinfer_tokenizer)
target_compile_definitions(tokenizer_roundtrip_replay PRIVATE
                           DEEPINFER_TOKENIZER_DIR="${DEEPINFER_TOKENIZER_DIR}")
add_test(NAME fuzz_replay.tokenizer_roundtrip
         COMMAND tokenizer_roundtrip_replay ${DEEPINFER_FUZZ_DIR}/corpus/tokenizer_roundtrip)
set_tests_properties(fuzz_replay.tokenizer_roundtrip PROPERTIES LABELS tokenizer)

add_executable(request_parser_replay ${DEEPINFER_FUZZ_DIR}/request_parser_fuzz.cc
                                     ${DEEPINFER_FUZZ_DIR}/replay_main.cc)
target_link_libraries(request_parser_replay PRIVATE deepinfer_server)
add_test(NAME fuzz_replay.request_parser
         COMMAND request_parser_replay ${DEEPINFER_FUZZ_DIR}/corpus/request_parser)
set_tests_properties(fuzz_replay.request_parser PROPERTIES LABELS server)

add_executable(handoff_wire_replay ${DEEPINFER_FUZZ_DIR}/handoff_wire_fuzz.cc
                                   ${DEEPINFER_FUZZ_DIR}/replay_main.cc)
target_link_libraries(handoff_wire_replay PRIVATE deepinfer_engine)
add_test(NAME fuzz_replay.handoff_wire
         COMMAND handoff_wire_replay ${DEEPINFER_FUZZ_DIR}/corpus/handoff_wire)
set_tests_properties(fuzz_replay.handoff_wire PROPERTIES LABELS engine)

add_executable(grammar_replay ${DEEPINFER_FUZZ_DIR}/grammar_fuzz.cc ${DEEPINFER_FUZZ_DIR}/replay_main.cc)
target_link_libraries(grammar_replay PRIVATE deepinfer_structured)
add_test(NAME fuzz_replay.grammar COMMAND grammar_replay ${DEEPINFER_FUZZ_DIR}/corpus/grammar)
set_tests_properties(fuzz_replay.grammar PROPERTIES LABELS structured)
