// ExpertExchange: where the routed experts of a MoE call run (v41_model.md §3.8;
// docs/scaleout.md "Expert parallelism").
//
// RunMoe routes every row on its home process, quantizes the activation once and hands the
// (row, expert, weight) pairs to the exchange; the exchange returns each pair's expert output
// y_e, and RunMoe sums them per row in ascending expert order. Without an exchange
// (BatchContext::experts null) the pairs run here on the held experts (RunExpertPairs); an
// exchange may run them anywhere, since each pair's bf16 result depends only on its activation
// row, its expert and its weight (routed_experts.h), never on where or with which other rows it
// runs. That is what keeps N ranks on the bytes of one process.
//
// Contract: RunRouted is called by the thread that runs the forward, once per MoE call, with
// `act` the activation the layer's experts read ([n_act][dim] bf16); it fills y [pairs][dim]
// bf16 in pair order before returning.
#pragma once

#include <cstdint>
#include <span>

namespace deepinfer::model {

// One routed product: activation row `act`, logical expert `expert`, routing weight `weight`.
struct ExpertPair {
  int32_t act = 0;
  int32_t expert = 0;
  float weight = 0.0f;
};

class ExpertExchange {
 public:
  virtual ~ExpertExchange() = default;
  // Layer `layer`'s routed experts for `pairs` over act [n_act][dim]; y [pairs][dim].
  virtual void RunRouted(int layer, const uint16_t* act, int64_t n_act,
                         std::span<const ExpertPair> pairs, uint16_t* y) = 0;
};

}  // namespace deepinfer::model
