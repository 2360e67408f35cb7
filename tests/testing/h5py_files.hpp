// HDF5 files written by h5py, as users make them: tests/data/make_h5py_layouts.py run with
// Debian's /usr/bin/python3 (its docstring lists every file). Tests skip without python3-h5py.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "testing/process_testing.hpp"

namespace xtrain::testing {

// Whether /usr/bin/python3 can import h5py and numpy.
inline bool h5pyAvailable() {
  return runCommand("/usr/bin/python3 -c 'import h5py, numpy'", {"", 60}).exitCode == 0;
}

// Writes every file of make_h5py_layouts.py into `dir`; false (with a test failure) when the
// script fails.
inline bool writeH5pyFiles(const std::string& dir) {
  const CommandResult r = runCommand("/usr/bin/python3 " + std::string(XTRAIN_TEST_DATA_DIR) +
                                         "/make_h5py_layouts.py '" + dir + "'",
                                     {dir, 120});
  EXPECT_EQ(r.exitCode, 0) << r.output;
  return r.exitCode == 0;
}

}  // namespace xtrain::testing
