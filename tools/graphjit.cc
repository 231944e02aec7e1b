// The graphjit command line (tools/command_line.h).
#include "tools/command_line.h"

int main(int argc, char** argv) { return graphjit::CommandLine(argc, argv); }
