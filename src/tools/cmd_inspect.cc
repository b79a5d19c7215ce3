// `deepinfer inspect --model DIR [--tensors] [--page-in]`: open and validate a checkpoint and its
// config, print the layout, the per-layer roles derived from the config, the bytes per role and
// whether the tensors match the config's manifest (exit code 1 if they do not).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "io/checkpoint.h"
#include "io/progress.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/layer_descriptor.h"
#include "model/deepseek_v41/weight_manifest.h"
#include "tools/cli.h"

namespace deepinfer::tools {

namespace {

struct InspectArgs {
  std::string model;
  bool tensors = false;
  bool page_in = false;
};

int RunInspect(const InspectArgs& args) {
  int exit_code = 0;
  StatusOr<io::Checkpoint> ckpt = io::Checkpoint::Open(args.model);
  if (!ckpt.ok()) {
    std::fprintf(stderr, "error: %s\n", ckpt.status().message().c_str());
    return 1;
  }
  struct Tally {
    size_t count = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string_view, Tally> by_dtype;
  for (std::string_view name : ckpt->names()) {
    const TensorView* v = ckpt->Find(name);
    Tally& t = by_dtype[DTypeName(v->dtype)];
    ++t.count;
    t.bytes += v->n_bytes;
  }
  std::printf("checkpoint  %s\nfiles       %zu\ntensors     %zu\nbytes       %llu (%s)\n",
              ckpt->path().c_str(), ckpt->files().size(), ckpt->num_tensors(),
              static_cast<unsigned long long>(ckpt->total_bytes()),
              io::ProgressBar::FormatBytes(ckpt->total_bytes()).c_str());
  std::printf("\n%-8s %8s %16s\n", "dtype", "tensors", "bytes");
  for (const auto& [dtype, t] : by_dtype) {
    std::printf("%-8.*s %8zu %16llu\n", static_cast<int>(dtype.size()), dtype.data(), t.count,
                static_cast<unsigned long long>(t.bytes));
  }
  if (std::filesystem::is_directory(args.model)) {
    StatusOr<model::ModelConfig> config = model::LoadModelConfig(args.model);
    if (!config.ok()) {
      std::fprintf(stderr, "error: %s\n", config.status().message().c_str());
      return 1;
    }
    const std::vector<model::LayerDescriptor> layers = model::BuildLayerDescriptors(*config);
    std::printf("\nconfig      %d layers + %d DSpark stages, hidden %d, vocab %d\n\n%s",
                config->n_layers, config->n_mtp_layers, config->dim, config->vocab_size,
                model::DescribeLayers(layers).c_str());
    std::printf("\nbytes by role\n%s",
                model::DescribeRoleBytes(model::CheckpointBytes(*ckpt)).c_str());
    const Status valid = model::ValidateCheckpoint(*ckpt, *config);
    if (valid.ok()) {
      std::printf(
          "\nvalidation  OK: every tensor of the config's manifest, with its dtype and "
          "shape%s\n",
          config->vision_enabled() ? " (vision tensors ignored)" : "");
    } else {
      std::printf("\nvalidation  FAILED\n%s\n", valid.message().c_str());
      exit_code = 1;
    }
  }
  if (args.tensors) {
    std::printf("\n");
    for (std::string_view name : ckpt->names()) {
      const TensorView* v = ckpt->Find(name);
      std::string_view dtype = DTypeName(v->dtype);
      std::printf("%.*s %.*s %s\n", static_cast<int>(name.size()), name.data(),
                  static_cast<int>(dtype.size()), dtype.data(), v->ShapeString().c_str());
    }
  }
  if (args.page_in) {
    io::ProgressBar::Options bar_options;
    bar_options.label = "paging in";
    bar_options.total = ckpt->file_bytes();
    bar_options.bytes = true;
    const auto start = std::chrono::steady_clock::now();
    uint64_t n = 0;
    {
      io::ProgressBar bar(bar_options);
      n = ckpt->PageIn(&bar);
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("\npaged in    %s in %.2f s (%.2f GB/s)\n", io::ProgressBar::FormatBytes(n).c_str(),
                s, s > 0 ? static_cast<double>(n) / s / 1e9 : 0.0);
  }
  return exit_code;
}

}  // namespace

void RegisterInspect(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("inspect", "Validate a checkpoint and print its layout");
  auto args = std::make_shared<InspectArgs>();
  cmd->add_option("--model", args->model,
                  "checkpoint directory (sharded index, model.safetensors or *.safetensors) or "
                  "a single .safetensors file")
      ->required();
  cmd->add_flag("--tensors", args->tensors, "list every tensor: name, dtype, shape");
  cmd->add_flag("--page-in", args->page_in,
                "read every page of the checkpoint once and report the time (warm-up check)");
  cmd->callback([exit_code, args] { *exit_code = RunInspect(*args); });
}

}  // namespace deepinfer::tools
