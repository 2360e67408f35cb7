// libFuzzer entry point of the ONNX model reader: the bytes are a serialized ModelProto, imported
// by ir::importOnnxModel (with and without onnx's checker) and by Builder::createFromOnnxModel.
// A reader may refuse any input with xtrain::error (or another std::exception it documents); it may
// not crash, hang or trip ASan/UBSan. Build: docs/fuzzing.md (XTRAIN_LIBFUZZER=ON, clang).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "ir/onnx/onnx_import.hpp"
#include "xtrain/builder.hpp"
#include "xtrain/error.hpp"

namespace {

// importOnnxModel and createFromOnnxModel take "a path if such a file exists, else the bytes": an
// input that spells an existing path would fuzz the file system instead of the parser.
bool namesAFile(const std::string& bytes) {
  if (bytes.empty() || bytes.size() > 4096 || bytes.find('\0') != std::string::npos) return false;
  std::error_code ec;
  return std::filesystem::exists(bytes, ec);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  if (namesAFile(bytes)) return -1;  // not added to the corpus
  for (bool checker : {true, false}) {
    xtrain::ir::OnnxImportOptions options;
    options.runChecker = checker;
    try {
      auto model = xtrain::ir::importOnnxModel(bytes, options);
      (void)model;
    } catch (const std::exception&) {
      // A clear refusal is the expected answer to a damaged model.
    }
  }
  try {
    auto builder = xtrain::Builder::createFromOnnxModel(bytes);
    (void)builder->getModelProto();
  } catch (const std::exception&) {
  }
  return 0;
}
