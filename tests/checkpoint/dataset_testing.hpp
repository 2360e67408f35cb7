// Helpers for the tests of DatasetReader on damaged files: a read in a child process, so that a
// fault or an endless loop inside HDF5 is seen as the child's end rather than ending the test.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "checkpoint/dataset_reader.hpp"
#include "xtrain/error.hpp"

namespace xtrain::checkpoint::testing {

// Runs `work` in a forked child whose exit code is what `work` returns, under a 20 s alarm (a hang
// is a defect too: SIGALRM ends the child), and returns the child's wait status; -1 when the child
// could not be started (a test failure is recorded).
inline int statusOfChild(const std::function<int()>& work) {
  const pid_t child = ::fork();
  if (child < 0) {
    ADD_FAILURE() << "fork failed";
    return -1;
  }
  if (child == 0) {
    ::alarm(20);
    ::_exit(work());
  }
  int status = 0;
  if (::waitpid(child, &status, 0) != child) {
    ADD_FAILURE() << "waitpid failed";
    return -1;
  }
  return status;
}

// Reads every dataset of `file` whole, each as its own type, as xtrain reads training data, and
// returns how many were refused with xtrain::error (a file refused as a whole counts as one).
inline int readEveryDataset(const std::string& file) {
  int refused = 0;
  try {
    DatasetReader r(file);
    for (const auto& name : r.datasetNames()) {
      try {
        const TensorInfo info = r.info(name);
        std::vector<int64_t> samples(static_cast<size_t>(info.shape()[0]));
        for (size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<int64_t>(i);
        std::vector<unsigned char> out(static_cast<size_t>(info.nbytes()));
        r.readSamples(name, samples, info.dataType(), out.data());
      } catch (const error&) {
        ++refused;
      }
    }
  } catch (const error&) {
    ++refused;
  }
  return refused;
}

}  // namespace xtrain::checkpoint::testing
