// xckpt's commands. Each takes its arguments (after the command name), prints to `out`, and returns
// the exit code: 0 success, 1 a negative answer (verify found problems, diff found differences).
// Bad arguments throw UsageError and bad files throw xtrain::error (checkpoint::CheckpointError):
// main() prints them and exits 2.
#pragma once

#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace xtrain::tools::xckpt {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

using Args = std::vector<std::string>;

int ls(const Args& args, std::ostream& out);
int show(const Args& args, std::ostream& out);
int verify(const Args& args, std::ostream& out);
int diff(const Args& args, std::ostream& out);
int exportOnnx(const Args& args, std::ostream& out);

const char* usageText();

// The positional arguments of a command, after checking that there are `count` of them and that
// every flag is one of `flags` (flags given are returned in `given`).
Args positional(const Args& args, size_t count, const char* command,
                const std::vector<std::string>& flags = {},
                std::vector<std::string>* given = nullptr);

}  // namespace xtrain::tools::xckpt
