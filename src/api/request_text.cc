#include "api/request_text.h"

#include <span>
#include <utility>

#include "core/check.h"

namespace deepinfer::api {

bool SampleText::Push(int32_t token) {
  StatusOr<std::string> piece = detok_.Push(token);
  if (piece.ok()) pending_ += *piece;
  return detok_.stopped();
}

void SampleText::Finish() {
  if (!detok_.stopped()) pending_ += detok_.Finish();
}

std::string SampleText::Take() {
  std::string out = std::move(pending_);
  pending_.clear();
  return out;
}

StatusOr<std::shared_ptr<RequestText>> RequestText::Attach(const tokenizer::Tokenizer* tok,
                                                           bool skip_special_tokens,
                                                           engine::Request* request) {
  if (!tok) {
    if (!request->params.stop.empty()) {
      return InvalidArgument("stop strings need a tokenizer (the model folder has none)");
    }
    return std::shared_ptr<RequestText>();
  }
  auto text = std::shared_ptr<RequestText>(new RequestText());
  text->first_index_ = request->sample_index;
  for (int32_t i = 0; i < request->params.n; ++i) {
    DI_ASSIGN_OR_RETURN(auto detok, tokenizer::StreamingDetokenizer::Create(
                                        *tok, request->params.stop, skip_special_tokens));
    text->samples_.emplace_back(std::move(detok));
  }
  // Called once per appended token with the sample's output so far: feed the newest token.
  auto stop_check = [text](int64_t sample_index) {
    return [text, sample_index](std::span<const int32_t> output) {
      return text->sample(sample_index).Push(output.back());
    };
  };
  request->stop_check = stop_check(request->sample_index);
  request->prepare_sample = [stop_check](engine::Request* sample) {
    sample->stop_check = stop_check(sample->sample_index);
  };
  return text;
}

SampleText& RequestText::sample(int64_t sample_index) {
  const int64_t i = sample_index - first_index_;
  CHECK(i >= 0 && i < static_cast<int64_t>(samples_.size()))
      << "sample_index " << sample_index << " of a request with samples " << first_index_ << ".."
      << first_index_ + static_cast<int64_t>(samples_.size()) - 1;
  return samples_[static_cast<size_t>(i)];
}

}  // namespace deepinfer::api
