// Runs tests/structured/validate_outputs.py (python3-jsonschema) on a JSON Lines file of
// {"name", "schema", "output"} records: the independent check of constrained outputs that the
// structured and engine tests share.
#pragma once

#include <cstdio>
#include <string>

namespace deepinfer::structured::test {

struct ValidatorResult {
  int exit_code = -1;
  std::string report;  // the script's output: failures, then "validated N outputs, F failures"
};

inline ValidatorResult RunSchemaValidator(const std::string& jsonl_path) {
  ValidatorResult r;
  const std::string cmd = "python3 " + std::string(DEEPINFER_SOURCE_DIR) +
                          "/tests/structured/validate_outputs.py " + jsonl_path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  while (fgets(buf, sizeof(buf), p)) r.report += buf;
  r.exit_code = pclose(p);
  return r;
}

}  // namespace deepinfer::structured::test
