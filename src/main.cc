#include "tools/cli.h"

int main(int argc, char** argv) { return deepinfer::tools::Main(argc, argv); }
