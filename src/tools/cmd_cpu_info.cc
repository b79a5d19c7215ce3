// `deepinfer cpu-info`: the vector extensions found and the kernel level in use.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "tools/cli.h"

namespace deepinfer::tools {

void RegisterCpuInfo(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("cpu-info", "Show CPU features and the kernel level in use");
  cmd->callback([exit_code] {
    const CpuFeatures& f = GetCpuFeatures();
    std::printf(
        "avx2+fma     %s\navx512 core  %s\navx512 bf16  %s\navx512 vbmi  %s\n"
        "avx512 vnni  %s\ngfni         %s\nvendor       %s\nkernel level %s\nprefetch     "
        "%s\nthreads      %d\n",
        f.avx2_fma ? "yes" : "no", f.avx512_core ? "yes" : "no", f.avx512_bf16 ? "yes" : "no",
        f.avx512_vbmi ? "yes" : "no", f.avx512_vnni ? "yes" : "no", f.gfni ? "yes" : "no",
        CpuVendorName(f.vendor), CpuLevelName(ActiveCpuLevel()),
        StreamPrefetchName(StreamPrefetchStyle()), ThreadPool::Default().size());
    *exit_code = 0;
  });
}

}  // namespace deepinfer::tools
