// Counters of speculative decoding, part of EngineStats (EngineStats::spec).
#pragma once

#include <cstdint>
#include <vector>

namespace deepinfer::engine::spec {

struct SpecCounters {
  int64_t draft_calls = 0;   // runner Draft calls
  int64_t drafted = 0;       // draft tokens proposed
  int64_t verify_calls = 0;  // verify inputs (one per sequence and step)
  int64_t verified = 0;      // draft tokens checked by the target
  int64_t accepted = 0;      // draft tokens accepted
  // accept_histogram[k]: verify calls that accepted exactly k drafts (each such call yields k+1
  // tokens, or fewer when the output ends inside the run).
  std::vector<int64_t> accept_histogram;
};

}  // namespace deepinfer::engine::spec
