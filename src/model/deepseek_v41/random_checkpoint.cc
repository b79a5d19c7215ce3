#include "model/deepseek_v41/random_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "core/bf16.h"
#include "core/check.h"
#include "core/e4m3.h"
#include "core/splitmix64.h"
#include "core/thread_pool.h"
#include "core/ue8m0.h"
#include "io/progress.h"
#include "io/safetensors_writer.h"
#include "model/deepseek_v41/weight_manifest.h"

namespace deepinfer::model {

namespace {

// --- random streams ----------------------------------------------------------------------------

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001B3ull;
  return h;
}

// xoshiro256** (Blackman & Vigna), seeded through SplitMix64.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& w : s_) w = seed = SplitMix64(seed);
  }
  uint64_t Next() {
    const uint64_t r = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return r;
  }
  // N(0, 1), quantized to the 65536 quantile midpoints Phi^-1((i + 0.5) / 65536): four values
  // per 64-bit draw, ~10x cheaper than Box-Muller. |z| <= 4.3; the distribution's variance is 1
  // within 1e-4. Every weight is rounded to bf16 / e4m3 afterwards, far coarser than this grid.
  float Gaussian() {
    if (bits_left_ == 0) {
      bits_ = Next();
      bits_left_ = 4;
    }
    const uint16_t i = static_cast<uint16_t>(bits_);
    bits_ >>= 16;
    --bits_left_;
    return GaussianTable()[i];
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  // Phi^-1 at the 65536 midpoints, by Newton's method on erfc in double precision.
  static const float* GaussianTable() {
    static const std::vector<float> table = [] {
      std::vector<float> t(65536);
      for (int i = 0; i < 65536; ++i) {
        const double p = (i + 0.5) / 65536.0;
        double z = 0;
        for (int it = 0; it < 60; ++it) {
          const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
          const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2.0 * 3.14159265358979323846);
          const double step = (cdf - p) / pdf;
          z -= std::clamp(step, -1.0, 1.0);
          if (std::fabs(step) < 1e-13) break;
        }
        t[i] = static_cast<float>(z);
      }
      return t;
    }();
    return table.data();
  }

  uint64_t s_[4];
  uint64_t bits_ = 0;
  int bits_left_ = 0;
};

// --- per-weight geometry
// ---------------------------------------------------------------------------

constexpr int64_t kChunkElements = int64_t{1} << 20;  // rows per chunk ~ 1M elements (fixed)
constexpr uint64_t kBatchBytes = uint64_t{64} << 20;  // value bytes generated between writes

struct Geometry {
  int64_t rows = 1;  // 1-D tensors are one row
  int64_t cols = 1;
  uint64_t row_bytes = 0;  // on-disk value bytes per row
  int64_t scale_cols = 0;  // scale bytes per scale row (0: unquantized)
  int64_t rows_per_chunk = 0;
  int64_t n_chunks = 0;
  uint64_t scale_bytes = 0;
};

Geometry GeometryOf(const WeightSpec& w) {
  Geometry g;
  if (w.shape.size() == 2) {
    g.rows = w.shape[0];
    g.cols = w.shape[1];
  } else {
    for (int64_t d : w.shape) g.cols *= d;
  }
  switch (w.layout) {
    case WeightLayout::kBf16:
      g.row_bytes = 2 * g.cols;
      break;
    case WeightLayout::kF32:
      g.row_bytes = 4 * g.cols;
      break;
    case WeightLayout::kFp8Tile32:
    case WeightLayout::kFp8Row32:
      g.row_bytes = g.cols;
      break;
    case WeightLayout::kMxfp4:
      g.row_bytes = (g.cols + 1) / 2;
      break;
  }
  if (w.quantized()) g.scale_cols = (g.cols + 31) / 32;
  // Multiples of 32 rows so that FP8 tiles never straddle chunks.
  g.rows_per_chunk =
      std::max<int64_t>(1, kChunkElements / (32 * std::max<int64_t>(g.cols, 1))) * 32;
  g.n_chunks = (g.rows + g.rows_per_chunk - 1) / g.rows_per_chunk;
  if (w.layout == WeightLayout::kFp8Tile32) {
    g.scale_bytes = static_cast<uint64_t>((g.rows + 31) / 32 * g.scale_cols);
  } else if (w.quantized()) {
    g.scale_bytes = static_cast<uint64_t>(g.rows * g.scale_cols);
  }
  return g;
}

// The standard deviation a real-valued weight is drawn with (before any mean/norm shaping).
float StdOf(const WeightSpec& w) {
  switch (w.kind) {
    case WeightKind::kProjection:
    case WeightKind::kExpert:
      return w.gain / std::sqrt(static_cast<float>(std::max<int64_t>(w.shape.back(), 1)));
    default:
      return w.gain;
  }
}

// A real value of weight w (everything but the MXFP4 codes).
float Draw(const WeightSpec& w, float stddev, Rng& rng) {
  const float z = rng.Gaussian();
  switch (w.kind) {
    case WeightKind::kNorm:
      return w.gain * (1.0f + 0.1f * z);
    case WeightKind::kGaussian:
      return w.offset + w.gain * z;
    default:
      return stddev * z;
  }
}

// The power-of-two exponent e with amax / 2^e in (224, 448]: e = ceil(log2(amax / 448)).
// All-zero blocks get e = 0 (codes all zero).
int TileExponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  int e2;
  const float m = std::frexp(amax / kE4m3Max, &e2);  // amax/448 = m * 2^e2, m in [0.5, 1)
  int e = (m == 0.5f) ? e2 - 1 : e2;
  return std::clamp(e, -127, 127);
}

uint8_t ScaleCode(int e) { return static_cast<uint8_t>(std::clamp(e + 127, 0, 254)); }

// Rounds the `n` values of `x` (one block) to e4m3 under scale 2^e; writes codes.
void EncodeBlock(const float* x, int64_t n, int e, uint8_t* codes) {
  const float inv = std::ldexp(1.0f, -e);  // exact: a power of two
  for (int64_t i = 0; i < n; ++i) codes[i] = FloatToE4m3(x[i] * inv);
}

// --- chunk fillers: rows [r0, r0 + n) of one weight ---------------------------------------------

void FillReal(const WeightSpec& w, const Geometry& g, Rng& rng, int64_t n, std::byte* out) {
  const float sd = StdOf(w);
  const int64_t count = n * g.cols;
  if (w.layout == WeightLayout::kF32) {
    float* p = reinterpret_cast<float*>(out);
    for (int64_t i = 0; i < count; ++i) p[i] = Draw(w, sd, rng);
  } else {
    uint16_t* p = reinterpret_cast<uint16_t*>(out);
    for (int64_t i = 0; i < count; ++i) p[i] = FloatToBf16(Draw(w, sd, rng));
  }
}

// A router bias made to prefer low expert indices: expert e gets skew * (1 - e / (E - 1)) more,
// so a blocked expert placement loads the first ranks most (EPLB benchmarks).
void SkewRouterBias(float skew, int64_t first, int64_t count, int64_t n_experts, float* bias) {
  const float span = static_cast<float>(std::max<int64_t>(n_experts - 1, 1));
  for (int64_t i = 0; i < count; ++i) {
    bias[i] += skew * (1.0f - static_cast<float>(first + i) / span);
  }
}

void FillTile32(const WeightSpec& w, const Geometry& g, Rng& rng, int64_t r0, int64_t n,
                std::byte* out, uint8_t* scales) {
  const float sd = StdOf(w);
  std::vector<float> x(static_cast<size_t>(32 * g.cols));
  uint8_t* codes = reinterpret_cast<uint8_t*>(out);
  for (int64_t b = 0; b < n; b += 32) {
    const int64_t rows = std::min<int64_t>(32, n - b);
    for (int64_t i = 0; i < rows * g.cols; ++i) x[i] = Draw(w, sd, rng);
    uint8_t* srow = scales + (r0 + b) / 32 * g.scale_cols;
    for (int64_t t = 0; t < g.scale_cols; ++t) {
      const int64_t c0 = 32 * t;
      const int64_t width = std::min<int64_t>(32, g.cols - c0);
      float amax = 0.0f;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < width; ++c)
          amax = std::max(amax, std::fabs(x[r * g.cols + c0 + c]));
      }
      const int e = TileExponent(amax);
      srow[t] = ScaleCode(e);
      for (int64_t r = 0; r < rows; ++r) {
        EncodeBlock(&x[r * g.cols + c0], width, e, codes + (b + r) * g.cols + c0);
      }
    }
  }
}

void FillRow32(const WeightSpec& w, const Geometry& g, Rng& rng, int64_t r0, int64_t n,
               std::byte* out, uint8_t* scales) {
  const float sd = StdOf(w);
  std::vector<float> x(static_cast<size_t>(g.cols));
  uint8_t* codes = reinterpret_cast<uint8_t*>(out);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < g.cols; ++c) x[c] = Draw(w, sd, rng);
    for (int64_t t = 0; t < g.scale_cols; ++t) {
      const int64_t c0 = 32 * t;
      const int64_t width = std::min<int64_t>(32, g.cols - c0);
      float amax = 0.0f;
      for (int64_t c = 0; c < width; ++c) amax = std::max(amax, std::fabs(x[c0 + c]));
      const int e = TileExponent(amax);
      scales[(r0 + r) * g.scale_cols + t] = ScaleCode(e);
      EncodeBlock(&x[c0], width, e, codes + r * g.cols + c0);
    }
  }
}

// Base binade of an MXFP4 expert matrix (see the header).
int ExpertExponent(const WeightSpec& w) {
  const double rms_code = std::sqrt(8.5625 * 1.75);
  const double target = w.gain / (rms_code * std::sqrt(static_cast<double>(w.shape[1])));
  int e = static_cast<int>(std::lround(std::log2(target)));
  if (w.expert == 0) {
    const std::string_view suffix = ".w2.weight";
    const bool down = w.name.size() >= suffix.size() &&
                      std::string_view(w.name).substr(w.name.size() - suffix.size()) == suffix;
    e += down ? -9 : 4;
  }
  return e;
}

void FillMxfp4(const WeightSpec& w, const Geometry& g, Rng& rng, int64_t r0, int64_t n,
               std::byte* out, uint8_t* scales) {
  const int base = ExpertExponent(w);
  uint8_t* p = reinterpret_cast<uint8_t*>(out);
  const uint64_t count = static_cast<uint64_t>(n) * g.row_bytes;
  for (uint64_t i = 0; i < count; i += 8) {
    const uint64_t r = rng.Next();
    std::memcpy(p + i, &r, std::min<uint64_t>(8, count - i));
  }
  if (g.cols % 2 != 0) {  // an odd row leaves its last high nibble unused: keep it zero
    for (int64_t r = 0; r < n; ++r) p[(r + 1) * g.row_bytes - 1] &= 0x0F;
  }
  const int64_t n_scales = n * g.scale_cols;
  uint8_t* s = scales + r0 * g.scale_cols;
  for (int64_t i = 0; i < n_scales; ++i) {
    const int jitter = static_cast<int>((rng.Next() >> 32) % 3) - 1;
    s[i] = ScaleCode(base + jitter);
  }
}

class Generator {
 public:
  Generator(const ModelConfig& config, const RandomCheckpointOptions& options)
      : options_(options), pool_(options.pool ? *options.pool : ThreadPool::Default()) {
    weights_ = ExpectedWeights(config);
    tensors_ = ExpectedTensors(weights_);
  }

  Status Run(const std::string& dir) {
    std::vector<io::TensorEntry> entries;
    uint64_t total = 0;
    for (const TensorSpec& t : tensors_) {
      entries.push_back({t.name, t.dtype, t.shape});
      total += t.ByteSize();
    }
    io::CheckpointWriterOptions wopts;
    wopts.max_shard_bytes = options_.max_shard_bytes;
    DI_ASSIGN_OR_RETURN(writer_, io::CheckpointWriter::Create(dir, std::move(entries), wopts));
    io::ProgressBar::Options bar_options;
    bar_options.label = "writing " + dir;
    bar_options.total = total;
    bar_options.bytes = true;
    if (!options_.show_progress) bar_options.out = &null_stream_;
    io::ProgressBar bar(bar_options);
    bar_ = &bar;
    for (const WeightSpec& w : weights_) DI_RETURN_IF_ERROR(WriteWeight(w));
    DI_RETURN_IF_ERROR(WaitPending());
    bar.Finish();
    return writer_->Finish();
  }

 private:
  Status WaitPending() {
    if (!pending_.valid()) return Status::Ok();
    return pending_.get();
  }

  // Hands `bytes` (owned by buffers_[slot]) to the writer thread after the previous write.
  Status Enqueue(int slot, size_t n) {
    DI_RETURN_IF_ERROR(WaitPending());
    std::span<const std::byte> bytes(buffers_[slot].data(), n);
    pending_ = std::async(std::launch::async, [this, bytes] { return writer_->Append(bytes); });
    bar_->Add(n);
    return Status::Ok();
  }

  Status WriteWeight(const WeightSpec& w) {
    const Geometry g = GeometryOf(w);
    std::vector<uint8_t> scales(g.scale_bytes);
    const uint64_t base_seed = SplitMix64(options_.seed) ^ Fnv1a(w.name);
    const int64_t chunk_bytes = static_cast<int64_t>(g.rows_per_chunk * g.row_bytes);
    const int64_t chunks_per_batch =
        std::max<int64_t>(1, static_cast<int64_t>(kBatchBytes) / std::max<int64_t>(chunk_bytes, 1));
    for (int64_t c0 = 0; c0 < g.n_chunks; c0 += chunks_per_batch) {
      const int64_t c1 = std::min(g.n_chunks, c0 + chunks_per_batch);
      const int64_t row0 = c0 * g.rows_per_chunk;
      const int64_t row1 = std::min(g.rows, c1 * g.rows_per_chunk);
      const size_t n_bytes = static_cast<size_t>((row1 - row0) * g.row_bytes);
      // The buffer the writer thread is not reading.
      slot_ ^= 1;
      std::vector<std::byte>& buf = buffers_[slot_];
      if (buf.size() < n_bytes) buf.resize(n_bytes);
      pool_.ParallelFor(c1 - c0, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = c0 + begin; c < c0 + end; ++c) {
          const int64_t r0 = c * g.rows_per_chunk;
          const int64_t n = std::min(g.rows, r0 + g.rows_per_chunk) - r0;
          Rng rng(SplitMix64(base_seed + static_cast<uint64_t>(c) * 0xD1B54A32D192ED03ull));
          std::byte* out = buf.data() + (r0 - row0) * g.row_bytes;
          switch (w.layout) {
            case WeightLayout::kBf16:
            case WeightLayout::kF32:
              FillReal(w, g, rng, n, out);
              if (options_.router_skew != 0.0f && w.name.ends_with(".ffn.gate.bias")) {
                SkewRouterBias(options_.router_skew, r0 * g.cols, n * g.cols, w.shape[0],
                               reinterpret_cast<float*>(out));
              }
              break;
            case WeightLayout::kFp8Tile32:
              FillTile32(w, g, rng, r0, n, out, scales.data());
              break;
            case WeightLayout::kFp8Row32:
              FillRow32(w, g, rng, r0, n, out, scales.data());
              break;
            case WeightLayout::kMxfp4:
              FillMxfp4(w, g, rng, r0, n, out, scales.data());
              break;
          }
        }
      });
      DI_RETURN_IF_ERROR(Enqueue(slot_, n_bytes));
    }
    if (!scales.empty()) {
      DI_RETURN_IF_ERROR(WaitPending());
      DI_RETURN_IF_ERROR(writer_->Append(std::as_bytes(std::span<const uint8_t>(scales))));
      bar_->Add(scales.size());
    }
    return Status::Ok();
  }

  // A stream that discards everything (progress off).
  class NullBuffer : public std::streambuf {
   protected:
    int overflow(int c) override { return c; }
  };
  NullBuffer null_buffer_;
  std::ostream null_stream_{&null_buffer_};

  RandomCheckpointOptions options_;
  ThreadPool& pool_;
  std::vector<WeightSpec> weights_;
  std::vector<TensorSpec> tensors_;
  std::unique_ptr<io::CheckpointWriter> writer_;
  io::ProgressBar* bar_ = nullptr;
  std::vector<std::byte> buffers_[2];
  int slot_ = 0;
  std::future<Status> pending_;
};

}  // namespace

StatusOr<std::vector<int32_t>> StandInEngramTokenMap(int64_t vocab, int64_t compressed) {
  if (compressed < 1 || compressed > vocab) {
    return InvalidArgument("engram_compressed_vocab_size " + std::to_string(compressed) +
                           " must be in [1, vocab_size " + std::to_string(vocab) +
                           "] for the stand-in token map");
  }
  std::vector<int32_t> map(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) map[i] = static_cast<int32_t>(i * compressed / vocab);
  return map;
}

Status WriteEngramTokenMap(const std::string& path, const std::vector<int32_t>& map,
                           int64_t compressed) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status(StatusCode::kNotFound, path + ": cannot create");
  out << "{\n  \"compressed_vocab_size\": " << compressed << ",\n  \"map\": [";
  for (size_t i = 0; i < map.size(); ++i) out << (i ? ", " : "") << map[i];
  out << "]\n}\n";
  if (!out) return Status(StatusCode::kResourceExhausted, path + ": write failed");
  return Status::Ok();
}

Status WriteRandomCheckpoint(const ModelConfig& config, const std::string& dir,
                             const RandomCheckpointOptions& options) {
  Generator generator(config, options);
  DI_RETURN_IF_ERROR(generator.Run(dir));
  if (!config.engram_layer_ids.empty()) {
    DI_ASSIGN_OR_RETURN(
        std::vector<int32_t> map,
        StandInEngramTokenMap(config.vocab_size, config.engram_compressed_vocab_size));
    DI_RETURN_IF_ERROR(WriteEngramTokenMap(dir + "/engram_token_map.json", map,
                                           config.engram_compressed_vocab_size));
  }
  return Status::Ok();
}

}  // namespace deepinfer::model
