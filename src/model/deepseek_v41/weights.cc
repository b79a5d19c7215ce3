#include "model/deepseek_v41/weights.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>

#include "core/bf16.h"
#include "core/check.h"
#include "core/e4m3.h"
#include "core/thread_pool.h"
#include "core/ue8m0.h"
#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/fp8_gemm_ref.h"
#include "kernels/cpu/gemm_bf16.h"

namespace deepinfer::model {

namespace {

// FP8 on the mapped checkpoint layout: the reference kernel over 32-row slices in parallel.
void MappedFp8(const DenseLinear& d, const uint16_t* xq, int64_t m, int64_t ldx, uint16_t* out,
               int64_t ldo, ThreadPool& pool) {
  std::vector<uint16_t> dense(m * d.k);
  for (int64_t r = 0; r < m; ++r) std::copy_n(xq + r * ldx, d.k, dense.data() + r * d.k);
  const int64_t tiles = (d.n + 31) / 32, kb = (d.k + 31) / 32;
  pool.ParallelFor(tiles, 1, [&](int64_t t0, int64_t t1) {
    const int64_t n0 = t0 * 32, n1 = std::min(d.n, t1 * 32);
    std::vector<float> part(m * (n1 - n0));
    kernels::Fp8GemmRefQuantized(dense.data(), m, d.k, d.codes + n0 * d.k, d.scales + t0 * kb,
                                 n1 - n0, part.data());
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t n = n0; n < n1; ++n)
        out[r * ldo + n] = FloatToBf16(part[r * (n1 - n0) + n - n0]);
    }
  });
}

}  // namespace

namespace {

void PackedFp8(const kernels::PackedFp8Matrix& w, const uint16_t* x, kernels::ActKind kind,
               int64_t m, int64_t ldx, uint16_t* out, int64_t ldo, ThreadPool& pool) {
  kernels::Fp8GemmParams p;
  p.x = x;
  p.m = m;
  p.ldx = ldx;
  p.x_kind = kind;
  p.out = out;
  p.ldo = ldo;
  p.out_dtype = kernels::OutDtype::kBf16;
  Status s = kernels::Fp8Gemm(p, w, pool);
  CHECK(s.ok()) << s.ToString();
}

}  // namespace

void DenseLinear::Apply(const uint16_t* x, int64_t m, int64_t ldx, uint16_t* out, int64_t ldo,
                        ThreadPool& pool) const {
  if (m == 0) return;
  if (codes) {
    std::vector<uint16_t> xq(m * k);
    for (int64_t r = 0; r < m; ++r)
      kernels::QuantizeActScaledBf16(x + r * ldx, k, xq.data() + r * k);
    MappedFp8(*this, xq.data(), m, k, out, ldo, pool);
  } else if (fp8) {
    PackedFp8(*fp8, x, kernels::ActKind::kRawBf16, m, ldx, out, ldo, pool);
  } else {
    kernels::GemmBf16(bf16, n, k, k, x, m, ldx, out, DType::kBF16, ldo, &pool);
  }
}

void DenseLinear::ApplyQuantized(const uint16_t* xq, int64_t m, int64_t ldx, uint16_t* out,
                                 int64_t ldo, ThreadPool& pool) const {
  if (m == 0) return;
  if (codes) {
    MappedFp8(*this, xq, m, ldx, out, ldo, pool);
  } else if (fp8) {
    PackedFp8(*fp8, xq, kernels::ActKind::kQuantizedBf16, m, ldx, out, ldo, pool);
  } else {
    kernels::GemmBf16(bf16, n, k, k, xq, m, ldx, out, DType::kBF16, ldo, &pool);
  }
}

namespace {

std::string ShapeStr(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// Looks tensors up, checks dtype and shape, and collects every problem instead of stopping at
// the first, so a broken checkpoint is described in one error.
class TensorLoader {
 public:
  TensorLoader(const io::Checkpoint& ck, const ModelConfig& config, bool packed)
      : ck_(ck), config_(config), packed_(packed) {}

  const TensorView* Get(const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
    const TensorView* t = ck_.Find(name);
    if (t == nullptr) {
      missing_.push_back(name);
      return nullptr;
    }
    if (t->dtype != dtype || t->shape != shape) {
      errors_.push_back(name + ": expected " + std::string(DTypeName(dtype)) + " " +
                        ShapeStr(shape) + ", found " + std::string(DTypeName(t->dtype)) + " " +
                        ShapeStr(t->shape));
      return nullptr;
    }
    return t;
  }

  const uint16_t* Bf16(const std::string& name, const std::vector<int64_t>& shape) {
    const TensorView* t = Get(name, DType::kBF16, shape);
    return t ? reinterpret_cast<const uint16_t*>(t->data) : nullptr;
  }
  const float* F32(const std::string& name, const std::vector<int64_t>& shape) {
    const TensorView* t = Get(name, DType::kF32, shape);
    return t ? reinterpret_cast<const float*>(t->data) : nullptr;
  }
  PlainMatrix Bf16Matrix(const std::string& name, int64_t n, int64_t k) {
    PlainMatrix m;
    m.data = Bf16(name, {n, k});
    m.dtype = DType::kBF16;
    m.n = n;
    m.k = k;
    return m;
  }

  // `prefix`.weight (+ `.scale` for FP8): an [n, k] dense projection.
  DenseLinear Dense(const std::string& prefix, int64_t n, int64_t k) {
    DenseLinear d;
    d.n = n;
    d.k = k;
    if (config_.dtype == WeightFormat::kFp8) {
      const TensorView* w = Get(prefix + ".weight", DType::kF8E4M3, {n, k});
      const TensorView* s = Get(prefix + ".scale", DType::kF8E8M0, {(n + 31) / 32, (k + 31) / 32});
      if (w && s && !packed_) {
        d.codes = reinterpret_cast<const uint8_t*>(w->data);
        d.scales = reinterpret_cast<const uint8_t*>(s->data);
      } else if (w && s) {
        auto packed = kernels::PackFp8Matrix(reinterpret_cast<const uint8_t*>(w->data),
                                             reinterpret_cast<const uint8_t*>(s->data), n, k);
        if (!packed.ok()) {
          errors_.push_back(prefix + ": " + packed.status().message());
        } else {
          d.fp8 = std::move(*packed);
        }
      }
    } else {
      d.bf16 = Bf16(prefix + ".weight", {n, k});
    }
    return d;
  }

  // A dense projection the module tree holds in bf16 whatever the checkpoint dtype (`wo_a`):
  // FP8 tiles are dequantized exactly (e4m3 · 2^k fits bf16).
  std::vector<uint16_t> DequantizedBf16(const std::string& prefix, int64_t n, int64_t k) {
    std::vector<uint16_t> out;
    if (config_.dtype != WeightFormat::kFp8) {
      const uint16_t* w = Bf16(prefix + ".weight", {n, k});
      if (w) out.assign(w, w + n * k);
      return out;
    }
    const TensorView* w = Get(prefix + ".weight", DType::kF8E4M3, {n, k});
    const TensorView* s = Get(prefix + ".scale", DType::kF8E8M0, {(n + 31) / 32, (k + 31) / 32});
    if (!w || !s) return out;
    const auto* codes = reinterpret_cast<const uint8_t*>(w->data);
    const auto* scales = reinterpret_cast<const uint8_t*>(s->data);
    const int64_t sk = (k + 31) / 32;
    out.resize(n * k);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < k; ++c) {
        const float v =
            E4m3ToFloat(codes[r * k + c]) * Ue8m0ToFloat(scales[(r / 32) * sk + c / 32]);
        out[r * k + c] = FloatToBf16(v);
        if (Bf16ToFloat(out[r * k + c]) != v) {
          errors_.push_back(prefix + ": dequantized value not exact in bf16");
          return {};
        }
      }
    }
    return out;
  }

  bool packed() const { return packed_; }

  // An FP8 [groups*rows, k] matrix packed as `groups` matrices of `rows` rows (rows % 32 == 0,
  // so every group starts on a scale tile).
  std::vector<kernels::PackedFp8Matrix> GroupedFp8(const std::string& prefix, int64_t groups,
                                                   int64_t rows, int64_t k) {
    std::vector<kernels::PackedFp8Matrix> out;
    const int64_t n = groups * rows;
    const TensorView* w = Get(prefix + ".weight", DType::kF8E4M3, {n, k});
    const TensorView* s = Get(prefix + ".scale", DType::kF8E8M0, {(n + 31) / 32, (k + 31) / 32});
    if (!w || !s) return out;
    if (rows % 32 != 0) {
      errors_.push_back(prefix + ": group rows not a multiple of 32");
      return out;
    }
    const auto* codes = reinterpret_cast<const uint8_t*>(w->data);
    const auto* scales = reinterpret_cast<const uint8_t*>(s->data);
    for (int64_t g = 0; g < groups; ++g) {
      auto packed = kernels::PackFp8Matrix(codes + g * rows * k,
                                           scales + g * (rows / 32) * (k / 32), rows, k);
      if (!packed.ok()) {
        errors_.push_back(prefix + ": " + packed.status().message());
        return {};
      }
      out.push_back(std::move(*packed));
    }
    return out;
  }

  // An expert this process does not hold: its tensors are checked, nothing is loaded.
  void CheckExpert(const std::string& prefix, int64_t dim, int64_t inter) {
    const bool fp4 = config_.expert_dtype == WeightFormat::kFp4;
    const std::pair<const char*, std::pair<int64_t, int64_t>> mats[] = {
        {".w1", {inter, dim}}, {".w3", {inter, dim}}, {".w2", {dim, inter}}};
    for (const auto& [name, shape] : mats) {
      const auto [n, k] = shape;
      if (fp4) {
        Get(prefix + name + ".weight", DType::kI8, {n, k / 2});
        Get(prefix + name + ".scale", DType::kF8E8M0, {n, k / 32});
      } else {
        Bf16Matrix(prefix + name + ".weight", n, k);
      }
    }
  }

  ExpertWeights Expert(const std::string& prefix, int64_t dim, int64_t inter) {
    ExpertWeights e;
    if (config_.expert_dtype != WeightFormat::kFp4) {
      e.w1_bf16 = Bf16Matrix(prefix + ".w1.weight", inter, dim);
      e.w3_bf16 = Bf16Matrix(prefix + ".w3.weight", inter, dim);
      e.w2_bf16 = Bf16Matrix(prefix + ".w2.weight", dim, inter);
      return e;
    }
    auto source = [&](const std::string& name, int64_t n, int64_t k) {
      kernels::Mxfp4Source src;
      const TensorView* w = Get(name + ".weight", DType::kI8, {n, k / 2});
      const TensorView* s = Get(name + ".scale", DType::kF8E8M0, {n, k / 32});
      if (w && s) {
        src.weight = reinterpret_cast<const uint8_t*>(w->data);
        src.scale = reinterpret_cast<const uint8_t*>(s->data);
        src.rows = n;
      }
      return src;
    };
    kernels::Mxfp4Source w1 = source(prefix + ".w1", inter, dim);
    kernels::Mxfp4Source w3 = source(prefix + ".w3", inter, dim);
    kernels::Mxfp4Source w2 = source(prefix + ".w2", dim, inter);
    if (!packed_) {
      e.w1_mapped = w1;
      e.w3_mapped = w3;
      e.w2_mapped = w2;
      return e;
    }
    if (w1.weight && w3.weight) {
      auto fused = kernels::PackedMxfp4Matrix::PackFused(w1, w3, dim);
      if (fused.ok()) {
        e.w13 = std::move(*fused);
      } else {
        errors_.push_back(prefix + ".w1/w3: " + fused.status().message());
      }
    }
    if (w2.weight) {
      kernels::Mxfp4Source parts[1] = {w2};
      auto packed = kernels::PackedMxfp4Matrix::Pack(parts, inter);
      if (packed.ok()) {
        e.w2 = std::move(*packed);
      } else {
        errors_.push_back(prefix + ".w2: " + packed.status().message());
      }
    }
    return e;
  }

  Status Finish() const {
    if (missing_.empty() && errors_.empty()) return Status::Ok();
    std::string msg = "checkpoint " + ck_.path() + " does not match the config:";
    if (!missing_.empty()) {
      msg += " " + std::to_string(missing_.size()) + " missing tensor(s):";
      for (size_t i = 0; i < missing_.size() && i < 20; ++i) msg += " " + missing_[i];
      if (missing_.size() > 20) msg += " ...";
      msg += ";";
    }
    for (size_t i = 0; i < errors_.size() && i < 20; ++i) msg += " " + errors_[i] + ";";
    if (errors_.size() > 20) msg += " (" + std::to_string(errors_.size() - 20) + " more)";
    return InvalidArgument(msg);
  }

 private:
  const io::Checkpoint& ck_;
  const ModelConfig& config_;
  bool packed_;
  std::vector<std::string> missing_;
  std::vector<std::string> errors_;
};

HcWeights LoadHc(TensorLoader& t, const std::string& prefix, const std::string& site,
                 const ModelConfig& c) {
  const int64_t mix = static_cast<int64_t>(2 + c.hc_mult) * c.hc_mult;
  HcWeights h;
  h.fn = t.F32(prefix + ".hc_" + site + "_fn", {mix, static_cast<int64_t>(c.hc_mult) * c.dim});
  h.base = t.F32(prefix + ".hc_" + site + "_base", {mix});
  h.scale = t.F32(prefix + ".hc_" + site + "_scale", {3});
  return h;
}

AttentionWeights LoadAttention(TensorLoader& t, const std::string& p, const LayerDescriptor& d,
                               const ModelConfig& c) {
  AttentionWeights a;
  const int64_t dim = c.dim, hd = c.head_dim, heads = c.n_heads;
  a.sink = t.F32(p + ".attn_sink", {heads});
  a.wq_a = t.Dense(p + ".wq_a", c.q_lora_rank, dim);
  a.q_norm = t.Bf16(p + ".q_norm.weight", {c.q_lora_rank});
  a.wq_b = t.Dense(p + ".wq_b", heads * hd, c.q_lora_rank);
  a.wkv = t.Dense(p + ".wkv", hd, dim);
  a.kv_norm = t.Bf16(p + ".kv_norm.weight", {hd});
  const int64_t lora = c.o_lora_rank, gin = heads * hd / c.o_groups;
  if (t.packed() && c.dtype == WeightFormat::kFp8) {
    a.wo_a_fp8 = t.GroupedFp8(p + ".wo_a", c.o_groups, lora, gin);
  } else {
    a.wo_a = t.DequantizedBf16(p + ".wo_a", c.o_groups * lora, gin);
  }
  a.wo_b = t.Dense(p + ".wo_b", dim, static_cast<int64_t>(c.o_groups) * c.o_lora_rank);
  if (d.owns_compressor) {
    CompressorWeights cw;
    cw.wkv = t.Bf16Matrix(p + ".compressor.wkv.weight", hd, dim);
    if (d.compressor_pools) cw.wgate = t.Bf16Matrix(p + ".compressor.wgate.weight", hd, dim);
    cw.norm = t.Bf16(p + ".compressor.norm.weight", {hd});
    a.compressor = cw;
  }
  if (d.has_indexer) {
    IndexerWeights iw;
    iw.wq_b = t.Dense(p + ".indexer.wq_b", static_cast<int64_t>(c.index_n_heads) * c.index_head_dim,
                      c.q_lora_rank);
    iw.weights_proj = t.Bf16Matrix(p + ".indexer.weights_proj.weight", c.index_n_heads, dim);
    if (d.owns_compressor) {
      iw.wk = t.Bf16Matrix(p + ".indexer.wk.weight", c.index_head_dim, hd);
      iw.k_norm = t.Bf16(p + ".indexer.k_norm.weight", {c.index_head_dim});
    }
    a.indexer = std::move(iw);
  }
  return a;
}

MoeWeights LoadMoe(TensorLoader& t, const std::string& p, int layer, const LayerDescriptor& d,
                   const ModelConfig& c, const ExpertFilter& hold) {
  MoeWeights m;
  const int64_t dim = c.dim, inter = c.moe_inter_dim, experts = d.n_routed_experts;
  m.gate = t.Bf16Matrix(p + ".gate.weight", experts, dim);
  m.gate_bias = t.F32(p + ".gate.bias", {experts});
  m.experts.reserve(experts);
  for (int64_t e = 0; e < experts; ++e) {
    const std::string name = p + ".experts." + std::to_string(e);
    if (!hold || hold(layer, e)) {
      m.experts.push_back(t.Expert(name, dim, inter));
    } else {
      t.CheckExpert(name, dim, inter);
      m.experts.emplace_back();
    }
  }
  m.shared.w1 = t.Dense(p + ".shared_experts.w1", inter, dim);
  m.shared.w2 = t.Dense(p + ".shared_experts.w2", dim, inter);
  m.shared.w3 = t.Dense(p + ".shared_experts.w3", inter, dim);
  return m;
}

EngramWeights LoadEngram(TensorLoader& t, const std::string& p, const LayerDescriptor& d,
                         const ModelConfig& c) {
  EngramWeights e;
  const int64_t rows = c.engram_num_embeddings[d.engram_index];
  const int64_t hd = c.engram_head_dim;
  const int64_t cols = static_cast<int64_t>(c.engram_max_ngram_size - 1) * c.engram_n_heads;
  e.rows = rows;
  const TensorView* table = t.Get(p + ".embed.weight", DType::kF8E4M3, {rows, hd});
  const TensorView* scale = t.Get(p + ".embed.scale", DType::kF8E8M0, {rows, hd / 32});
  if (table) e.table = reinterpret_cast<const uint8_t*>(table->data);
  if (scale) e.table_scale = reinterpret_cast<const uint8_t*>(scale->data);
  e.wkv = t.Dense(p + ".wkv", static_cast<int64_t>(c.hc_mult + 1) * c.dim, cols * hd);
  const uint16_t* q = t.Bf16(p + ".q_weight", {c.hc_mult, c.dim});
  const uint16_t* k = t.Bf16(p + ".k_weight", {c.hc_mult, c.dim});
  if (q && k) {
    e.gate_weight.resize(static_cast<size_t>(c.hc_mult) * c.dim);
    for (size_t i = 0; i < e.gate_weight.size(); ++i) {
      e.gate_weight[i] = Bf16ToFloat(q[i]) * Bf16ToFloat(k[i]);
    }
  }
  return e;
}

}  // namespace

StatusOr<ModelWeights> LoadModelWeights(const io::Checkpoint& checkpoint, const ModelConfig& c,
                                        const std::vector<LayerDescriptor>& layers,
                                        WeightResidency residency, ThreadPool& pool,
                                        const ExpertFilter& hold) {
  if (c.vision_enabled()) {
    return Unimplemented("vision tower checkpoints are not supported yet");
  }
  (void)pool;  // packing is single-threaded for now
  TensorLoader t(checkpoint, c,
                 ResolveResidency(residency, checkpoint.total_bytes()) == WeightResidency::kPacked);
  ModelWeights w;
  const int64_t vocab = c.vocab_size, dim = c.dim;
  w.embed = t.Bf16("embed.weight", {vocab, dim});
  w.head = t.Bf16Matrix("head.weight", vocab, dim);
  w.norm = t.Bf16("norm.weight", {dim});
  w.layers.resize(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerDescriptor& d = layers[i];
    LayerWeights& lw = w.layers[i];
    const std::string& p = d.name;
    lw.attn_norm = t.Bf16(p + ".attn_norm.weight", {dim});
    lw.ffn_norm = t.Bf16(p + ".ffn_norm.weight", {dim});
    lw.hc_attn = LoadHc(t, p, "attn", c);
    lw.hc_ffn = LoadHc(t, p, "ffn", c);
    lw.attn = LoadAttention(t, p + ".attn", d, c);
    lw.moe = LoadMoe(t, p + ".ffn", static_cast<int>(i), d, c, hold);
    if (d.has_engram()) lw.engram = LoadEngram(t, p + ".engram", d, c);
    if (d.has_main_proj) {
      const int64_t taps = static_cast<int64_t>(c.dspark_target_layer_ids.size());
      lw.main_proj = t.Dense(p + ".main_proj", dim, taps * dim);
      lw.main_norm = t.Bf16(p + ".main_norm.weight", {dim});
    }
    if (d.has_draft_head) {
      DraftHeadWeights h;
      const int64_t rank = c.dspark_markov_rank;
      h.norm = t.Bf16(p + ".norm.weight", {dim});
      h.markov_embed = t.Bf16Matrix(p + ".markov_head.embed.weight", vocab, rank);
      h.markov_head = t.Bf16Matrix(p + ".markov_head.head.weight", vocab, rank);
      h.confidence = t.Bf16Matrix(p + ".confidence_head.proj.weight", 1, dim + rank);
      lw.draft_head = h;
    }
  }
  DI_RETURN_IF_ERROR(t.Finish());
  return w;
}

StatusOr<ExpertWeights> LoadExpertWeights(const io::Checkpoint& checkpoint, const ModelConfig& c,
                                          const LayerDescriptor& layer, int64_t expert,
                                          WeightResidency residency) {
  if (expert < 0 || expert >= layer.n_routed_experts) {
    return InvalidArgument(layer.name + " has no routed expert " + std::to_string(expert));
  }
  TensorLoader t(checkpoint, c,
                 ResolveResidency(residency, checkpoint.total_bytes()) == WeightResidency::kPacked);
  ExpertWeights e =
      t.Expert(layer.name + ".ffn.experts." + std::to_string(expert), c.dim, c.moe_inter_dim);
  DI_RETURN_IF_ERROR(t.Finish());
  return e;
}

WeightResidency ResolveResidency(WeightResidency requested, uint64_t tensor_bytes) {
  if (requested != WeightResidency::kAuto) return requested;
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  const double ram = pages > 0 && page > 0 ? static_cast<double>(pages) * page : 0.0;
  return static_cast<double>(tensor_bytes) < 0.5 * ram ? WeightResidency::kPacked
                                                       : WeightResidency::kMapped;
}

}  // namespace deepinfer::model
