#include "engine/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "engine/sampling/philox.h"
#include "engine/sampling/top_p_select.h"
#include "kernels/cpu/sampling_passes.h"

namespace deepinfer::engine {
namespace {

using kernels::ExpScanStats;
using kernels::GetSamplingKernels;
using kernels::kExpLevels;
using kernels::kLevelThreshold;
using kernels::MaxScanResult;
using kernels::SamplingKernels;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr int64_t kBlock = 64;  // kept tokens per block of the inverse-CDF walk

// Per-thread buffers, grown once to the vocabulary size (no allocation per token after that).
struct Scratch {
  std::vector<float> x;             // processed logits, then e in place
  std::vector<float> cand_e;        // candidates: e values ...
  std::vector<int32_t> cand_id;     // ... and their ids, ascending
  std::vector<float> select;        // TopPThreshold input ...
  std::vector<float> select_spare;  // ... and its scratch
  std::vector<double> block_mass;   // inverse-CDF block sums
  void Reserve(int64_t vocab) {
    const auto n = static_cast<size_t>(vocab) + 16;
    if (x.size() < n) {
      x.resize(n);
      cand_e.resize(n);
      cand_id.resize(n);
      select.resize(n);
      select_spare.resize(n);
      block_mass.resize(n / kBlock + 1);
    }
  }
};

Scratch& ThreadScratch(int64_t vocab) {
  thread_local Scratch scratch;
  scratch.Reserve(vocab);
  return scratch;
}

const SamplingKernels& Kernels() {
  static const SamplingKernels& kernels = GetSamplingKernels(ActiveCpuLevel());
  return kernels;
}

Status BadId(const char* what, int64_t id, int64_t vocab) {
  return InvalidArgument(std::string(what) + " token id " + std::to_string(id) +
                         " outside the vocabulary [0, " + std::to_string(vocab) + ")");
}

// Steps 1-3 of the order in sampler.h, into x. Masking first is equivalent: -inf stays -inf
// under every bias and penalty (biases and penalties are finite, validated).
Status ProcessLogits(const float* logits, int64_t vocab, const SamplingParams& params,
                     const TokenHistory& history, const uint32_t* allowed_bits,
                     std::span<const int32_t> suppressed, float* x) {
  Kernels().masked_copy({logits, allowed_bits, vocab, x});
  for (const auto& [id, bias] : params.logit_bias) {
    x[id] += bias;  // in range: Validate(vocab) checked the ids
  }
  if (params.repetition_penalty != 1.0f) {
    const float r = params.repetition_penalty;
    for (const auto& [id, count] : history.seen_counts()) {
      if (id < 0 || id >= vocab) return BadId("history", id, vocab);
      x[id] = x[id] > 0.0f ? x[id] / r : x[id] * r;
    }
  }
  if (params.frequency_penalty != 0.0f || params.presence_penalty != 0.0f) {
    for (const auto& [id, count] : history.generated_counts()) {
      if (id < 0 || id >= vocab) return BadId("history", id, vocab);
      x[id] -= params.frequency_penalty * static_cast<float>(count);
      x[id] -= params.presence_penalty;
    }
  }
  for (int32_t id : suppressed) {
    if (id < 0 || id >= vocab) return BadId("suppressed", id, vocab);
    x[id] = kNegInf;
  }
  return Status::Ok();
}

// The largest of the candidate thresholds (index into kLevelThreshold; kExpLevels = keep all)
// for which `sufficient` holds.
template <typename Pred>
int PickLevel(Pred sufficient) {
  for (int j = 0; j < kExpLevels; ++j) {
    if (sufficient(j)) return j;
  }
  return kExpLevels;
}

float LevelValue(int level) { return level < kExpLevels ? kLevelThreshold[level] : 0.0f; }

// The n_top entries of (e, id) with the largest e (ties: lower id first), as logprobs
// log(e) - log_z, into out->top; entries with e == 0 are left out. O(n): a selection of the
// n_top-th largest value (in `select`, room for n) bounds the entries that need sorting.
void FillTop(const float* e, const int32_t* ids, int64_t n, int n_top, double log_z, float* select,
             SampleResult* out) {
  out->top.clear();
  const int64_t k = std::min<int64_t>(n_top, n);
  if (k == 0) return;
  std::copy(e, e + n, select);
  std::nth_element(select, select + (k - 1), select + n, std::greater<float>());
  const float kth = select[k - 1];
  std::vector<int64_t> order;  // at most k plus the ties of the k-th value
  for (int64_t i = 0; i < n; ++i) {
    if (e[i] >= kth) order.push_back(i);
  }
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
    return e[a] != e[b] ? e[a] > e[b] : ids[a] < ids[b];
  });
  for (int64_t i = 0; i < k; ++i) {
    const int64_t c = order[i];
    if (e[c] == 0.0f) break;  // probability 0 (masked or underflowed): not listed
    out->top.push_back({ids[c], static_cast<float>(std::log(static_cast<double>(e[c])) - log_z)});
  }
}

// log_softmax at temperature 1 of x (destroyed: becomes e): the logprob of `token` and the
// n_top best tokens.
void LogSoftmaxTop(float* x, int64_t vocab, float max, int32_t token, int n_top, Scratch& s,
                   SampleResult* out) {
  ExpScanStats stats;
  Kernels().exp_scan({x, vocab, max, 1.0f, &stats});
  const double log_z = std::log(static_cast<double>(stats.sum));
  out->token = token;
  out->logprob = static_cast<float>(std::log(static_cast<double>(x[token])) - log_z);
  out->top.clear();
  if (n_top == 0) return;
  const float threshold =
      LevelValue(PickLevel([&](int j) { return stats.level_count[j] >= n_top; }));
  const int64_t n =
      Kernels().compact_at_least({x, vocab, threshold, s.cand_e.data(), s.cand_id.data()});
  FillTop(s.cand_e.data(), s.cand_id.data(), n, n_top, log_z, s.select.data(), out);
}

// Step 5 of sampler.h on x (destroyed), whose maximum is `max`.
void SampleTruncated(float* x, int64_t vocab, float max, const SamplingParams& params,
                     double uniform, Scratch& s, SampleResult* out) {
  const bool top_k_on = params.top_k > 0 && params.top_k < vocab;
  const bool top_p_on = params.top_p < 1.0f;
  const bool min_p_on = params.min_p > 0.0f;
  ExpScanStats stats;
  Kernels().exp_scan({x, vocab, max, 1.0f / params.temperature, &stats});

  // Candidates: every e >= a threshold that cannot exceed the final keep threshold.
  const int level = PickLevel([&](int j) {
    if (top_k_on) return stats.level_count[j] >= params.top_k;  // the top_k set lies inside
    if (top_p_on) return stats.level_mass[j] >= params.top_p * stats.sum;  // the top_p prefix
    return min_p_on && params.min_p >= kLevelThreshold[j];
  });
  float* cand_e = s.cand_e.data();
  int32_t* cand_id = s.cand_id.data();
  // (min_p alone needs no candidates: its threshold is known.)
  const int64_t n_cand =
      top_k_on || top_p_on
          ? Kernels().compact_at_least({x, vocab, LevelValue(level), cand_e, cand_id})
          : 0;

  float keep = 0.0f;  // keep e >= keep (and e > 0)
  if (top_k_on && n_cand >= params.top_k) {
    float* sel = s.select.data();
    std::copy(cand_e, cand_e + n_cand, sel);
    std::nth_element(sel, sel + (params.top_k - 1), sel + n_cand, std::greater<float>());
    keep = sel[params.top_k - 1];
  }
  if (top_p_on) {
    float* sel = s.select.data();
    int64_t n_sel = 0;
    double top_k_mass = 0.0;
    if (top_k_on) {
      for (int64_t i = 0; i < n_cand; ++i) {
        if (cand_e[i] >= keep) {
          sel[n_sel++] = cand_e[i];
          top_k_mass += cand_e[i];
        }
      }
    } else {
      std::copy(cand_e, cand_e + n_cand, sel);
      n_sel = n_cand;
    }
    // Without top_k the top_p set is measured against the whole vocabulary's mass.
    const double total = top_k_on ? top_k_mass : static_cast<double>(stats.sum);
    keep = std::max(keep, TopPThreshold(sel, n_sel, params.top_p * total, s.select_spare.data()));
  }
  if (min_p_on) keep = std::max(keep, params.min_p);  // the most likely token has e = 1

  // The kept set in ascending id order (a vector pass over the row; e > 0 is e >= the smallest
  // subnormal), and the mass of each block of kBlock kept tokens. The inverse CDF walks the
  // blocks, then the tokens of the chosen block: O(n / kBlock + kBlock) sequential adds.
  const int64_t n_kept = Kernels().compact_at_least(
      {x, vocab, std::max(keep, std::numeric_limits<float>::denorm_min()), cand_e, cand_id});
  CHECK(n_kept > 0) << "the most likely token (e = 1) is always kept";
  const int64_t n_blocks = (n_kept + kBlock - 1) / kBlock;
  double* block_mass = s.block_mass.data();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t end = std::min(n_kept, (b + 1) * kBlock);
    double m = 0.0;
    for (int64_t i = b * kBlock; i < end; ++i) m += cand_e[i];
    block_mass[b] = m;
  }
  double kept_mass = 0.0;
  for (int64_t b = 0; b < n_blocks; ++b) kept_mass += block_mass[b];
  const double target = uniform * kept_mass;
  // Rounding fallbacks (target at the very top of a sum): the last block, its last token.
  int64_t block = n_blocks - 1;
  double cum = 0.0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    if (cum + block_mass[b] > target) {
      block = b;
      break;
    }
    cum += block_mass[b];
  }
  const int64_t block_end = std::min(n_kept, (block + 1) * kBlock);
  int64_t chosen = block_end - 1;
  for (int64_t i = block * kBlock; i < block_end; ++i) {
    cum += cand_e[i];
    if (cum > target) {
      chosen = i;
      break;
    }
  }
  const double log_z = std::log(kept_mass);
  out->token = cand_id[chosen];
  out->logprob = static_cast<float>(std::log(static_cast<double>(cand_e[chosen])) - log_z);
  out->top.clear();
  if (params.logprobs && params.top_logprobs > 0) {
    FillTop(cand_e, cand_id, n_kept, params.top_logprobs, log_z, s.select.data(), out);
  }
}

// SampleOne once `params` has passed Validate(vocab).
Status SampleValidated(const float* logits, int64_t vocab, const SamplingParams& params,
                       const TokenHistory& history, uint64_t seed, int64_t sample_index,
                       int64_t position, const uint32_t* allowed_bits,
                       std::span<const int32_t> suppressed, SampleResult* out) {
  if (vocab <= 0 || vocab > std::numeric_limits<int32_t>::max()) {
    return InvalidArgument("vocabulary size " + std::to_string(vocab) + " out of range");
  }
  if (sample_index < 0 || sample_index > int64_t{0xFFFFFFFF} || position < 0) {
    return InvalidArgument("sample_index " + std::to_string(sample_index) +
                           " must be in [0, 2^32)" + " and position " + std::to_string(position) +
                           " >= 0");
  }
  Scratch& s = ThreadScratch(vocab);
  float* x = s.x.data();
  DI_RETURN_IF_ERROR(ProcessLogits(logits, vocab, params, history, allowed_bits, suppressed, x));
  const MaxScanResult max = Kernels().scan_max(x, vocab);
  if (max.non_finite) return Internal("logits hold NaN or +inf");
  if (max.max == kNegInf) {
    return InvalidArgument("no token can be sampled: every token is masked or suppressed");
  }
  const int n_top = params.logprobs ? params.top_logprobs : 0;
  if (params.greedy()) {
    const auto token = static_cast<int32_t>(Kernels().first_index_of(x, vocab, max.max));
    if (!params.logprobs) {  // the exp pass is most of the greedy cost: skip it when not asked
      out->token = token;
      out->logprob = 0.0f;
      out->top.clear();
      return Status::Ok();
    }
    LogSoftmaxTop(x, vocab, max.max, token, n_top, s, out);
    return Status::Ok();
  }
  const double uniform = PhiloxUniformDouble(seed, sample_index, position, 0);
  SampleTruncated(x, vocab, max.max, params, uniform, s, out);
  return Status::Ok();
}

}  // namespace

Status SampleOne(const float* logits, int64_t vocab, const SamplingParams& params,
                 const TokenHistory& history, uint64_t seed, int64_t sample_index, int64_t position,
                 const uint32_t* allowed_bits, std::span<const int32_t> suppressed,
                 SampleResult* out) {
  if (vocab > 0) DI_RETURN_IF_ERROR(params.Validate(vocab));
  return SampleValidated(logits, vocab, params, history, seed, sample_index, position, allowed_bits,
                         suppressed, out);
}

Status SampleValidatedRow(const SampleRow& row, int64_t vocab, SampleResult* out) {
  static const TokenHistory kEmpty;
  return SampleValidated(row.logits, vocab, *row.params,
                         row.history != nullptr ? *row.history : kEmpty, row.seed, row.sample_index,
                         row.position, row.allowed_bits, row.suppressed, out);
}

std::vector<Status> SampleBatch(std::span<const SampleRow> rows, int64_t vocab,
                                std::span<SampleResult> out, ThreadPool* pool) {
  CHECK_EQ(rows.size(), out.size()) << "SampleBatch: one result per row";
  std::vector<Status> status(rows.size());
  ThreadPool& threads = pool != nullptr ? *pool : ThreadPool::Default();
  threads.ParallelFor(static_cast<int64_t>(rows.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      status[r] = SampleValidatedRow(rows[r], vocab, &out[r]);
    }
  });
  return status;
}

Status ComputePromptLogprobs(const float* logits, int64_t n_rows, int64_t row_stride, int64_t vocab,
                             std::span<const int32_t> next_ids, int k, std::span<SampleResult> out,
                             ThreadPool* pool) {
  if (static_cast<int64_t>(next_ids.size()) != n_rows ||
      static_cast<int64_t>(out.size()) != n_rows) {
    return InvalidArgument("ComputePromptLogprobs: next_ids and out need one entry per row");
  }
  if (k < 0 || k > kMaxTopLogprobs) {
    return InvalidArgument("prompt_logprobs k = " + std::to_string(k) + " outside [0, 20]");
  }
  if (vocab <= 0 || row_stride < vocab) return InvalidArgument("bad vocab / row_stride");
  for (int64_t r = 0; r < n_rows; ++r) {
    if (next_ids[r] < 0 || next_ids[r] >= vocab) return BadId("prompt", next_ids[r], vocab);
  }
  std::vector<Status> status(static_cast<size_t>(n_rows));
  ThreadPool& threads = pool != nullptr ? *pool : ThreadPool::Default();
  threads.ParallelFor(n_rows, 1, [&](int64_t begin, int64_t end) {
    Scratch& s = ThreadScratch(vocab);
    for (int64_t r = begin; r < end; ++r) {
      float* x = s.x.data();
      Kernels().masked_copy({logits + r * row_stride, nullptr, vocab, x});
      const MaxScanResult max = Kernels().scan_max(x, vocab);
      if (max.non_finite || max.max == kNegInf) {
        status[r] = Internal("prompt logits of row " + std::to_string(r) +
                             " hold NaN or +inf, or are all -inf");
        continue;
      }
      LogSoftmaxTop(x, vocab, max.max, next_ids[r], k, s, &out[r]);
    }
  });
  for (const Status& st : status) DI_RETURN_IF_ERROR(st);
  return Status::Ok();
}

}  // namespace deepinfer::engine
