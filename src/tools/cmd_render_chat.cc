// `deepinfer render-chat [--tokenizer DIR]`: JSON Lines on stdin, one prompt per line on stdout.
//
// Input record: {"messages": […], "tools": […]?, "options": {"thinking", "reasoning_effort",
// "drop_thinking", "add_generation_prompt"}?} — the chat-v41 fixture's case format; other keys
// are ignored. Output: {"prompt": "<｜begin▁of▁sentence｜>…"} or {"error": "..."}.
//
// The BOS text is a constant of the V4.1 format, so no tokenizer is needed to render. With
// --tokenizer, DIR/tokenizer_config.json (when present) supplies `bos_token` instead.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "io/json_file.h"
#include "tokenizer/chat/chat_encoder.h"
#include "tools/cli.h"
#include "tools/json_lines.h"

namespace deepinfer::tools {
namespace {

StatusOr<std::string> BosFromTokenizerDir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) return NotFound("--tokenizer: " + dir + " is not a directory");
  const std::string path = (fs::path(dir) / "tokenizer_config.json").string();
  if (!fs::exists(path)) return std::string(tokenizer::kBosText);
  DI_ASSIGN_OR_RETURN(nlohmann::json config, io::LoadJsonFile(path));
  auto it = config.find("bos_token");
  if (it == config.end() || it->is_null()) return std::string(tokenizer::kBosText);
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
    return (*it)["content"].get<std::string>();
  }
  return InvalidArgument(path + ": bos_token must be a string or {\"content\": string}");
}

}  // namespace

void RegisterRenderChat(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "render-chat", "Render chat messages to a V4.1 prompt (JSON Lines on stdin and stdout)");
  auto tokenizer_dir = std::make_shared<std::string>();
  cmd->add_option("--tokenizer", *tokenizer_dir,
                  "tokenizer directory; its tokenizer_config.json bos_token replaces the BOS text");
  cmd->callback([exit_code, tokenizer_dir] {
    std::string bos(tokenizer::kBosText);
    if (!tokenizer_dir->empty()) {
      StatusOr<std::string> from_dir = BosFromTokenizerDir(*tokenizer_dir);
      if (!from_dir.ok()) {
        std::fprintf(stderr, "deepinfer render-chat: %s\n", from_dir.status().message().c_str());
        *exit_code = 2;
        return;
      }
      bos = *from_dir;
    }
    RunJsonLines(std::cin, std::cout,
                 [&bos](const nlohmann::ordered_json& record) -> StatusOr<nlohmann::ordered_json> {
                   DI_ASSIGN_OR_RETURN(std::string prompt,
                                       tokenizer::RenderChatRecord(record, bos));
                   return nlohmann::ordered_json{{"prompt", std::move(prompt)}};
                 });
    *exit_code = 0;
  });
}

}  // namespace deepinfer::tools
