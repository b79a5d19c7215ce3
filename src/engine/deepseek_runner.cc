#include "engine/deepseek_runner.h"

#include <algorithm>
#include <string>

namespace deepinfer::engine {
namespace {

class DeepSeekSequence : public RunnerSequence {
 public:
  explicit DeepSeekSequence(model::SequenceState state) : state_(std::move(state)) {}
  int64_t length() const override { return state_.length; }
  model::SequenceState& state() { return state_; }
  const model::SequenceState& state() const { return state_; }

 private:
  model::SequenceState state_;
};

// Context limit when the config does not state one.
constexpr int64_t kDefaultMaxPositions = 1 << 20;

}  // namespace

StatusOr<std::unique_ptr<DeepSeekRunner>> DeepSeekRunner::Create(
    const model::Model* model, const DeepSeekRunnerOptions& options) {
  int64_t page_tokens = options.page_tokens;
  const int64_t min_tokens = model::MinPageTokens(model->config(), model->layers());
  if (page_tokens == 0) page_tokens = (64 + min_tokens - 1) / min_tokens * min_tokens;
  DI_ASSIGN_OR_RETURN(model::KvPageLayout layout,
                      model::MakeKvPageLayout(model->config(), model->layers(), page_tokens));
  return std::unique_ptr<DeepSeekRunner>(new DeepSeekRunner(model, std::move(layout), options));
}

int64_t DeepSeekRunner::vocab_size() const { return model_->config().vocab_size; }
int32_t DeepSeekRunner::eos_token_id() const { return model_->config().eos_token_id; }

int64_t DeepSeekRunner::sequence_bytes() const { return model_->NewSequence().CacheBytes(); }

int64_t DeepSeekRunner::max_positions() const {
  const int64_t m = model_->config().max_position_embeddings;
  return m > 0 ? m : kDefaultMaxPositions;
}

Status DeepSeekRunner::InitPages(int64_t n_pages) {
  if (store_) return InvalidArgument("InitPages called twice");
  store_ = std::make_unique<model::KvPageStore>(layout_, n_pages, /*growable=*/false);
  return Status::Ok();
}

std::unique_ptr<RunnerSequence> DeepSeekRunner::NewSequence() {
  return std::make_unique<DeepSeekSequence>(
      model::NewSequenceState(model_->config(), model_->layers(), store_.get()));
}

Status DeepSeekRunner::AdoptPrefix(RunnerSequence* seq, std::span<const int32_t> pages,
                                   std::span<const int32_t> tokens) {
  model::SequenceState& st = static_cast<DeepSeekSequence*>(seq)->state();
  st.pages.assign(pages.begin(), pages.end());
  return model_->AdoptPrefix(&st, tokens);
}

StatusOr<std::unique_ptr<RunnerSequence>> DeepSeekRunner::Fork(const RunnerSequence& parent) {
  return std::unique_ptr<RunnerSequence>(std::make_unique<DeepSeekSequence>(
      model::ForkSequenceState(static_cast<const DeepSeekSequence&>(parent).state())));
}

Status DeepSeekRunner::CopyPage(int32_t from, int32_t to) {
  if (!store_) return InvalidArgument("CopyPage before InitPages");
  const int64_t n = store_->capacity();
  if (from < 0 || from >= n || to < 0 || to >= n) {
    return InvalidArgument("CopyPage: page id outside the pool");
  }
  std::copy_n(store_->page(from), layout_.page_bytes, store_->page(to));
  return Status::Ok();
}

Status DeepSeekRunner::Forward(std::span<const RunnerInput> inputs, std::vector<float>* logits) {
  std::vector<model::ForwardInput> fin;
  fin.reserve(inputs.size());
  for (const RunnerInput& in : inputs) {
    model::SequenceState& st = static_cast<DeepSeekSequence*>(in.seq)->state();
    st.pages.assign(in.pages.begin(), in.pages.end());
    if (in.logit_rows < 0 || in.logit_rows > static_cast<int64_t>(in.tokens.size())) {
      return InvalidArgument("runner input asks for " + std::to_string(in.logit_rows) +
                             " rows of logits from " + std::to_string(in.tokens.size()) +
                             " tokens");
    }
    fin.push_back({&st, in.tokens, in.logit_rows});
  }
  model::ForwardOptions opt;
  opt.index_key_mode = options_.index_key_mode;
  model::ForwardOutput out;
  DI_RETURN_IF_ERROR(model_->Forward(fin, opt, &out));
  // The model's rows are already in input order, each input's in position order.
  *logits = std::move(out.logits);
  return Status::Ok();
}

}  // namespace deepinfer::engine
