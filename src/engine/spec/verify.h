// Speculative sampling (DSpark paper §3; Leviathan et al. 2023): verification of one draft.
//
// A draft x sampled from the draft distribution q is accepted with probability
// min(1, p(x) / q(x)) under the target distribution p; on rejection the token is drawn from the
// residual max(0, p - q) / Σ max(0, p - q). The emitted token then follows p exactly.
// With a deterministic draft (q a point mass on x) this is: accept with probability p(x), else
// draw from p without x, which is the same as drawing y ~ p and accepting iff y == x. The engine
// uses that form for every deterministic draft (the DSpark runner's: greedy, or coupled to the
// sampler's uniform, spec_decoder.h): y is the very token the sampler draws without speculation
// (its uniform is keyed by position), so outputs do not depend on drafts.
//
// The random numbers of the general form come from Philox at the token's draw site (seed,
// sample_index, position) on lanes the sampler does not use: kAcceptLane, kResampleLane.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/sampling/sampling_params.h"
#include "engine/sampling/token_history.h"

namespace deepinfer::engine::spec {

inline constexpr uint32_t kAcceptLane = 2;    // PhiloxUniformDouble lane of the accept test
inline constexpr uint32_t kResampleLane = 4;  // ... and of the residual draw

// The distribution the sampler draws from (sampler.h steps 1-5: logit_bias, penalties, mask and
// suppression, temperature, top_k / top_p / min_p), in double precision, into p[vocab].
// Greedy parameters give a point mass on the first maximum.
Status TargetDistribution(const float* logits, int64_t vocab, const SamplingParams& params,
                          const TokenHistory& history, const uint32_t* allowed_bits,
                          std::span<const int32_t> suppressed, std::vector<double>* p);

struct DraftVerdict {
  bool accepted = false;
  int32_t token = -1;  // the draft when accepted, else the residual draw
};

// The general rule for a draft `draft` sampled from q[vocab] (q[draft] > 0), target p[vocab],
// with uniforms u_accept and u_resample in [0, 1).
DraftVerdict VerifyDraft(std::span<const double> p, std::span<const float> q, int32_t draft,
                         double u_accept, double u_resample);

}  // namespace deepinfer::engine::spec
