// ModelWeights: every tensor of a DeepSeek-V4.1 checkpoint in the form the CPU kernels read.
//
// Views (bf16 norms, fp32 hc/sink/bias vectors, bf16 projections, the Engram table) point into the
// mmap'd checkpoint, so they cost no RAM until touched. FP8 dense and MXFP4 expert matrices are
// either repacked once into the kernels' panel layouts (kernels/cpu/fp8_gemm.h, mxfp4_gemm.h),
// which copies them into RAM (kPacked, fast), or used in place through the mapping with the
// reference kernels on the checkpoint layout (kMapped: a checkpoint larger than RAM opens and pages
// in on use; same numbers, slower). `wo_a` is dequantized to bf16 as the release's convert.py does
// (the module tree holds it in bf16 and never quantizes its activation).
//
// Names, shapes and block layouts follow the release (fixture README "Checkpoint layout");
// Load() checks every tensor it uses and fails with one error listing all problems.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "io/checkpoint.h"
#include "kernels/cpu/fp8_gemm.h"
#include "kernels/cpu/mxfp4_gemm.h"
#include "model/deepseek_v41/config.h"
#include "model/deepseek_v41/layer_descriptor.h"

namespace deepinfer {
class ThreadPool;
}

namespace deepinfer::model {

// A [n, k] projection y = x·Wᵀ as the reference's `linear` runs it: FP8 weights quantize the
// activation to e4m3 first (bf16 out); bf16 weights are a plain bf16 GEMM.
enum class WeightResidency {
  kAuto,    // packed when the checkpoint's tensors take less than half of physical RAM
  kPacked,  // repack FP8 / MXFP4 into the kernels' layouts (RAM copy)
  kMapped,  // compute from the mapped checkpoint layout
};

struct DenseLinear {
  int64_t n = 0;
  int64_t k = 0;
  std::optional<kernels::PackedFp8Matrix> fp8;  // FP8, packed
  const uint8_t* codes = nullptr;               // FP8, mapped: e4m3 [n][k]
  const uint8_t* scales = nullptr;              // FP8, mapped: ue8m0 [ceil(n/32)][k/32]
  const uint16_t* bf16 = nullptr;               // set for bf16 checkpoints
  bool quantized() const { return fp8.has_value() || codes != nullptr; }
  // out[m][n] = x[m]·Wᵀ rounded to bf16. x rows ldx apart, out rows ldo apart.
  void Apply(const uint16_t* x, int64_t m, int64_t ldx, uint16_t* out, int64_t ldo,
             ThreadPool& pool) const;
  // The same with an already-quantized (scaled e4m3) activation for FP8 weights; bf16 weights
  // read xq as plain bf16.
  void ApplyQuantized(const uint16_t* xq, int64_t m, int64_t ldx, uint16_t* out, int64_t ldo,
                      ThreadPool& pool) const;
};

// A bf16 (or fp32-held) matrix used by a plain GEMM: W [n, k] row-major.
struct PlainMatrix {
  const void* data = nullptr;
  DType dtype = DType::kBF16;
  int64_t n = 0;
  int64_t k = 0;
  const uint16_t* bf16() const { return static_cast<const uint16_t*>(data); }
};

// One routed expert: fused w1|w3 (gate rows first) and w2, MXFP4 packed.
struct ExpertWeights {
  std::optional<kernels::PackedMxfp4Matrix> w13;
  std::optional<kernels::PackedMxfp4Matrix> w2;
  // MXFP4, mapped (checkpoint layout).
  kernels::Mxfp4Source w1_mapped, w3_mapped, w2_mapped;
  bool mxfp4() const { return w13.has_value() || w1_mapped.weight != nullptr; }
  // bf16 experts (a bf16 checkpoint): plain matrices.
  PlainMatrix w1_bf16, w3_bf16, w2_bf16;
  // Whether this process holds the expert (expert parallelism loads only a rank's own).
  bool held() const { return mxfp4() || w1_bf16.data != nullptr; }
};

struct SharedExpertWeights {
  DenseLinear w1, w2, w3;
};

struct MoeWeights {
  PlainMatrix gate;                  // [E, dim] bf16, run in fp32
  const float* gate_bias = nullptr;  // [E]
  std::vector<ExpertWeights> experts;
  SharedExpertWeights shared;
};

struct HcWeights {
  const float* fn = nullptr;     // [(2+hc)*hc, hc*dim]
  const float* base = nullptr;   // [(2+hc)*hc]
  const float* scale = nullptr;  // [3]
};

struct CompressorWeights {
  PlainMatrix wkv;    // [head_dim, dim]
  PlainMatrix wgate;  // [head_dim, dim] (ratio > 1)
  const uint16_t* norm = nullptr;
};

struct IndexerWeights {
  DenseLinear wq_b;          // [index_heads*index_dim, q_lora]
  PlainMatrix weights_proj;  // [index_heads, dim]
  PlainMatrix wk;            // [index_dim, head_dim] (KV sources)
  const uint16_t* k_norm = nullptr;
};

struct AttentionWeights {
  const float* sink = nullptr;  // [n_heads]
  DenseLinear wq_a, wq_b, wkv, wo_b;
  // Grouped output LoRA [o_groups*o_lora, n_heads*head_dim/o_groups]. The module tree holds it in
  // bf16 and multiplies raw bf16 activations. Packed FP8 checkpoints keep it FP8, one matrix per
  // group (wo_a_fp8), and run it through the FP8 kernel on the *unquantized* activation: e4m3 x
  // bf16 products and power-of-two tile scales are exact in fp32, so only the fp32 summation
  // order differs from the bf16 product, at half the bytes. Otherwise bf16 (wo_a).
  std::vector<uint16_t> wo_a;
  std::vector<kernels::PackedFp8Matrix> wo_a_fp8;
  const uint16_t* q_norm = nullptr;
  const uint16_t* kv_norm = nullptr;
  std::optional<CompressorWeights> compressor;
  std::optional<IndexerWeights> indexer;
};

struct EngramWeights {
  const uint8_t* table = nullptr;        // [rows, head_dim] e4m3
  const uint8_t* table_scale = nullptr;  // [rows, head_dim/32] ue8m0
  int64_t rows = 0;
  DenseLinear wkv;                 // [(hc+1)*dim, n_cols*head_dim]
  std::vector<float> gate_weight;  // [hc, dim] q_weight * k_weight in fp32
};

struct DraftHeadWeights {
  const uint16_t* norm = nullptr;
  PlainMatrix markov_embed;  // [V, rank] bf16
  PlainMatrix markov_head;   // [V, rank] bf16, run in fp32
  PlainMatrix confidence;    // [1, dim + rank] bf16, run in fp32
};

struct LayerWeights {
  const uint16_t* attn_norm = nullptr;
  const uint16_t* ffn_norm = nullptr;
  HcWeights hc_attn, hc_ffn;
  AttentionWeights attn;
  MoeWeights moe;
  std::optional<EngramWeights> engram;
  // DSpark stage 0.
  std::optional<DenseLinear> main_proj;
  const uint16_t* main_norm = nullptr;
  // Last DSpark stage.
  std::optional<DraftHeadWeights> draft_head;
};

struct ModelWeights {
  const uint16_t* embed = nullptr;   // [V, dim] bf16
  PlainMatrix head;                  // [V, dim] bf16, run in fp32
  const uint16_t* norm = nullptr;    // [dim]
  std::vector<LayerWeights> layers;  // backbone then DSpark stages (descriptor order)
};

// Which routed experts this process holds: (layer index, expert) -> held. Empty = all of them.
using ExpertFilter = std::function<bool(int layer, int64_t expert)>;

// Builds the weights of `config` from `checkpoint` (which must outlive the result). Packing runs
// on `pool`. Fails with one message listing every missing or mis-shaped tensor it needs (the
// tensors of experts `hold` leaves out are checked too, but not loaded).
StatusOr<ModelWeights> LoadModelWeights(const io::Checkpoint& checkpoint, const ModelConfig& config,
                                        const std::vector<LayerDescriptor>& layers,
                                        WeightResidency residency, ThreadPool& pool,
                                        const ExpertFilter& hold = {});

// One routed expert of `layer`, loaded as LoadModelWeights would (expert placement changes).
StatusOr<ExpertWeights> LoadExpertWeights(const io::Checkpoint& checkpoint,
                                          const ModelConfig& config, const LayerDescriptor& layer,
                                          int64_t expert, WeightResidency residency);

// kAuto resolved for a checkpoint of `tensor_bytes`.
WeightResidency ResolveResidency(WeightResidency requested, uint64_t tensor_bytes);

}  // namespace deepinfer::model
