# deepinfer_layer(NAME DEPS ...): one static library per architectural layer, built from
# src/NAME/**/*.cc. Files named *_avx512.cc / *_avx2.cc get the ISA flags for their
# kernels only; the rest of the library stays baseline x86-64 so that the binary runs on any
# x86-64 CPU and picks its kernels at run time (kernels/cpu/dispatch.h).
set(DEEPINFER_AVX512_FLAGS -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16
    -mavx512vbmi -mavx512vnni -mgfni -mfma -mbmi2 -mf16c
    # GCC 12 reports false (maybe-)uninitialized warnings inside its own AVX-512 intrinsic headers.
    -Wno-uninitialized -Wno-maybe-uninitialized)
set(DEEPINFER_AVX2_FLAGS -mavx2 -mfma -mf16c -mbmi2)

# Each layer's name is appended, bottom-up, to the global property DEEPINFER_LAYERS.
function(deepinfer_layer name)
  cmake_parse_arguments(L "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cc)
  set(target deepinfer_${name})
  set_property(GLOBAL APPEND PROPERTY DEEPINFER_LAYERS ${name})
  if(srcs)
    add_library(${target} STATIC ${srcs})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${target} PUBLIC ${L_DEPS})
    foreach(src IN LISTS srcs)
      # ISA files stay out of unity batches: their flags are theirs alone.
      if(src MATCHES "_avx512\\.cc$")
        set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${DEEPINFER_AVX512_FLAGS}"
                                    SKIP_UNITY_BUILD_INCLUSION ON)
      elseif(src MATCHES "_avx2\\.cc$")
        set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${DEEPINFER_AVX2_FLAGS}"
                                    SKIP_UNITY_BUILD_INCLUSION ON)
      endif()
    endforeach()
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${target} INTERFACE ${L_DEPS})
  endif()
endfunction()
