#include "model/deepseek_v41/model.h"

#include <malloc.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "core/bf16.h"
#include "core/check.h"
#include "core/phase_timer.h"
#include "core/thread_pool.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "model/deepseek_v41/attention.h"
#include "model/deepseek_v41/block.h"
#include "model/deepseek_v41/decoder_replay.h"
#include "model/deepseek_v41/engram.h"
#include "model/deepseek_v41/mhc.h"
#include "model/deepseek_v41/weight_manifest.h"

namespace deepinfer::model {

StatusOr<std::unique_ptr<Model>> Model::Load(const std::string& dir, const LoadOptions& options) {
  // A forward pass allocates activation buffers of many MB per call. By default glibc serves
  // them with fresh mmaps and returns them on free, so every call pays page faults and kernel
  // zeroing (expensive in a VM); keep such blocks in the heap for reuse instead. One arena: a
  // thread other than the main one (the engine runs the forward on a worker thread) otherwise
  // gets its own arena, whose heaps are capped at 64 MB, so its larger buffers (the 168 MB hc
  // input of a 2048-row prefill) were fresh mmaps again: measured, a 2048-token prefill through
  // the engine took 36.7 s against 19.6 s with one arena.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_ARENA_MAX, 1);
  std::unique_ptr<Model> m(new Model());
  m->pool_ = options.pool ? options.pool : &ThreadPool::Default();
  DI_ASSIGN_OR_RETURN(m->config_, LoadModelConfig(dir));
  m->layers_ = BuildLayerDescriptors(m->config_);
  m->index_keys_ = IndexKeySchedule(m->layers_);
  DI_ASSIGN_OR_RETURN(io::Checkpoint ck, io::Checkpoint::Open(dir));
  m->checkpoint_ = std::make_unique<io::Checkpoint>(std::move(ck));
  // Every tensor's name, dtype, shape and block layout against the released layout: one error
  // lists all missing, unexpected and mismatched tensors.
  DI_RETURN_IF_ERROR(ValidateCheckpoint(*m->checkpoint_, m->config_));
  m->residency_ = options.residency;
  DI_ASSIGN_OR_RETURN(m->weights_,
                      LoadModelWeights(*m->checkpoint_, m->config_, m->layers_, options.residency,
                                       *m->pool_, options.hold_expert));
  DI_ASSIGN_OR_RETURN(m->engram_plan_, BuildEngramHashPlan(m->config_));
  if (!m->config_.engram_layer_ids.empty()) {
    DI_RETURN_IF_ERROR(CheckEngramNumEmbeddings(m->engram_plan_, m->config_));
    const std::string map_path = dir + "/engram_token_map.json";
    if (std::filesystem::exists(map_path)) {
      DI_ASSIGN_OR_RETURN(m->token_map_, LoadEngramTokenMap(map_path, m->config_));
    } else if (options.engram_token_map) {
      DI_RETURN_IF_ERROR(ValidateEngramTokenMap(*options.engram_token_map, m->config_));
      m->token_map_ = *options.engram_token_map;
    } else {
      return InvalidArgument(dir +
                             ": the model has Engram layers but no engram_token_map.json, and "
                             "no tokenizer-derived map was given");
    }
  }
  for (const LayerDescriptor& d : m->layers_) {
    kernels::RopeConfig rc;
    rc.rope_dim = m->config_.rope_head_dim;
    rc.theta = d.rope_theta;
    if (d.yarn) {
      rc.original_seq_len = m->config_.yarn.original_seq_len;
      rc.factor = m->config_.yarn.factor;
      rc.beta_fast = m->config_.yarn.beta_fast;
      rc.beta_slow = m->config_.yarn.beta_slow;
    }
    m->rope_freqs_.push_back(kernels::BuildRopeFrequencies(rc));
  }
  return m;
}

void Model::ApplyEngramLayer(int layer, const int64_t* hash_ids, int64_t rows,
                             uint16_t* stream) const {
  const LayerWeights& w = weights_.layers[layer];
  CHECK(w.engram.has_value()) << "layer " << layer << " has no Engram";
  ApplyEngram(config_, *w.engram, hash_ids, rows, stream, *pool_);
}

StatusOr<StagedExperts> Model::StageExperts(int layer, std::span<const uint8_t> held) const {
  if (layer < 0 || layer >= static_cast<int>(layers_.size())) {
    return InvalidArgument("no layer " + std::to_string(layer));
  }
  const std::vector<ExpertWeights>& experts =
      weights_.layers[static_cast<size_t>(layer)].moe.experts;
  if (held.size() != experts.size()) {
    return InvalidArgument("layer " + std::to_string(layer) + " has " +
                           std::to_string(experts.size()) + " routed experts, not " +
                           std::to_string(held.size()));
  }
  StagedExperts staged;
  staged.layer = layer;
  staged.held.assign(held.begin(), held.end());
  for (size_t e = 0; e < experts.size(); ++e) {
    // Reads held flags only: AdoptExperts, the one writer, runs on the caller's thread between
    // forwards, never while a stage is in flight for the same model.
    if (held[e] == 0 || experts[e].held()) continue;
    DI_ASSIGN_OR_RETURN(ExpertWeights w, LoadExpertWeights(*checkpoint_, config_,
                                                           layers_[static_cast<size_t>(layer)],
                                                           static_cast<int64_t>(e), residency_));
    staged.loaded.emplace_back(e, std::move(w));
  }
  return staged;
}

void Model::AdoptExperts(StagedExperts staged) {
  std::vector<ExpertWeights>& experts =
      weights_.layers[static_cast<size_t>(staged.layer)].moe.experts;
  for (auto& [e, w] : staged.loaded) experts[e] = std::move(w);
  for (size_t e = 0; e < experts.size(); ++e) {
    if (staged.held[e] == 0) experts[e] = ExpertWeights{};
  }
}

Status Model::HoldExperts(int layer, std::span<const uint8_t> held) {
  DI_ASSIGN_OR_RETURN(StagedExperts staged, StageExperts(layer, held));
  AdoptExperts(std::move(staged));
  return Status::Ok();
}

Status Model::ForwardPass(std::span<const ForwardInput> inputs, const ForwardOptions& options,
                          ForwardOutput* out) const {
  const ModelConfig& c = config_;
  const int64_t dim = c.dim, hc = c.hc_mult, vocab = c.vocab_size;
  BatchContext ctx;
  ctx.config = &config_;
  ctx.layers = &layers_;
  ctx.weights = &weights_;
  ctx.pool = pool_;
  ctx.experts = experts_;
  ctx.index_key_mode = options.index_key_mode;
  ctx.index_keys = &index_keys_;
  ctx.rope_freqs = &rope_freqs_;
  for (const ForwardInput& in : inputs) {  // validated by Forward
    DI_RETURN_IF_ERROR(
        EnsurePages(in.state, in.state->length + static_cast<int64_t>(in.tokens.size())));
    Segment seg;
    seg.state = in.state;
    seg.row0 = ctx.n_rows;
    seg.n_rows = static_cast<int64_t>(in.tokens.size());
    seg.pos0 = in.state->length;
    for (int64_t r = 0; r < seg.n_rows; ++r) {
      ctx.positions.push_back(seg.pos0 + r);
    }
    ctx.n_rows += seg.n_rows;
    ctx.segments.push_back(seg);
  }
  const int64_t rows = ctx.n_rows;
  ctx.topk.assign(layers_.size(), {});
  // Decoder-side bounded replay: the first row each input keeps after the last KV source.
  const std::vector<Segment> segments = ctx.segments;  // as called (before any narrowing)
  DI_ASSIGN_OR_RETURN(const ReplayPlan replay,
                      PlanDecoderReplay(layers_, c.n_layers, inputs, options));

  // Phases of the whole call and of its parts outside the blocks (DEEPINFER_PROFILE=1), so that
  // time outside every named phase shows up as forward minus the rest.
  std::optional<ScopedPhase> phase_prologue;
  phase_prologue.emplace("forward.hash+embed");
  // Engram hash ids [rows][engram layers][cols].
  const int n_eng = engram_plan_.n_layers();
  const int64_t n_cols = n_eng ? engram_plan_.n_cols() : 0;
  std::vector<int64_t> hashes(rows * n_eng * n_cols);
  if (n_eng) {
    for (size_t s = 0; s < inputs.size(); ++s) {
      HashTokens(engram_plan_, token_map_, inputs[s].tokens, &inputs[s].state->engram_history,
                 hashes.data() + ctx.segments[s].row0 * n_eng * n_cols);
    }
  }

  // Embedding, expanded to hc copies; the first collapse takes copy 0.
  std::vector<uint16_t> x(rows * hc * dim);
  std::vector<float> pre(rows * hc, 0.0f);
  for (size_t s = 0; s < inputs.size(); ++s) {
    for (int64_t r = 0; r < ctx.segments[s].n_rows; ++r) {
      const int64_t row = ctx.segments[s].row0 + r;
      const uint16_t* e = weights_.embed + static_cast<int64_t>(inputs[s].tokens[r]) * dim;
      for (int64_t k = 0; k < hc; ++k) std::copy_n(e, dim, x.data() + (row * hc + k) * dim);
      pre[row * hc] = 1.0f;
    }
  }

  const int64_t n_taps = static_cast<int64_t>(c.dspark_target_layer_ids.size());
  if (options.want_taps) out->taps.assign(rows * n_taps * dim, 0);
  std::vector<int64_t> layer_hash(rows * n_cols);
  // The rows the blocks run on: all of them, or after decoder-side replay narrows the batch,
  // the kept ones (row_map: their rows in the call's batch).
  int64_t cur_rows = rows;
  std::vector<int64_t> row_map(rows);
  for (int64_t r = 0; r < rows; ++r) row_map[r] = r;
  phase_prologue.reset();
  for (int li = 0; li < c.n_layers; ++li) {
    const LayerDescriptor& d = layers_[li];
    if (replay.active && li == replay.first_layer) {
      NarrowForDecoderReplay(replay, segments, li, &ctx, &row_map, &x, &pre);
      cur_rows = ctx.n_rows;
      if (cur_rows == 0) break;  // every row skips the remaining layers
    }
    if (d.has_engram()) {
      for (int64_t r = 0; r < cur_rows; ++r) {
        std::copy_n(hashes.data() + (row_map[r] * n_eng + d.engram_index) * n_cols, n_cols,
                    layer_hash.data() + r * n_cols);
      }
      ApplyEngramLayer(li, layer_hash.data(), cur_rows, x.data());
    }
    if (options.hooks && options.hooks->before_block) {
      options.hooks->before_block(li, x.data(), pre.data(), cur_rows);
    }
    if (options.want_taps && d.is_dspark_tap()) {
      for (int64_t r = 0; r < cur_rows; ++r) {
        uint16_t* t = out->taps.data() + (row_map[r] * n_taps + d.dspark_tap_slot) * dim;
        for (int64_t i = 0; i < dim; ++i) {
          float sum = 0.0f;
          for (int64_t k = 0; k < hc; ++k) sum += Bf16ToFloat(x[(r * hc + k) * dim + i]);
          t[i] = FloatToBf16(sum / static_cast<float>(hc));
        }
      }
    }
    AttentionFn attn = [&](const uint16_t* in, uint16_t* o) { RunAttention(&ctx, li, in, o); };
    RunBlock(ctx, li, attn, x.data(), pre.data());
    if (options.hooks && options.hooks->after_block) {
      options.hooks->after_block(li, x.data(), pre.data(), cur_rows);
    }
  }

  ScopedPhase phase_head("head");
  // Final collapse, norm, fp32 head. Rows decoder-side replay skipped keep a zero hidden.
  out->final_hidden.assign(rows * dim, 0);
  if (cur_rows == rows) {
    HcCollapse(c, x.data(), pre.data(), rows, out->final_hidden.data(), pool_);
  } else if (cur_rows > 0) {
    std::vector<uint16_t> kept(cur_rows * dim);
    HcCollapse(c, x.data(), pre.data(), cur_rows, kept.data(), pool_);
    for (int64_t r = 0; r < cur_rows; ++r) {
      std::copy_n(kept.data() + r * dim, dim, out->final_hidden.data() + row_map[r] * dim);
    }
  }
  out->logit_rows.clear();
  for (size_t s = 0; s < segments.size(); ++s) {
    const Segment& seg = segments[s];
    if (options.all_logits) {
      for (int64_t r = 0; r < seg.n_rows; ++r) out->logit_rows.push_back(seg.row0 + r);
    } else if (inputs[s].want_logits) {
      const int64_t n = std::clamp<int64_t>(inputs[s].logits_rows, 1, seg.n_rows);
      for (int64_t r = seg.n_rows - n; r < seg.n_rows; ++r) out->logit_rows.push_back(seg.row0 + r);
    }
  }
  const int64_t n_logit = static_cast<int64_t>(out->logit_rows.size());
  std::vector<uint16_t> normed(n_logit * dim);
  for (int64_t i = 0; i < n_logit; ++i) {
    std::copy_n(out->final_hidden.data() + out->logit_rows[i] * dim, dim, normed.data() + i * dim);
  }
  kernels::RmsNormInPlace(weights_.norm, normed.data(), n_logit, dim, c.norm_eps);
  // The reference's fp32 head on bf16 values: the products are exact in fp32, so the bf16 GEMM
  // with fp32 output computes the same sums (in its own order).
  // The GEMM writes every element: a buffer the caller passes in (its previous call's) is only
  // resized, not cleared (2 MB of zeroes per 4-row verify step of a 129,280-id head).
  out->logits.resize(static_cast<size_t>(n_logit * vocab));
  kernels::GemmBf16(weights_.head.bf16(), vocab, dim, dim, normed.data(), n_logit, dim,
                    out->logits.data(), DType::kF32, vocab, pool_);

  ScopedPhase phase_seal("forward.seal");
  for (size_t s = 0; s < inputs.size(); ++s) {
    SequenceState& st = *inputs[s].state;
    st.length += static_cast<int64_t>(inputs[s].tokens.size());
    st.tokens.insert(st.tokens.end(), inputs[s].tokens.begin(), inputs[s].tokens.end());
    SealCompletePages(&st, segments[s].pos0);
  }
  return Status::Ok();
}

}  // namespace deepinfer::model
