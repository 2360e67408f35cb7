// Reference numbers for training correctness tests, read from the text files in tests/data (written
// by tests/data/make_sgd_reference.py; format in tests/data/README.md).
//
//   auto ref = loadReferenceData(std::string(XTRAIN_TEST_DATA_DIR) + "/sgd_reference_mlp.txt");
//   const HostTensor& w1 = ref.at("W1");  // initial value
//   float lr = std::stof(ref.hyper.at("lr"));
#pragma once

#include <map>
#include <string>

#include "common/host_tensor.hpp"

namespace xtrain::testing {

struct ReferenceData {
  // FLOAT or INT64 tensors by name: "W1", "x/step0", "labels/step0", "loss/step0", "final/W1", ...
  std::map<std::string, HostTensor> tensors;
  // From the "hyper key=value ..." lines, e.g. hyper.at("lr") == "0.05".
  std::map<std::string, std::string> hyper;
  // The file it was loaded from (for messages).
  std::string path;

  // Throws xtrain::error naming the missing tensor and the file.
  const HostTensor& at(const std::string& name) const;
};

// Parses a reference file. Throws xtrain::error naming the file (and the line, for parse errors)
// when the file cannot be read or is malformed: unknown line kind, bad or missing header fields,
// unknown dtype, value count not matching the shape, unparsable value, duplicate tensor or hyper
// key, missing values line.
ReferenceData loadReferenceData(const std::string& path);

}  // namespace xtrain::testing
