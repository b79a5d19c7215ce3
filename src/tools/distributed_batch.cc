#include "tools/distributed_batch.h"

#include <sys/resource.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "dist/mpi_world.h"
#include "dist/work_assignment.h"
#include "tools/generate_batch.h"

namespace deepinfer::tools {
namespace {

// A message with its status: "+" payload, or "-" error text.
std::string Ok(const std::string& payload) { return "+" + payload; }
std::string Failed(const Status& s) { return "-" + s.ToString(); }
bool IsOk(const std::string& message) { return !message.empty() && message[0] == '+'; }

StatusOr<std::string> ReadFile(const std::string& path) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// This process's peak resident set (getrusage reports KiB on Linux).
int64_t PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) / 1024;
}

}  // namespace

int64_t BatchLineWork(const LoadedEngine& e, const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return 1;
  int64_t prompt = 0;
  if (const auto ids = j.find("prompt_ids"); ids != j.end() && ids->is_array()) {
    prompt = static_cast<int64_t>(ids->size());
  } else if (const auto text = j.find("prompt"); text != j.end() && text->is_string()) {
    const auto& s = text->get_ref<const std::string&>();
    if (e.tokenizer) {
      StatusOr<std::vector<int32_t>> ids = e.tokenizer->Encode(s);
      prompt = ids.ok() ? static_cast<int64_t>(ids->size()) : static_cast<int64_t>(s.size() / 4);
    } else {
      prompt = static_cast<int64_t>(s.size() / 4);
    }
  }
  const auto number = [&](const char* key, int64_t fallback) {
    const auto it = j.find(key);
    return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
  };
  return prompt + number("max_tokens", 16) * std::max<int64_t>(number("n", 1), 1);
}

Status RunDistributedBatch(LoadedEngine& e, const std::string& batch_file) {
  const dist::MpiWorld& world = dist::MpiWorld::Instance();
  std::string message;
  if (world.rank() == 0) {
    StatusOr<std::string> content = ReadFile(batch_file);
    message = content.ok() ? Ok(*content) : Failed(content.status());
  }
  message = world.Broadcast(std::move(message));
  if (!IsOk(message)) return InvalidArgument(message.substr(1));
  std::istringstream in(message.substr(1));
  const std::vector<BatchLine> lines = ReadBatchLines(in);

  std::vector<int64_t> work;
  work.reserve(lines.size());
  for (const BatchLine& l : lines) work.push_back(BatchLineWork(e, l.text));
  const std::vector<int> rank_of = dist::AssignByWork(work, world.size());
  std::vector<BatchLine> mine;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (rank_of[i] == world.rank()) mine.push_back(lines[i]);
  }

  // Context parallelism: every rank prefills each long prompt with the others, in input order,
  // before the engines run; the sequence lands on the rank that runs the line, whose request
  // then continues it (engine/context_parallel_prefill.h).
  if (e.context) {
    for (size_t i = 0; i < lines.size(); ++i) {
      StatusOr<LinePrompt> p = ReadLinePrompt(e, lines[i].text);
      if (!p.ok() || !e.context->Splits(e, p->ids)) {
        continue;  // the same verdict on every rank: a refused line is refused by its rank
      }
      e.context->Prefill(e, p->ids, p->prompt_logprobs, rank_of[i]);
    }
  }

  // Results as newline-separated JSON lines (a JSON line holds no raw newline).
  StatusOr<std::vector<std::string>> results = RunBatchLines(e, mine);
  std::string reply;
  if (results.ok()) {
    for (const std::string& r : *results) reply += r + "\n";
    reply = Ok(reply);
  } else {
    reply = Failed(results.status());
  }
  const std::vector<std::string> replies = world.GatherToRoot(reply);
  // Per-rank figures on stderr (stdout is the single process's bytes).
  const engine::EngineStats st = e.engine->stats();
  const std::vector<std::string> figures = world.GatherToRoot(
      "rank " + std::to_string(world.rank()) + ": " + std::to_string(mine.size()) + " lines, " +
      std::to_string(st.steps) + " steps, " + std::to_string(st.tokens_computed) +
      " tokens computed, " + std::to_string(st.preemptions) + " preemptions, peak RSS " +
      std::to_string(PeakRssMiB()) + " MiB" +
      (st.spec.draft_calls > 0
           ? "; DSpark " + std::to_string(st.spec.verified) + " drafts verified, " +
                 std::to_string(st.spec.accepted) + " accepted"
           : std::string()) +
      (e.context ? "; " + e.context->Report() + ", " + std::to_string(st.tails_continued) +
                       " requests continued a handed-over sequence"
                 : std::string()) +
      "\n");
  for (const std::string& f : figures) std::cerr << f;
  if (e.experts) std::cerr << ExpertParallelReport(*e.experts);
  if (world.rank() != 0) return Status::Ok();

  std::vector<std::istringstream> streams;
  for (const std::string& r : replies) {
    if (!IsOk(r)) return Internal("a rank failed: " + r.substr(1));
    streams.emplace_back(r.substr(1));
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string out;
    if (!std::getline(streams[static_cast<size_t>(rank_of[i])], out)) {
      return Internal("rank " + std::to_string(rank_of[i]) + " returned too few lines");
    }
    std::cout << out << "\n";
  }
  std::cout.flush();
  return Status::Ok();
}

}  // namespace deepinfer::tools
