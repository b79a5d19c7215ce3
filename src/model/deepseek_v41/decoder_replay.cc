#include "model/deepseek_v41/decoder_replay.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "core/check.h"

namespace deepinfer::model {

int LastKvSourceLayer(const std::vector<LayerDescriptor>& layers, int n_backbone) {
  int last = -1;
  for (int li = 0; li < n_backbone; ++li) {
    if (layers[static_cast<size_t>(li)].owns_compressor) last = li;
  }
  return last;
}

std::vector<int64_t> CompactRows(BatchContext* ctx, std::span<const int64_t> keep_from) {
  CHECK_EQ(keep_from.size(), ctx->segments.size());
  std::vector<int64_t> old_row;
  std::vector<int64_t> positions;
  std::vector<Segment> segments;
  for (size_t s = 0; s < ctx->segments.size(); ++s) {
    Segment seg = ctx->segments[s];
    const int64_t end = seg.pos0 + seg.n_rows;
    CHECK(keep_from[s] >= seg.pos0 && keep_from[s] <= end) << "keep_from outside the segment";
    const int64_t first = seg.row0 + (keep_from[s] - seg.pos0);
    seg.row0 = static_cast<int64_t>(old_row.size());
    seg.n_rows = end - keep_from[s];
    seg.pos0 = keep_from[s];
    for (int64_t r = 0; r < seg.n_rows; ++r) {
      old_row.push_back(first + r);
      positions.push_back(seg.pos0 + r);
    }
    if (seg.n_rows > 0) segments.push_back(seg);
  }
  auto remap = [&](auto& per_row) {
    if (per_row.empty()) return;
    std::remove_reference_t<decltype(per_row)> kept(old_row.size());
    for (size_t r = 0; r < old_row.size(); ++r) {
      kept[r] = std::move(per_row[static_cast<size_t>(old_row[r])]);
    }
    per_row = std::move(kept);
  };
  for (auto& layer_topk : ctx->topk) remap(layer_topk);
  remap(ctx->candidate_mask);
  ctx->segments = std::move(segments);
  ctx->positions = std::move(positions);
  ctx->n_rows = static_cast<int64_t>(old_row.size());
  return old_row;
}

StatusOr<ReplayPlan> PlanDecoderReplay(const std::vector<LayerDescriptor>& layers, int n_layers,
                                       std::span<const ForwardInput> inputs,
                                       const ForwardOptions& options) {
  ReplayPlan plan;
  const int64_t keep = options.decoder_replay_keep;
  if (keep < 0) return InvalidArgument("decoder replay: the kept row count must be >= 0");
  const int last_source = LastKvSourceLayer(layers, n_layers);
  if (keep == 0 || last_source < 0 || last_source + 1 >= n_layers) return plan;
  plan.first_layer = last_source + 1;
  for (const ForwardInput& in : inputs) {
    const int64_t pos0 = in.state->length;
    const int64_t end = pos0 + static_cast<int64_t>(in.tokens.size());
    int64_t from = pos0;
    if (in.prefill_end > 0) from = std::clamp(in.prefill_end - keep, pos0, end);
    if (from > pos0) {
      plan.active = true;
      if (options.all_logits) {
        return InvalidArgument("decoder replay: all_logits asks for rows the replay skips");
      }
      if (in.want_logits && end - in.logits_rows < from) {
        return InvalidArgument("decoder replay: logits asked of a prefill row it skips");
      }
    }
    plan.keep_from.push_back(from);
  }
  return plan;
}

void NarrowForDecoderReplay(const ReplayPlan& plan, const std::vector<Segment>& segments, int layer,
                            BatchContext* ctx, std::vector<int64_t>* row_map,
                            std::vector<uint16_t>* x, std::vector<float>* pre) {
  const int64_t hc = ctx->cfg().hc_mult, dim = ctx->cfg().dim;
  const int n_layers = ctx->cfg().n_layers;
  for (size_t s = 0; s < segments.size(); ++s) {
    if (plan.keep_from[s] == segments[s].pos0) continue;
    for (int li = layer; li < n_layers; ++li) {
      LayerCache& cache = segments[s].state->layers[static_cast<size_t>(li)];
      cache.ring_from = std::max(cache.ring_from, plan.keep_from[s]);
    }
  }
  const std::vector<int64_t> old = CompactRows(ctx, plan.keep_from);
  std::vector<uint16_t> nx(old.size() * hc * dim);
  std::vector<float> npre(old.size() * hc);
  std::vector<int64_t> nmap(old.size());
  for (size_t r = 0; r < old.size(); ++r) {
    const auto o = static_cast<size_t>(old[r]);
    std::copy_n(x->data() + o * hc * dim, hc * dim, nx.data() + r * hc * dim);
    std::copy_n(pre->data() + o * hc, hc, npre.data() + r * hc);
    nmap[r] = (*row_map)[o];
  }
  *x = std::move(nx);
  *pre = std::move(npre);
  *row_map = std::move(nmap);
}

}  // namespace deepinfer::model
