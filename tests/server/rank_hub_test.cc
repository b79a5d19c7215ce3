// Rank 0's side of a server over MPI ranks without MPI: the wire format round-trips every field
// bit for bit, and a RankHub whose exchange is answered in-process places requests by tokens of
// work, replays a remote request's outputs through its callbacks as the engine would (stop check
// per token, then on_output, n > 1 routed per sample), ships cancels once, and fails the requests
// of a rank whose reply is malformed; with prefix affinity it places a prompt where its pages are
// thought to be, KV hand-offs land on a rank and their results come back once, and a prefill
// leg's pages exported on another rank reach rank 0 before its last output.
#include "server/rank_hub.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "engine/kv_cache_manager.h"
#include "engine/page_handoff.h"
#include "server/rank_wire.h"

namespace deepinfer::server {
namespace {

engine::RequestOutput Output(int64_t sample_index, std::vector<int32_t> tokens, int64_t n_output,
                             std::optional<engine::FinishReason> finished = std::nullopt) {
  engine::RequestOutput o;
  o.sample_index = sample_index;
  o.new_tokens = std::move(tokens);
  o.n_output = n_output;
  o.finished = finished;
  return o;
}

TEST(RankWire, EveryFieldRoundTripsBitForBit) {
  ToRank to;
  RemoteRequest r;
  r.id = 7;
  r.prompt = {1, 2, 3};
  r.params.temperature = 0.7f;
  r.params.top_k = 5;
  r.params.top_p = 0.9f;
  r.params.min_p = 0.05f;
  r.params.repetition_penalty = 1.1f;
  r.params.presence_penalty = -0.5f;
  r.params.frequency_penalty = 0.25f;
  r.params.logit_bias = {{3, -100.0f}, {9, 2.5f}};
  r.params.seed = std::numeric_limits<uint64_t>::max();
  r.params.n = 3;
  r.params.max_tokens = 40;
  r.params.min_tokens = 2;
  r.params.ignore_eos = true;
  r.params.stop_token_ids = {11};
  r.params.stop = {"\n\n", "é"};
  r.params.logprobs = true;
  r.params.top_logprobs = 4;
  r.params.prompt_logprobs = 0;
  r.sample_index = 2;
  r.priority = -1;
  r.speculative = false;
  r.leg_of_prompt_len = 41;
  r.form.constraint = {{"regex", "[a-z]+"}};
  r.form.thinking = true;
  r.form.export_pages = true;
  to.requests.push_back(r);
  to.cancels = {4, 5};
  const std::string wire("DIKV\0\xff bytes", 12);
  to.pages.push_back({.id = 9, .wire = wire});
  to.context.push_back({.prompt = {5, 6, 7}, .decoder = 2, .prompt_logprobs = 0});
  to.context.push_back({.prompt = {8}, .decoder = 0});
  StatusOr<ToRank> back = DecodeToRank(EncodeToRank(to));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->requests.size(), 1u);
  const RemoteRequest& b = back->requests[0];
  EXPECT_EQ(b.id, 7u);
  EXPECT_EQ(b.prompt, r.prompt);
  EXPECT_EQ(b.params.temperature, r.params.temperature);
  EXPECT_EQ(b.params.top_k, 5);
  EXPECT_EQ(b.params.top_p, r.params.top_p);
  EXPECT_EQ(b.params.min_p, r.params.min_p);
  EXPECT_EQ(b.params.repetition_penalty, r.params.repetition_penalty);
  EXPECT_EQ(b.params.presence_penalty, r.params.presence_penalty);
  EXPECT_EQ(b.params.frequency_penalty, r.params.frequency_penalty);
  EXPECT_EQ(b.params.logit_bias, r.params.logit_bias);
  EXPECT_EQ(b.params.seed, r.params.seed);
  EXPECT_EQ(b.params.n, 3);
  EXPECT_EQ(b.params.max_tokens, 40);
  EXPECT_EQ(b.params.min_tokens, 2);
  EXPECT_TRUE(b.params.ignore_eos);
  EXPECT_EQ(b.params.stop_token_ids, r.params.stop_token_ids);
  EXPECT_EQ(b.params.stop, r.params.stop);
  EXPECT_TRUE(b.params.logprobs);
  EXPECT_EQ(b.params.top_logprobs, 4);
  EXPECT_EQ(b.params.prompt_logprobs, 0);
  EXPECT_EQ(b.sample_index, 2);
  EXPECT_EQ(b.priority, -1);
  EXPECT_FALSE(b.speculative);
  EXPECT_EQ(b.leg_of_prompt_len, 41);
  EXPECT_EQ(b.form.constraint, r.form.constraint);
  EXPECT_TRUE(b.form.thinking);
  EXPECT_TRUE(b.form.export_pages);
  EXPECT_EQ(back->cancels, to.cancels);
  ASSERT_EQ(back->context.size(), 2u);
  EXPECT_EQ(back->context[0].prompt, to.context[0].prompt);
  EXPECT_EQ(back->context[0].decoder, 2);
  EXPECT_EQ(back->context[0].prompt_logprobs, 0);
  EXPECT_FALSE(back->context[1].prompt_logprobs.has_value());
  EXPECT_EQ(back->context[1].prompt, to.context[1].prompt);
  EXPECT_EQ(back->context[1].decoder, 0);
  ASSERT_EQ(back->pages.size(), 1u);
  EXPECT_EQ(back->pages[0].id, 9u);
  EXPECT_EQ(back->pages[0].wire, wire);
  EXPECT_FALSE(back->stop);

  FromRank from;
  from.verdicts.push_back({.id = 7, .status = InvalidArgument("no")});
  engine::RequestOutput o = Output(1, {42}, 3, engine::FinishReason::kError);
  o.error = Internal("boom");
  o.seed = 123456789012345ull;
  o.prefix_hit_tokens = 16;
  // A logprob no decimal print of fewer than 9 digits keeps: the bits must survive.
  const float odd = std::nextafter(-7.656601f, 0.0f);
  o.samples.push_back({.token = 42, .logprob = odd, .top = {{42, odd}, {7, -9.25f}}});
  o.prompt_logprobs.push_back({.token = 2, .logprob = -1.5f, .top = {}});
  from.outputs.push_back({.id = 7, .output = o});
  from.outputs.push_back({.id = 8,
                          .output = Output(0, {1}, 1, engine::FinishReason::kLength),
                          .has_pages = true,
                          .pages_status = Status::Ok(),
                          .pages = wire});
  from.outputs.push_back({.id = 10,
                          .output = Output(0, {1}, 1, engine::FinishReason::kLength),
                          .has_pages = true,
                          .pages_status = NotFound("no pages"),
                          .pages = ""});
  from.imports.push_back({.id = 9, .status = Status::Ok(), .result = {3, 2, 1, true}});
  from.imports.push_back({.id = 11, .status = DataLoss("page 2 fails its checksum"), .result = {}});
  from.snapshot = {.running = 2,
                   .waiting = 1,
                   .kv_pages_used = 10,
                   .kv_pages_capacity = 64,
                   .prefix_queries = 12,
                   .prefix_hits = 5,
                   .tails_continued = 4,
                   .rows_by_layer = {5, 6},
                   .exchange_bytes = 999,
                   .exchange_seconds = 0.125};
  StatusOr<FromRank> fb = DecodeFromRank(EncodeFromRank(from));
  ASSERT_TRUE(fb.ok()) << fb.status().ToString();
  EXPECT_EQ(fb->verdicts[0].status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fb->verdicts[0].status.message(), "no");
  const engine::RequestOutput& ob = fb->outputs[0].output;
  EXPECT_EQ(ob.sample_index, 1);
  EXPECT_EQ(ob.new_tokens, o.new_tokens);
  EXPECT_EQ(ob.n_output, 3);
  EXPECT_EQ(ob.finished, engine::FinishReason::kError);
  EXPECT_EQ(ob.error.message(), "boom");
  EXPECT_EQ(ob.seed, o.seed);
  EXPECT_EQ(ob.prefix_hit_tokens, 16);
  ASSERT_EQ(ob.samples.size(), 1u);
  EXPECT_EQ(std::bit_cast<uint32_t>(ob.samples[0].logprob), std::bit_cast<uint32_t>(odd));
  EXPECT_EQ(std::bit_cast<uint32_t>(ob.samples[0].top[0].logprob), std::bit_cast<uint32_t>(odd));
  EXPECT_EQ(ob.samples[0].top[1].token, 7);
  EXPECT_EQ(ob.prompt_logprobs[0].logprob, -1.5f);
  EXPECT_FALSE(fb->outputs[0].has_pages);
  ASSERT_EQ(fb->outputs.size(), 3u);
  EXPECT_TRUE(fb->outputs[1].has_pages);
  EXPECT_EQ(fb->outputs[1].pages, wire);
  EXPECT_TRUE(fb->outputs[2].has_pages);
  EXPECT_EQ(fb->outputs[2].pages_status.message(), "no pages");
  ASSERT_EQ(fb->imports.size(), 2u);
  EXPECT_EQ(fb->imports[0].id, 9u);
  EXPECT_TRUE(fb->imports[0].status.ok());
  EXPECT_EQ(fb->imports[0].result.imported, 3);
  EXPECT_EQ(fb->imports[0].result.cached, 2);
  EXPECT_EQ(fb->imports[0].result.dropped, 1);
  EXPECT_TRUE(fb->imports[0].result.tail_held);
  EXPECT_FALSE(fb->imports[1].result.tail_held);
  EXPECT_EQ(fb->imports[1].status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(fb->snapshot.rows_by_layer, from.snapshot.rows_by_layer);
  EXPECT_EQ(fb->snapshot.exchange_seconds, 0.125);
  EXPECT_EQ(fb->snapshot.prefix_queries, 12);
  EXPECT_EQ(fb->snapshot.prefix_hits, 5);
  EXPECT_EQ(fb->snapshot.tails_continued, 4);
}

TEST(RankWire, MalformedBytesAreDataLoss) {
  EXPECT_EQ(DecodeToRank("not msgpack").status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(DecodeFromRank(EncodeToRank(ToRank())).status().code(), StatusCode::kDataLoss);
  FromRank bad;
  bad.outputs.push_back({.id = 1, .output = Output(0, {}, 0, engine::FinishReason::kStop)});
  std::string bytes = EncodeFromRank(bad);
  EXPECT_TRUE(DecodeFromRank(bytes).ok());
  bytes.resize(bytes.size() / 2);
  EXPECT_EQ(DecodeFromRank(bytes).status().code(), StatusCode::kDataLoss);
}

// A hub over three ranks whose exchange is answered by `reply` (per rank: the FromRank bytes);
// `page_tokens` > 0 turns on prefix affinity (pages of that many tokens, 64 keys per rank).
struct Harness {
  explicit Harness(int64_t page_tokens = 0) : page_tokens_(page_tokens) {}
  int64_t page_tokens_;
  std::vector<ToRank> received;  // what the last exchange sent each rank
  std::vector<std::string> reply = std::vector<std::string>(3, EncodeFromRank(FromRank()));
  RankHub hub{RankHubOptions{.n_ranks = 3,
                             .max_context = 100,
                             .exchange =
                                 [this](const std::vector<std::string>& out) {
                                   received.assign(3, ToRank());
                                   for (size_t r = 1; r < out.size(); ++r) {
                                     received[r] = DecodeToRank(out[r]).value();
                                   }
                                   std::vector<std::string> in = reply;
                                   reply.assign(3, EncodeFromRank(FromRank()));
                                   return in;
                                 },
                             .describe = {},
                             .page_tokens = page_tokens_,
                             .prompt_sensitive = false,
                             .cache_blocks = 64,
                             .placement = {.balance_abs_tokens = 64}}};
};

engine::Request RequestOf(size_t prompt, int64_t max_tokens, int n = 1) {
  engine::Request r;
  r.prompt.assign(prompt, 1);
  r.params.max_tokens = max_tokens;
  r.params.n = n;
  return r;
}

// Context parallelism: a split prompt's job reaches every rank at the next exchange, in order,
// beside the request shipped with it; rank 0 runs its own part right after the collective and
// only then what waited on it (its own request's Add); the hub stays busy until then.
TEST(RankHub, SplitPromptsReachEveryRankAndRunOnRankZeroBeforeWhatWaits) {
  std::vector<std::string> events;
  std::vector<ToRank> received;
  RankHub hub{
      RankHubOptions{.n_ranks = 3,
                     .max_context = 100,
                     .exchange =
                         [&](const std::vector<std::string>& out) {
                           events.push_back("exchange");
                           received.assign(3, ToRank());
                           for (size_t r = 1; r < out.size(); ++r)
                             received[r] = DecodeToRank(out[r]).value();
                           return std::vector<std::string>(3, EncodeFromRank(FromRank()));
                         },
                     .describe = {},
                     .page_tokens = 0,
                     .prompt_sensitive = false,
                     .cache_blocks = 0,
                     .placement = {},
                     .splits = [](const engine::Request& r) { return r.prompt.size() >= 4; },
                     .prefill =
                         [&](const ContextJob& job) {
                           events.push_back("prefill " + std::to_string(job.prompt.size()) +
                                            " for " + std::to_string(job.decoder));
                         }}};
  EXPECT_FALSE(hub.Splits(RequestOf(3, 1)));
  engine::Request remote = RequestOf(5, 1);
  ASSERT_TRUE(hub.Splits(remote));
  hub.SplitPrompt({.prompt = remote.prompt, .decoder = 2, .prompt_logprobs = 3}, nullptr);
  hub.Ship(2, remote, {}, {});
  hub.SplitPrompt({.prompt = std::vector<int32_t>(4, 1), .decoder = 0},
                  [&] { events.push_back("add on rank 0"); });
  EXPECT_TRUE(hub.busy());
  ASSERT_TRUE(hub.Exchange().ok());
  EXPECT_EQ(events, (std::vector<std::string>{"exchange", "prefill 5 for 2", "prefill 4 for 0",
                                              "add on rank 0"}));
  for (int r = 1; r < 3; ++r) {
    ASSERT_EQ(received[r].context.size(), 2u) << r;
    EXPECT_EQ(received[r].context[0].decoder, 2);
    EXPECT_EQ(received[r].context[0].prompt.size(), 5u);
    EXPECT_EQ(received[r].context[0].prompt_logprobs, 3);
    EXPECT_EQ(received[r].context[1].decoder, 0);
    EXPECT_FALSE(received[r].context[1].prompt_logprobs.has_value());
  }
  EXPECT_EQ(received[2].requests.size(), 1u);
  EXPECT_TRUE(received[1].requests.empty());
  // Sent once.
  ASSERT_TRUE(hub.Exchange().ok());
  EXPECT_TRUE(received[1].context.empty());
  EXPECT_EQ(events.size(), 5u);
}

TEST(RankHub, PlacesByTokensOfWorkAndCountsThemDown) {
  Harness h;
  engine::Request local = RequestOf(10, 20);  // 30 tokens of work on rank 0
  EXPECT_EQ(h.hub.Place(local), 0);
  h.hub.TrackLocal(&local);
  EXPECT_EQ(h.hub.Place(RequestOf(1, 1)), 1);
  h.hub.Ship(1, RequestOf(5, 10, 2), {}, {});  // 5 + 2 x 10 = 25 on rank 1
  EXPECT_EQ(h.hub.Place(RequestOf(1, 1)), 2);
  h.hub.Ship(2, RequestOf(50, 60), {}, {});  // no max_tokens room beyond the context: 50 + 50
  EXPECT_EQ(h.hub.Place(RequestOf(1, 1)), 1);
  std::vector<RankHub::RankView> v = h.hub.View();
  EXPECT_EQ(v[0].work, 30);
  EXPECT_EQ(v[1].work, 25);
  EXPECT_EQ(v[2].work, 100);

  // Rank 0's request counts down through its wrapped on_output: prompt, tokens, the unused rest.
  local.on_output(Output(0, {4}, 1));
  EXPECT_EQ(h.hub.View()[0].work, 19);
  local.on_output(Output(0, {5}, 2, engine::FinishReason::kStop));
  EXPECT_EQ(h.hub.View()[0].work, 0);
  EXPECT_EQ(h.hub.View()[0].requests_finished, 1);
  EXPECT_EQ(h.hub.Place(RequestOf(1, 1)), 0);
}

TEST(RankHub, RemoteOutputsGoThroughTheCallbacksAsTheEngineWouldCallThem) {
  Harness h;
  engine::Request r = RequestOf(3, 4, 2);
  r.params.stop = {"x"};
  std::vector<std::string> log;
  r.stop_check = [&log](std::span<const int32_t> out) {
    log.push_back("check0:" + std::to_string(out.size()));
    return false;
  };
  r.prepare_sample = [&log](engine::Request* s) {
    s->stop_check = [&log](std::span<const int32_t> out) {
      log.push_back("check1:" + std::to_string(out.size()));
      return false;
    };
  };
  r.on_output = [&log](const engine::RequestOutput& o) {
    log.push_back("out" + std::to_string(o.sample_index) + ":" +
                  std::to_string(o.new_tokens.size()) + (o.finished ? ":end" : ""));
  };
  std::vector<Status> verdicts;
  h.hub.Ship(1, r, {.constraint = {{"regex", "a"}}, .thinking = false},
             [&verdicts](const Status& s) { verdicts.push_back(s); });
  EXPECT_TRUE(h.hub.busy());
  ASSERT_TRUE(h.hub.Exchange().ok());
  ASSERT_EQ(h.received[1].requests.size(), 1u);
  EXPECT_TRUE(h.received[2].requests.empty());
  const uint64_t id = h.received[1].requests[0].id;
  EXPECT_EQ(h.received[1].requests[0].form.constraint, nlohmann::json({{"regex", "a"}}));
  EXPECT_EQ(h.received[1].requests[0].params.stop, r.params.stop);

  FromRank m;
  m.verdicts.push_back({.id = id, .status = Status::Ok()});
  m.outputs.push_back({.id = id, .output = Output(0, {9}, 1)});
  m.outputs.push_back({.id = id, .output = Output(1, {8}, 1)});
  m.outputs.push_back({.id = id, .output = Output(1, {}, 1, engine::FinishReason::kStop)});
  h.reply[1] = EncodeFromRank(m);
  ASSERT_TRUE(h.hub.Exchange().ok());
  ASSERT_EQ(verdicts.size(), 1u);
  EXPECT_TRUE(verdicts[0].ok());
  EXPECT_EQ(log,
            (std::vector<std::string>{"check0:1", "out0:1", "check1:1", "out1:1", "out1:0:end"}));
  EXPECT_TRUE(h.hub.busy());  // sample 0 has not finished

  // A cancel is shipped once; the finish that answers it retires the proxy.
  r.cancelled->store(true);
  ASSERT_TRUE(h.hub.Exchange().ok());
  EXPECT_EQ(h.received[1].cancels, std::vector<uint64_t>{id});
  ASSERT_TRUE(h.hub.Exchange().ok());
  EXPECT_TRUE(h.received[1].cancels.empty());
  m = FromRank();
  m.outputs.push_back({.id = id, .output = Output(0, {}, 1, engine::FinishReason::kAbort)});
  h.reply[1] = EncodeFromRank(m);
  ASSERT_TRUE(h.hub.Exchange().ok());
  EXPECT_FALSE(h.hub.busy());
  EXPECT_EQ(h.hub.View()[1].work, 0);
  EXPECT_EQ(h.hub.View()[1].requests_finished, 1);
}

TEST(RankHub, RefusalsAndMalformedRepliesFinishTheRequestsOnce) {
  Harness h;
  std::vector<Status> verdicts;
  int outputs = 0;
  engine::Request a = RequestOf(2, 2);
  engine::Request b = RequestOf(2, 2);
  b.on_output = [&outputs](const engine::RequestOutput& o) {
    ++outputs;
    EXPECT_EQ(o.finished, engine::FinishReason::kError);
    EXPECT_EQ(o.error.code(), StatusCode::kDataLoss);
  };
  h.hub.Ship(1, a, {}, [&verdicts](const Status& s) { verdicts.push_back(s); });
  h.hub.Ship(2, b, {}, [&verdicts](const Status& s) { verdicts.push_back(s); });
  ASSERT_TRUE(h.hub.Exchange().ok());
  const uint64_t id_a = h.received[1].requests.at(0).id;
  const uint64_t id_b = h.received[2].requests.at(0).id;
  FromRank refuse;
  refuse.verdicts.push_back({.id = id_a, .status = InvalidArgument("prompt too long")});
  FromRank accept;
  accept.verdicts.push_back({.id = id_b, .status = Status::Ok()});
  h.reply[1] = EncodeFromRank(refuse);
  h.reply[2] = EncodeFromRank(accept);
  ASSERT_TRUE(h.hub.Exchange().ok());
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_EQ(verdicts[0].code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(verdicts[1].ok());
  EXPECT_EQ(h.hub.View()[1].work, 0);
  EXPECT_TRUE(h.hub.busy());

  h.reply[2] = "garbage";
  EXPECT_EQ(h.hub.Exchange().code(), StatusCode::kDataLoss);
  EXPECT_EQ(outputs, 1);
  EXPECT_FALSE(h.hub.busy());
  EXPECT_EQ(h.hub.View()[2].work, 0);
  ASSERT_TRUE(h.hub.Exchange().ok());  // nothing left to fail twice
  EXPECT_EQ(outputs, 1);
}

std::vector<int32_t> Counting(int n, int32_t first) {
  std::vector<int32_t> t;
  for (int i = 0; i < n; ++i) t.push_back(first + i);
  return t;
}

TEST(RankHub, PlacesAPromptWhereItsPagesAreUnlessTheLoadIsUneven) {
  Harness h(/*page_tokens=*/4);
  engine::Request shared = RequestOf(0, 2);
  shared.prompt = Counting(40, 100);  // ten full pages
  h.hub.Ship(2, shared, {}, {});      // rank 2: 40 + 2 tokens of work, and the pages
  engine::Request again = shared;
  again.prompt.push_back(7);  // the same 40 tokens and one more
  // Rank 2 holds 40 of its 41 tokens (at least half): it gets the request although idle ranks
  // would add less work.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(h.hub.Place(again), 2);
  // A prompt sharing nothing goes by work: never to the busy rank 2.
  engine::Request other = RequestOf(0, 2);
  other.prompt = Counting(40, 500);
  for (int i = 0; i < 3; ++i) EXPECT_NE(h.hub.Place(other), 2);
  // Uneven load (rank 2 more than 64 tokens above the least loaded and 1.5x it): the least loaded
  // rank, whatever rank 2 holds.
  h.hub.Ship(2, RequestOf(50, 60), {}, {});  // 100 more on rank 2
  h.hub.Ship(1, RequestOf(3, 2), {}, {});    // 5 on rank 1
  for (int i = 0; i < 3; ++i) EXPECT_EQ(h.hub.Place(again), 0);
  // Without affinity the pages count for nothing: the least work.
  Harness plain;
  plain.hub.Ship(2, shared, {}, {});
  for (int i = 0; i < 3; ++i) EXPECT_NE(plain.hub.Place(again), 2);
}

TEST(RankHub, HandOffsLandOnARankAndTheirResultsComeBackOnce) {
  Harness h(/*page_tokens=*/4);
  std::vector<engine::BlockKey> keys;
  engine::AppendBlockKeys(Counting(16, 3), 16, 4, false, &keys);
  ASSERT_EQ(keys.size(), 4u);
  // Nobody holds them: the least loaded rank, the lowest on a tie; then the holder.
  h.hub.Ship(1, RequestOf(2, 2), {}, {});
  engine::Request local = RequestOf(2, 2);
  h.hub.TrackLocal(&local);
  EXPECT_EQ(h.hub.PlacePages(keys), 2);
  std::vector<StatusOr<engine::ImportResult>> results;
  h.hub.ShipPages(2, "bundle bytes", keys,
                  [&results](const StatusOr<engine::ImportResult>& r) { results.push_back(r); });
  EXPECT_TRUE(h.hub.busy());
  ASSERT_TRUE(h.hub.Exchange().ok());
  ASSERT_EQ(h.received[2].pages.size(), 1u);
  EXPECT_EQ(h.received[2].pages[0].wire, "bundle bytes");
  EXPECT_TRUE(results.empty());
  FromRank m;
  m.imports.push_back(
      {.id = h.received[2].pages[0].id, .status = Status::Ok(), .result = {4, 0, 0}});
  m.imports.push_back({.id = 999, .status = Status::Ok(), .result = {}});  // unknown: ignored
  h.reply[2] = EncodeFromRank(m);
  FromRank done;  // rank 1's request ends, so nothing is left in flight
  done.verdicts.push_back({.id = h.received[1].requests.at(0).id, .status = Status::Ok()});
  done.outputs.push_back({.id = h.received[1].requests.at(0).id,
                          .output = Output(0, {1}, 1, engine::FinishReason::kStop)});
  h.reply[1] = EncodeFromRank(done);
  ASSERT_TRUE(h.hub.Exchange().ok());
  ASSERT_EQ(results.size(), 1u);
  ASSERT_TRUE(results[0].ok());
  EXPECT_EQ(results[0]->imported, 4);
  EXPECT_FALSE(h.hub.busy());
  // The request for that prompt follows its pages; so does the next hand-off of the same chain.
  engine::Request follow = RequestOf(0, 2);
  follow.prompt = Counting(17, 3);
  EXPECT_EQ(h.hub.Place(follow), 2);
  EXPECT_EQ(h.hub.PlacePages(keys), 2);

  // A refused bundle is answered with the rank's reason; a rank whose reply is malformed fails
  // its pending hand-off; a stop fails what is still pending. Each callback runs once.
  results.clear();
  h.hub.ShipPages(1, "a", keys, [&results](const auto& r) { results.push_back(r); });
  h.hub.ShipPages(2, "b", keys, [&results](const auto& r) { results.push_back(r); });
  ASSERT_TRUE(h.hub.Exchange().ok());
  m = FromRank();
  m.imports.push_back(
      {.id = h.received[2].pages[0].id, .status = DataLoss("page 1 of 4 fails its checksum")});
  h.reply[2] = EncodeFromRank(m);
  h.reply[1] = "garbage";
  EXPECT_EQ(h.hub.Exchange().code(), StatusCode::kDataLoss);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status().code(), StatusCode::kDataLoss);  // rank 1's reply
  EXPECT_NE(results[0].status().message().find("malformed"), std::string::npos);
  EXPECT_NE(results[1].status().message().find("checksum"), std::string::npos);
  h.hub.ShipPages(2, "c", keys, [&results](const auto& r) { results.push_back(r); });
  h.hub.CancelAll();
  ASSERT_EQ(results.size(), 3u);
  EXPECT_FALSE(results[2].ok());
  EXPECT_FALSE(h.hub.busy());
  ASSERT_TRUE(h.hub.Exchange().ok());
  EXPECT_EQ(results.size(), 3u);
}

TEST(RankHub, PagesExportedOnAnotherRankArriveBeforeTheLastOutput) {
  Harness h;
  engine::Request leg = RequestOf(8, 1);
  std::vector<std::string> log;
  leg.on_output = [&log](const engine::RequestOutput& o) {
    log.push_back(o.finished ? "last output" : "output");
  };
  RemoteForm form;
  form.export_pages = true;
  form.on_pages = [&log](StatusOr<engine::PageBundle> pages) {
    log.push_back(pages.ok()
                      ? "pages:" + std::to_string(pages->blocks.size()) + ":" + pages->fingerprint
                      : "no pages: " + pages.status().message());
  };
  h.hub.Ship(1, leg, std::move(form), {});
  ASSERT_TRUE(h.hub.Exchange().ok());
  ASSERT_EQ(h.received[1].requests.size(), 1u);
  EXPECT_TRUE(h.received[1].requests[0].form.export_pages);
  const uint64_t id = h.received[1].requests[0].id;
  engine::PageBundle bundle;
  bundle.fingerprint = "fp";
  bundle.page_tokens = 4;
  bundle.page_bytes = 3;
  bundle.blocks.push_back({.key = {1, 2}, .checksum = engine::PageChecksum("abc"), .bytes = "abc"});
  FromRank m;
  m.verdicts.push_back({.id = id, .status = Status::Ok()});
  m.outputs.push_back({.id = id,
                       .output = Output(0, {5}, 1, engine::FinishReason::kLength),
                       .has_pages = true,
                       .pages_status = Status::Ok(),
                       .pages = engine::EncodeBundle(bundle)});
  h.reply[1] = EncodeFromRank(m);
  ASSERT_TRUE(h.hub.Exchange().ok());
  EXPECT_EQ(log, (std::vector<std::string>{"pages:1:fp", "last output"}));

  // The rank could not export: the leg hears why, still before its last output.
  log.clear();
  RemoteForm form2;
  form2.export_pages = true;
  form2.on_pages = [&log](StatusOr<engine::PageBundle> pages) {
    log.push_back(pages.ok() ? "pages" : "no pages: " + pages.status().message());
  };
  h.hub.Ship(2, leg, std::move(form2), {});
  ASSERT_TRUE(h.hub.Exchange().ok());
  const uint64_t id2 = h.received[2].requests[0].id;
  m = FromRank();
  m.verdicts.push_back({.id = id2, .status = Status::Ok()});
  m.outputs.push_back({.id = id2,
                       .output = Output(0, {5}, 1, engine::FinishReason::kStop),
                       .has_pages = true,
                       .pages_status = NotFound("the prompt's pages were evicted"),
                       .pages = ""});
  h.reply[2] = EncodeFromRank(m);
  ASSERT_TRUE(h.hub.Exchange().ok());
  EXPECT_EQ(log,
            (std::vector<std::string>{"no pages: the prompt's pages were evicted", "last output"}));
}

}  // namespace
}  // namespace deepinfer::server
