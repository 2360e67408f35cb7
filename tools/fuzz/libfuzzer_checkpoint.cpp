// libFuzzer entry point of the HDF5 readers: the training-data reader (DatasetReader) and the
// checkpoint reader (read, verify, listDatasets, readAttributes, CheckpointDirectory's list and
// newestComplete). They read from paths, so each input is written to files of a private temporary
// directory first.
//
// The first byte chooses what the rest is:
//   0: a data set file          -> DatasetReader: names, info, reads of its first samples
//   1: a checkpoint index       -> <dir>/ckpt-00000001/checkpoint.h5 alone (no part file)
//   2: an index and a part file -> a 4-byte little-endian length, that many bytes of checkpoint.h5,
//                                  then part-0.h5
// A reader may refuse any input with an exception; it may not crash, hang or trip ASan/UBSan.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/checkpoint_directory.hpp"
#include "checkpoint/dataset_reader.hpp"

namespace fs = std::filesystem;

namespace {

// One directory per fuzzing process, emptied before every input and removed at exit.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string templ = (fs::temp_directory_path() / "xtrain-libfuzzer-XXXXXX").string();
    if (!mkdtemp(templ.data())) std::abort();
    path = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const fs::path& scratch() {
  static const ScratchDir dir;
  return dir.path;
}

void writeFile(const fs::path& p, const char* data, size_t size) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
}

void readDataSet(const fs::path& file) {
  xtrain::checkpoint::DatasetReader reader(file.string());
  for (const auto& name : reader.datasetNames()) {
    try {
      const xtrain::TensorInfo info = reader.info(name);
      const auto& shape = info.shape();
      if (shape.empty() || shape[0] <= 0) continue;
      int64_t perSample = 1;
      for (size_t i = 1; i < shape.size(); ++i) perSample *= shape[i] > 0 ? shape[i] : 1;
      // Reads at most two samples of a bounded size, so a header that claims terabytes costs nothing.
      if (perSample <= 0 || perSample > (1 << 20)) continue;
      std::vector<int64_t> samples{0};
      if (shape[0] > 1) samples.push_back(shape[0] - 1);
      std::vector<double> dst(samples.size() * static_cast<size_t>(perSample));
      reader.readSamples(name, samples, xtrain::DataType::DOUBLE, dst.data());
    } catch (const std::exception&) {
    }
  }
}

void readCheckpoint(const fs::path& dir) {
  namespace ck = xtrain::checkpoint;
  const std::string ckpt = (dir / "ckpt-00000001").string();
  auto attempt = [](auto&& f) {
    try {
      f();
    } catch (const std::exception&) {
    }
  };
  attempt([&] { (void)ck::verify(ckpt); });
  attempt([&] { (void)ck::listDatasets(ckpt); });
  attempt([&] { (void)ck::readAttributes(ckpt); });
  attempt([&] { (void)ck::read(ckpt); });
  attempt([&] { (void)ck::CheckpointDirectory(dir.string()).list(); });
  attempt([&] { (void)ck::CheckpointDirectory(dir.string()).newestComplete(); });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const fs::path dir = scratch();
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  const char* rest = reinterpret_cast<const char*>(data + 1);
  const size_t restSize = size - 1;
  switch (data[0] % 3) {
    case 0: {
      writeFile(dir / "data.h5", rest, restSize);
      try {
        readDataSet(dir / "data.h5");
      } catch (const std::exception&) {
      }
      break;
    }
    case 1:
      writeFile(dir / "ckpt-00000001" / "checkpoint.h5", rest, restSize);
      writeFile(dir / "latest", "ckpt-00000001\n", 14);
      readCheckpoint(dir);
      break;
    case 2: {
      if (restSize < 4) return 0;
      const uint32_t indexSize = static_cast<uint32_t>(static_cast<uint8_t>(rest[0])) |
                                 static_cast<uint32_t>(static_cast<uint8_t>(rest[1])) << 8 |
                                 static_cast<uint32_t>(static_cast<uint8_t>(rest[2])) << 16 |
                                 static_cast<uint32_t>(static_cast<uint8_t>(rest[3])) << 24;
      const size_t n = std::min<size_t>(indexSize, restSize - 4);
      writeFile(dir / "ckpt-00000001" / "checkpoint.h5", rest + 4, n);
      writeFile(dir / "ckpt-00000001" / "part-0.h5", rest + 4 + n, restSize - 4 - n);
      writeFile(dir / "latest", "ckpt-00000001\n", 14);
      readCheckpoint(dir);
      break;
    }
  }
  return 0;
}
