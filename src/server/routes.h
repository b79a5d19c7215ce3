// The route handlers (one file per API family). Each answers exactly once on its Exchange;
// errors go out in the family's format.
#pragma once

#include "server/asio.h"
#include "server/exchange.h"
#include "server/server_context.h"

namespace deepinfer::server {

// openai_chat.cc
net::awaitable<void> HandleChatCompletions(ServerContext& ctx, Exchange& ex);
// openai_completions.cc
net::awaitable<void> HandleCompletions(ServerContext& ctx, Exchange& ex);
// anthropic_messages.cc
net::awaitable<void> HandleMessages(ServerContext& ctx, Exchange& ex);
net::awaitable<void> HandleCountTokens(ServerContext& ctx, Exchange& ex);
// misc_routes.cc: GET /v1/models, POST /tokenize, POST /detokenize, GET /health, GET /metrics
net::awaitable<void> HandleModels(ServerContext& ctx, Exchange& ex);
net::awaitable<void> HandleTokenize(ServerContext& ctx, Exchange& ex);
net::awaitable<void> HandleDetokenize(ServerContext& ctx, Exchange& ex);
net::awaitable<void> HandleHealth(ServerContext& ctx, Exchange& ex);
net::awaitable<void> HandleMetrics(ServerContext& ctx, Exchange& ex);
// pd_routes.cc: GET /internal/info, POST /internal/pd/prefill (docs/disaggregation.md)
net::awaitable<void> HandleInternalInfo(ServerContext& ctx, Exchange& ex);
net::awaitable<void> HandlePdPrefill(ServerContext& ctx, Exchange& ex);

}  // namespace deepinfer::server
