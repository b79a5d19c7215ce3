# Included from tests/CMakeLists.txt: replays each fuzz target's seed corpus with an ordinary
# main() (fuzz/replay_main.cc), so any compiler and every ctest run (also under ASan/UBSan)
# exercise the targets' invariant checks on the corpus.
set(DEEPINFER_FUZZ_DIR ${PROJECT_SOURCE_DIR}/fuzz)

# deepinfer_fuzz_replay(NAME LABEL LIB...): NAME_replay runs fuzz/NAME_fuzz.cc over
# fuzz/corpus/NAME as the CTest fuzz_replay.NAME (label LABEL).
function(deepinfer_fuzz_replay name label)
  add_executable(${name}_replay ${DEEPINFER_FUZZ_DIR}/${name}_fuzz.cc
                                ${DEEPINFER_FUZZ_DIR}/replay_main.cc)
  target_link_libraries(${name}_replay PRIVATE ${ARGN})
  add_test(NAME fuzz_replay.${name}
           COMMAND ${name}_replay ${DEEPINFER_FUZZ_DIR}/corpus/${name})
  set_tests_properties(fuzz_replay.${name} PROPERTIES LABELS ${label})
endfunction()

deepinfer_fuzz_replay(safetensors_header io deepinfer_io)
deepinfer_fuzz_replay(output_parser tokenizer deepinfer_tokenizer)
deepinfer_fuzz_replay(tokenizer_roundtrip tokenizer deepinfer_tokenizer)
target_compile_definitions(tokenizer_roundtrip_replay PRIVATE
                           DEEPINFER_TOKENIZER_DIR="${DEEPINFER_TOKENIZER_DIR}")
deepinfer_fuzz_replay(request_parser server deepinfer_server)
deepinfer_fuzz_replay(handoff_wire engine deepinfer_engine)
deepinfer_fuzz_replay(grammar structured deepinfer_structured)
