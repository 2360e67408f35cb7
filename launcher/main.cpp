// xrun: starts a job of instances of a program (like Graphcore's poprun). See `xrun --help` and
// docs/launcher-environment.md; the work is in the xtrain_launcher library beside this file.
#include "launcher/xrun.hpp"

int main(int argc, char** argv) {
  return xtrain::launcher::xrunMain(argc, argv);
}
