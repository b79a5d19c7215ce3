#include "tools/eval_golden.h"

#include <algorithm>
#include <cstring>

#include "core/bf16.h"
#include "io/checkpoint.h"
#include "io/json_file.h"
#include "nlohmann/json.hpp"

namespace deepinfer::tools {
namespace {

using model::ForwardInput;
using model::ForwardOptions;
using model::ForwardOutput;
using model::Model;
using model::SequenceState;

// Owns its JSON; building one can throw only std::bad_alloc.
class Golden {  // NOLINT(bugprone-exception-escape)
 public:
  static StatusOr<Golden> Open(const std::string& dir) {
    Golden g;
    DI_ASSIGN_OR_RETURN(g.json_, io::LoadJsonFile(dir + "/golden.json"));
    DI_ASSIGN_OR_RETURN(io::Checkpoint ck, io::Checkpoint::Open(dir + "/golden.safetensors"));
    g.file_ = std::make_unique<io::Checkpoint>(std::move(ck));
    return g;
  }
  const nlohmann::json& json() const { return json_; }
  bool Has(const std::string& name) const { return file_->Find(name) != nullptr; }
  StatusOr<std::vector<float>> F32(const std::string& name) const {
    DI_ASSIGN_OR_RETURN(TensorView t, file_->Get(name));
    if (t.dtype != DType::kF32) return InvalidArgument(name + ": expected F32");
    auto s = t.As<float>();
    return std::vector<float>(s.begin(), s.end());
  }
  StatusOr<std::vector<int64_t>> I64(const std::string& name) const {
    DI_ASSIGN_OR_RETURN(TensorView t, file_->Get(name));
    if (t.dtype != DType::kI64) return InvalidArgument(name + ": expected I64");
    auto s = t.As<int64_t>();
    return std::vector<int64_t>(s.begin(), s.end());
  }
  // bf16 values stored as F32 (exact) -> bf16 bits.
  StatusOr<std::vector<uint16_t>> Bf16(const std::string& name) const {
    DI_ASSIGN_OR_RETURN(std::vector<float> f, F32(name));
    std::vector<uint16_t> b(f.size());
    for (size_t i = 0; i < f.size(); ++i) b[i] = FloatToBf16(f[i]);
    return b;
  }

 private:
  nlohmann::json json_;
  std::unique_ptr<io::Checkpoint> file_;
};

int32_t ArgMax(const float* v, int64_t n) {
  return static_cast<int32_t>(std::max_element(v, v + n) - v);
}

// One forward of `tokens` on `state`.
Status Run(const Model& m, SequenceState* state, std::span<const int32_t> tokens,
           const ForwardOptions& opt, ForwardOutput* out) {
  ForwardInput in{state, tokens};
  return m.Forward(std::span<const ForwardInput>(&in, 1), opt, out);
}

struct Dims {
  int64_t P, D, G, T, V, dim, hc, L, block, taps;
};

// Protocol 1: free running, plus the prompt debug tensors and DSpark during the decode run.
Status FreeRunning(const Model& m, const Golden& g, const std::vector<int32_t>& ids,
                   const std::string& mode, model::IndexKeyMode km, const Dims& d,
                   TensorBundle* out) {
  const auto& modes = g.json()["modes"][mode];
  ForwardOptions opt;
  opt.index_key_mode = km;
  opt.all_logits = true;
  opt.want_taps = m.config().dspark_enabled();
  std::vector<uint16_t> s0, s1;
  model::ForwardHooks hooks;
  hooks.after_block = [&](int layer, const uint16_t* x, const float*, int64_t rows) {
    if (layer == 0) s0.assign(x, x + rows * d.hc * d.dim);
    if (layer == 1) s1.assign(x, x + rows * d.hc * d.dim);
  };
  opt.hooks = &hooks;

  SequenceState seq = m.NewSequence();
  ForwardOutput fo;
  DI_RETURN_IF_ERROR(Run(m, &seq, std::span(ids).first(d.P), opt, &fo));
  out->AddF32("prefill_logits", {d.P, d.V}, fo.logits);
  out->AddBf16AsF32("debug.stream_after_block0", {d.P, d.hc, d.dim}, s0);
  out->AddBf16AsF32("debug.stream_after_block1", {d.P, d.hc, d.dim}, s1);
  out->AddBf16AsF32("debug.final_hidden", {d.P, d.dim}, fo.final_hidden);
  opt.hooks = nullptr;

  const bool dspark = m.config().dspark_enabled();
  if (dspark) DI_RETURN_IF_ERROR(m.DSparkExtend(&seq, fo.taps.data(), d.P));
  std::vector<float> dec(d.D * d.V), conf, dlog;
  std::vector<int64_t> dids;
  std::vector<uint16_t> dhid;
  for (int64_t k = 0; k < d.D; ++k) {
    DI_RETURN_IF_ERROR(Run(m, &seq, std::span(ids).subspan(d.P + k, 1), opt, &fo));
    std::copy_n(fo.logits.data(), d.V, dec.data() + k * d.V);
    if (dspark) {
      DI_RETURN_IF_ERROR(m.DSparkExtend(&seq, fo.taps.data(), 1));
      DI_ASSIGN_OR_RETURN(model::DraftOutput dr, m.DSparkDraft(seq, ArgMax(fo.logits.data(), d.V)));
      dids.insert(dids.end(), dr.ids.begin(), dr.ids.end());
      conf.insert(conf.end(), dr.confidence.begin(), dr.confidence.end());
      dlog.insert(dlog.end(), dr.logits.begin(), dr.logits.end());
      dhid.insert(dhid.end(), dr.hidden.begin(), dr.hidden.end());
    }
  }
  out->AddF32(modes["decode_logits"], {d.D, d.V}, dec);
  if (dspark) {
    out->AddI64(modes["dspark_draft_ids"], {d.D, d.block + 1}, dids);
    out->AddF32(modes["dspark_confidence_logits"], {d.D, d.block}, conf);
    out->AddF32(modes["dspark_logits"], {d.D, d.block, d.V}, dlog);
    if (modes.contains("dspark_hidden")) {
      out->AddBf16AsF32(modes["dspark_hidden"], {d.D, d.block, d.dim}, dhid);
    }
  }

  // Full prefill.
  opt.want_taps = false;
  SequenceState full = m.NewSequence();
  DI_RETURN_IF_ERROR(Run(m, &full, ids, opt, &fo));
  out->AddF32("full_logits", {d.T, d.V}, fo.logits);

  // Greedy: own ids; logits when fed the golden's greedy ids.
  opt.all_logits = false;
  std::vector<int64_t> greedy;
  {
    SequenceState s = m.NewSequence();
    DI_RETURN_IF_ERROR(Run(m, &s, std::span(ids).first(d.P), opt, &fo));
    for (int64_t i = 0; i < d.G; ++i) {
      const int32_t t = ArgMax(fo.logits.data(), d.V);
      greedy.push_back(t);
      if (i + 1 < d.G) DI_RETURN_IF_ERROR(Run(m, &s, std::span(&t, 1), opt, &fo));
    }
  }
  out->AddI64(modes["greedy_ids"], {d.G}, greedy);
  DI_ASSIGN_OR_RETURN(std::vector<int64_t> golden_greedy, g.I64(modes["greedy_ids"]));
  std::vector<float> gl(d.G * d.V);
  {
    SequenceState s = m.NewSequence();
    DI_RETURN_IF_ERROR(Run(m, &s, std::span(ids).first(d.P), opt, &fo));
    for (int64_t i = 0; i < d.G; ++i) {
      std::copy_n(fo.logits.data(), d.V, gl.data() + i * d.V);
      if (i + 1 < d.G) {
        const int32_t t = static_cast<int32_t>(golden_greedy[i]);
        DI_RETURN_IF_ERROR(Run(m, &s, std::span(&t, 1), opt, &fo));
      }
    }
  }
  out->AddF32(modes["greedy_logits"], {d.G, d.V}, gl);

  // Engram hash ids of the whole input.
  const auto& plan = m.engram_plan();
  if (plan.n_layers() > 0) {
    std::vector<int64_t> h(d.T * plan.n_layers() * plan.n_cols());
    model::EngramHistory hist;
    model::HashTokens(plan, m.engram_token_map(), ids, &hist, h.data());
    out->AddI64("debug.engram_hash_ids", {d.T, plan.n_layers(), plan.n_cols()}, h);
  }
  return Status::Ok();
}

// Protocol 2: every block fed the golden's input; its outputs and the logits collected.
Status TeacherForced(const Model& m, const Golden& g, const std::vector<int32_t>& ids,
                     const std::string& mode, model::IndexKeyMode km, const Dims& d,
                     TensorBundle* out) {
  const int64_t blk = d.hc * d.dim;
  DI_ASSIGN_OR_RETURN(std::vector<uint16_t> pin, g.Bf16("tf.prefill_block_in"));
  DI_ASSIGN_OR_RETURN(std::vector<float> ppre, g.F32("tf.prefill_block_pre_mix_in"));
  DI_ASSIGN_OR_RETURN(std::vector<uint16_t> din, g.Bf16(mode + ".tf.decode_block_in"));
  DI_ASSIGN_OR_RETURN(std::vector<float> dpre, g.F32(mode + ".tf.decode_block_pre_mix_in"));

  // Prefill: inputs [L][P][hc][dim]; decode step k: [D][L][hc][dim].
  int64_t step = -1;  // -1 = prefill
  std::vector<uint16_t> pout(d.L * d.P * blk), dout(d.D * d.L * blk);
  std::vector<float> ppout(d.L * d.P * d.hc), dpout(d.D * d.L * d.hc);
  model::ForwardHooks hooks;
  hooks.before_block = [&](int l, uint16_t* x, float* pre, int64_t rows) {
    if (step < 0) {
      std::copy_n(pin.data() + l * d.P * blk, rows * blk, x);
      std::copy_n(ppre.data() + l * d.P * d.hc, rows * d.hc, pre);
    } else {
      std::copy_n(din.data() + (step * d.L + l) * blk, blk, x);
      std::copy_n(dpre.data() + (step * d.L + l) * d.hc, d.hc, pre);
    }
  };
  hooks.after_block = [&](int l, const uint16_t* x, const float* pre, int64_t rows) {
    if (step < 0) {
      std::copy_n(x, rows * blk, pout.data() + l * d.P * blk);
      std::copy_n(pre, rows * d.hc, ppout.data() + l * d.P * d.hc);
    } else {
      std::copy_n(x, blk, dout.data() + (step * d.L + l) * blk);
      std::copy_n(pre, d.hc, dpout.data() + (step * d.L + l) * d.hc);
    }
  };
  ForwardOptions opt;
  opt.index_key_mode = km;
  opt.all_logits = true;
  opt.hooks = &hooks;
  SequenceState seq = m.NewSequence();
  ForwardOutput fo;
  DI_RETURN_IF_ERROR(Run(m, &seq, std::span(ids).first(d.P), opt, &fo));
  out->AddF32("tf.run.prefill_logits", {d.P, d.V}, fo.logits);
  std::vector<float> dec(d.D * d.V);
  for (step = 0; step < d.D; ++step) {
    DI_RETURN_IF_ERROR(Run(m, &seq, std::span(ids).subspan(d.P + step, 1), opt, &fo));
    std::copy_n(fo.logits.data(), d.V, dec.data() + step * d.V);
  }
  out->AddF32("tf.run." + mode + ".decode_logits", {d.D, d.V}, dec);
  out->AddBf16AsF32("tf.prefill_block_out", {d.L, d.P, d.hc, d.dim}, pout);
  out->AddF32("tf.prefill_block_pre_mix_out", {d.L, d.P, d.hc}, ppout);
  out->AddBf16AsF32(mode + ".tf.decode_block_out", {d.D, d.L, d.hc, d.dim}, dout);
  out->AddF32(mode + ".tf.decode_block_pre_mix_out", {d.D, d.L, d.hc}, dpout);

  // Engram check: the engine's Engram on the golden's input of each Engram layer.
  const auto& cfg = m.config();
  const auto& plan = m.engram_plan();
  if (plan.n_layers() > 0 && g.Has("tf.prefill_block_out")) {
    DI_ASSIGN_OR_RETURN(std::vector<uint16_t> gout, g.Bf16("tf.prefill_block_out"));
    std::vector<int64_t> h(d.P * plan.n_layers() * plan.n_cols());
    model::EngramHistory hist;
    model::HashTokens(plan, m.engram_token_map(), std::span(ids).first(d.P), &hist, h.data());
    std::vector<uint16_t> res;
    std::vector<int64_t> lh(d.P * plan.n_cols());
    for (int e = 0; e < plan.n_layers(); ++e) {
      const int l = cfg.engram_layer_ids[e];
      std::vector<uint16_t> x(d.P * blk);
      if (l == 0) {
        for (int64_t r = 0; r < d.P; ++r) {
          for (int64_t k = 0; k < d.hc; ++k) {
            std::copy_n(m.weights().embed + static_cast<int64_t>(ids[r]) * d.dim, d.dim,
                        x.data() + (r * d.hc + k) * d.dim);
          }
        }
      } else {
        std::copy_n(gout.data() + (l - 1) * d.P * blk, d.P * blk, x.data());
      }
      for (int64_t r = 0; r < d.P; ++r) {
        std::copy_n(h.data() + (r * plan.n_layers() + e) * plan.n_cols(), plan.n_cols(),
                    lh.data() + r * plan.n_cols());
      }
      m.ApplyEngramLayer(l, lh.data(), d.P, x.data());
      res.insert(res.end(), x.begin(), x.end());
    }
    out->AddBf16AsF32("tf.engram.prefill_block_in", {plan.n_layers(), d.P, d.hc, d.dim}, res);
  }
  return Status::Ok();
}

// Protocol 3: DSpark stages fed the golden's main hidden states.
Status DSparkTeacherForced(const Model& m, const Golden& g, const std::string& mode, const Dims& d,
                           TensorBundle* out) {
  const auto& modes = g.json()["modes"][mode];
  DI_ASSIGN_OR_RETURN(std::vector<uint16_t> prompt, g.Bf16("tf.dspark_prompt_main_hidden"));
  DI_ASSIGN_OR_RETURN(std::vector<uint16_t> steps, g.Bf16(mode + ".tf.dspark_main_hidden"));
  DI_ASSIGN_OR_RETURN(std::vector<int64_t> golden_ids, g.I64(modes["dspark_draft_ids"]));
  SequenceState seq = m.NewSequence();
  const int64_t tw = d.taps * d.dim;
  DI_RETURN_IF_ERROR(m.DSparkExtend(&seq, prompt.data(), d.P));
  std::vector<int64_t> ids;
  std::vector<float> conf, logits;
  std::vector<uint16_t> hidden;
  for (int64_t k = 0; k < d.D; ++k) {
    DI_RETURN_IF_ERROR(m.DSparkExtend(&seq, steps.data() + k * tw, 1));
    const auto t = static_cast<int32_t>(golden_ids[k * (d.block + 1)]);
    DI_ASSIGN_OR_RETURN(model::DraftOutput dr, m.DSparkDraft(seq, t));
    ids.insert(ids.end(), dr.ids.begin(), dr.ids.end());
    conf.insert(conf.end(), dr.confidence.begin(), dr.confidence.end());
    logits.insert(logits.end(), dr.logits.begin(), dr.logits.end());
    hidden.insert(hidden.end(), dr.hidden.begin(), dr.hidden.end());
  }
  const std::string p = "tf.run." + mode + ".";
  out->AddI64(p + "dspark_draft_ids", {d.D, d.block + 1}, ids);
  out->AddF32(p + "dspark_confidence_logits", {d.D, d.block}, conf);
  out->AddF32(p + "dspark_logits", {d.D, d.block, d.V}, logits);
  out->AddBf16AsF32(p + "dspark_hidden", {d.D, d.block, d.dim}, hidden);
  return Status::Ok();
}

}  // namespace

Status EvalGolden(const Model& m, const EvalGoldenOptions& options, TensorBundle* out) {
  model::IndexKeyMode km;
  if (options.mode == "official") {
    km = model::IndexKeyMode::kOfficial;
  } else if (options.mode == "owner") {
    km = model::IndexKeyMode::kOwner;
  } else {
    return InvalidArgument("--mode must be official or owner, not " + options.mode);
  }
  DI_ASSIGN_OR_RETURN(Golden g, Golden::Open(options.golden_dir));
  const nlohmann::json& j = g.json();
  if (!j.contains("modes") || !j["modes"].contains(options.mode)) {
    return InvalidArgument(options.golden_dir + "/golden.json has no mode " + options.mode);
  }
  const auto& run = j["run"];
  const auto& c = m.config();
  Dims d;
  d.P = run["prompt_len"];
  d.D = run["decode_steps"];
  d.G = run["greedy_tokens"];
  d.T = d.P + d.D;
  d.V = c.vocab_size;
  d.dim = c.dim;
  d.hc = c.hc_mult;
  d.L = c.n_layers;
  d.block = c.dspark_block_size;
  d.taps = static_cast<int64_t>(c.dspark_target_layer_ids.size());
  DI_ASSIGN_OR_RETURN(std::vector<int64_t> ids64, g.I64(j["modes"][options.mode]["input_ids"]));
  if (static_cast<int64_t>(ids64.size()) != d.T) {
    return InvalidArgument("input_ids has " + std::to_string(ids64.size()) + " tokens, run says " +
                           std::to_string(d.T));
  }
  std::vector<int32_t> ids(ids64.begin(), ids64.end());

  DI_RETURN_IF_ERROR(FreeRunning(m, g, ids, options.mode, km, d, out));
  if (g.Has("tf.prefill_block_in") && g.Has(options.mode + ".tf.decode_block_in")) {
    DI_RETURN_IF_ERROR(TeacherForced(m, g, ids, options.mode, km, d, out));
  }
  if (c.dspark_enabled() && g.Has("tf.dspark_prompt_main_hidden") &&
      g.Has(options.mode + ".tf.dspark_main_hidden")) {
    DI_RETURN_IF_ERROR(DSparkTeacherForced(m, g, options.mode, d, out));
  }
  return Status::Ok();
}

}  // namespace deepinfer::tools
