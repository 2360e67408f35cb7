// Writing and reading back: every element type, scalars and empty tensors, encoded names, parts
// from several instances, attributes, and a checkpoint moved after it was written.
#include <unistd.h>

#include <map>
#include <thread>

#include "checkpoint_testing.hpp"

namespace xtrain::checkpoint::testing {
namespace {

TEST(CheckpointNames, EncodeAndDecode) {
  EXPECT_EQ(encodeName("a/b%c"), "a%2Fb%25c");
  EXPECT_EQ(decodeName("a%2Fb%25c"), "a/b%c");
  EXPECT_EQ(encodeName("plain_name.1"), "plain_name.1");
  for (const std::string n : {"", "/", "%", "%2F", "a//b", "x%25y/", "%%2F%"}) {
    EXPECT_EQ(decodeName(encodeName(n)), n) << n;
    EXPECT_EQ(encodeName(n).find('/'), std::string::npos) << n;
  }
  EXPECT_EQ(decodeName("100%"), "100%");  // not an escape: kept
  EXPECT_EQ(checkpointName(10), "ckpt-00000010");
  EXPECT_EQ(checkpointName(123456789), "ckpt-123456789");
}

class CheckpointRoundTrip : public CheckpointTest {};

TEST_F(CheckpointRoundTrip, EveryElementTypeKeepsItsBytes) {
  const std::vector<DataType> types = {
      DataType::UINT8,     DataType::INT8,       DataType::UINT16,     DataType::INT16,
      DataType::INT32,     DataType::INT64,      DataType::UINT32,     DataType::UINT64,
      DataType::BOOL,      DataType::FLOAT,      DataType::FLOAT16,    DataType::BFLOAT16,
      DataType::DOUBLE,    DataType::FLOAT8_143, DataType::FLOAT8_152, DataType::COMPLEX64,
      DataType::COMPLEX128};
  std::mt19937 rng(3);
  std::vector<Dataset> datasets;
  for (DataType t : types) {
    HostTensor v(TensorInfo(t, {2, 3}));
    for (size_t i = 0; i < v.nbytes(); ++i) {
      v.raw()[i] = static_cast<std::byte>(t == DataType::BOOL ? rng() % 2 : rng() % 256);
    }
    datasets.push_back({std::string("/weights/") + dataTypeName(t), std::move(v)});
  }
  // A scalar and an empty tensor.
  datasets.push_back({"/state/scalar", HostTensor::fromVector<int64_t>({}, {42})});
  datasets.push_back({"/state/empty", HostTensor(TensorInfo(DataType::FLOAT, {0, 3}))});
  const std::string dir = save(root_, 1, {datasets});

  const Contents c = read(dir);
  ASSERT_EQ(c.datasets.size(), datasets.size());
  for (const auto& d : datasets) {
    ASSERT_TRUE(c.datasets.count(d.path)) << d.path;
    EXPECT_TRUE(sameBytes(c.datasets.at(d.path), d.value)) << d.path;
  }
  // listDatasets describes the same without reading data.
  const auto infos = listDatasets(dir);
  ASSERT_EQ(infos.size(), datasets.size());
  for (const auto& info : infos) {
    EXPECT_EQ(info.info, c.datasets.at(info.path).info()) << info.path;
    EXPECT_EQ(info.partFile, "part-0.h5");
  }
}

TEST_F(CheckpointRoundTrip, NamesWithSlashAndPercentAreOneDataset) {
  const std::string name = "layer/1%w/kernel";
  const std::string path = "/weights/" + encodeName(name);
  const std::string slotPath = "/optimizer/" + encodeName(name) + "/velocity";
  const std::string dir =
      save(root_, 3, {{{path, floatTensor({2}, 1)}, {slotPath, floatTensor({2}, 2)}}});
  const Contents c = read(dir);
  ASSERT_EQ(c.datasets.size(), 2u);
  EXPECT_TRUE(sameBytes(c.datasets.at(path), floatTensor({2}, 1)));
  EXPECT_TRUE(sameBytes(c.datasets.at(slotPath), floatTensor({2}, 2)));
  // The dataset's last component decodes to the tensor's name.
  const std::string stored = c.datasets.rbegin()->first;  // "/weights/..." sorts last
  EXPECT_EQ(decodeName(stored.substr(std::string("/weights/").size())), name);
}

TEST_F(CheckpointRoundTrip, AttributesRoundTrip) {
  Attributes a = sampleAttributes(17);
  a.hyperparameters["weightDecay"] = 1e-4;
  const std::string dir = save(root_, 17, sampleParts(0), a);
  const Attributes r = readAttributes(dir);
  EXPECT_EQ(r.formatName, kFormatName);
  EXPECT_EQ(r.formatVersion, kFormatVersion);
  EXPECT_EQ(r.step, 17);
  EXPECT_EQ(r.epoch, a.epoch);
  EXPECT_EQ(r.samplesSeen, a.samplesSeen);
  EXPECT_EQ(r.globalReplicationFactor, 4);
  EXPECT_EQ(r.instances, 2);
  EXPECT_EQ(r.optimizerType, "SGD");
  EXPECT_EQ(r.hyperparameters, a.hyperparameters);
  EXPECT_EQ(r.graphFingerprint, "fp-1234");
  EXPECT_EQ(r.creationTime, a.creationTime);
  EXPECT_EQ(r.xtrainVersion, "0.1.0");
  // read() gives the same attributes; checkpoint.h5 itself works as the path.
  EXPECT_EQ(read(dir + "/checkpoint.h5").attributes.hyperparameters, a.hyperparameters);
}

TEST_F(CheckpointRoundTrip, EmptyCreationTimeIsFilledAndEmptyStringsStayEmpty) {
  Attributes a;
  a.step = 2;
  const std::string dir = save(root_, 2, sampleParts(0), a);
  const Attributes r = readAttributes(dir);
  EXPECT_EQ(r.creationTime.size(), std::string("2024-05-01T12:00:00Z").size()) << r.creationTime;
  EXPECT_EQ(r.creationTime.back(), 'Z');
  EXPECT_EQ(r.optimizerType, "");
  EXPECT_TRUE(r.hyperparameters.empty());
}

TEST_F(CheckpointRoundTrip, PartsOfSeveralInstancesReadAsOne) {
  const std::string final = (root_ / checkpointName(5)).string();
  const std::string staging = final + ".tmp-x";
  std::map<std::string, HostTensor> expected;
  for (int part = 0; part < 4; ++part) {
    std::vector<Dataset> mine;
    for (int k = 0; k < 3; ++k) {
      const std::string w = "w" + std::to_string(part) + "_" + std::to_string(k);
      mine.push_back({"/weights/" + w, floatTensor({5, static_cast<int64_t>(k + 1)},
                                                   static_cast<float>(10 * part + k))});
      mine.push_back({"/optimizer/" + w + "/velocity", floatTensor({5, 1}, -1.0f * part)});
    }
    for (const auto& d : mine) expected.emplace(d.path, d.value);
    // Parts are written in any order (instances run in parallel).
    writePart(staging, 3 - part, mine);
  }
  writeIndex(staging, sampleAttributes(5), 4);
  commit(staging, final);
  EXPECT_FALSE(fs::exists(staging));
  const Contents c = read(final);
  ASSERT_EQ(c.datasets.size(), expected.size());
  for (const auto& [path, value] : expected)
    EXPECT_TRUE(sameBytes(c.datasets.at(path), value)) << path;
  for (const auto& info : listDatasets(final)) {
    // w<p>_k was written by instance 3 - p.
    const int writer = 3 - (info.path[info.path.find("/w", 1) + 2] - '0');
    EXPECT_EQ(info.partFile, "part-" + std::to_string(writer) + ".h5") << info.path;
  }
}

// Restores the working directory on scope exit.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const fs::path& dir) : saved_(fs::current_path()) {
    fs::current_path(dir);
  }
  ~WorkingDirectory() { fs::current_path(saved_); }

 private:
  fs::path saved_;
};

TEST_F(CheckpointRoundTrip, MovedCheckpointReadsFromAnyWorkingDirectory) {
  const std::string dir = save(root_ / "run", 4, sampleParts(1));
  const fs::path moved = root_ / "elsewhere" / "renamed-checkpoint";
  fs::create_directories(moved.parent_path());
  fs::rename(dir, moved);
  fs::remove_all(root_ / "run");
  fs::create_directories(root_ / "cwd");
  WorkingDirectory cwd(root_ / "cwd");
  const Contents c = read(moved.string());
  EXPECT_TRUE(sameBytes(c.datasets.at("/weights/W1"), floatTensor({4, 3}, 1)));
  // A relative path works too.
  EXPECT_EQ(read("../elsewhere/renamed-checkpoint").datasets.size(), 5u);
  EXPECT_TRUE(verify(moved.string()).empty());
}

TEST_F(CheckpointRoundTrip, APartInTheWorkingDirectoryIsNotMistakenForAMissingOne) {
  // HDF5 falls back to the working directory for a relative source it cannot find; the reader must
  // not accept a stranger's part-1.h5 from there.
  const std::string dir = save(root_ / "run", 4, sampleParts(1));
  fs::create_directories(root_ / "cwd");
  fs::copy_file(fs::path(dir) / "part-1.h5", root_ / "cwd" / "part-1.h5");
  fs::remove(fs::path(dir) / "part-1.h5");
  WorkingDirectory cwd(root_ / "cwd");
  expectCheckpointError([&] { read(dir); }, {"part-1.h5", "missing"});
}

TEST_F(CheckpointRoundTrip, ResavingAStepReplacesIt) {
  save(root_, 8, sampleParts(1));
  const std::string dir = save(root_, 8, sampleParts(2));
  EXPECT_TRUE(sameBytes(read(dir).datasets.at("/weights/W1"), floatTensor({4, 3}, 2)));
  // Nothing of the replaced one is left.
  size_t entries = 0;
  for (const auto& e : fs::directory_iterator(root_)) {
    ++entries;
    EXPECT_TRUE(e.path().filename() == "ckpt-00000008" || e.path().filename() == "latest")
        << e.path();
  }
  EXPECT_EQ(entries, 2u);
}

TEST_F(CheckpointRoundTrip, ASaveOnABackgroundThreadWorks) {
  // Debian's HDF5 is thread-safe with per-thread error state: a save from another thread (an
  // asynchronous checkpoint) must work and report errors as exceptions there too.
  std::string dir;
  std::string error;
  std::thread t([&] {
    try {
      dir = save(root_, 9, sampleParts(3));
      writePart((root_ / "bad").string(), 0, {{"no-leading-slash", floatTensor({1}, 0)}});
    } catch (const CheckpointError& e) {
      error = e.what();
    }
  });
  t.join();
  EXPECT_NE(error.find("no-leading-slash"), std::string::npos) << error;
  EXPECT_EQ(read(dir).datasets.size(), 5u);
}

TEST_F(CheckpointRoundTrip, WriteErrorsNameTheProblem) {
  const std::string staging = (root_ / "ckpt-00000001.tmp-a").string();
  expectCheckpointError(
      [&] {
        writePart(staging, 0, {{"weights/W", floatTensor({1}, 0)}});
      },
      {"weights/W", "/group/name"});
  expectCheckpointError(
      [&] {
        writePart(staging, 0,
                  {{"/weights/W", floatTensor({1}, 0)}, {"/weights/W", floatTensor({1}, 0)}});
      },
      {"/weights/W", "twice"});
  expectCheckpointError(
      [&] {
        writePart(staging, 0, {{"/weights/S", HostTensor(TensorInfo(DataType::STRING, {1}))}});
      },
      {"STRING"});
  expectCheckpointError([&] { writePart(staging, -1, {}); }, {"instance -1"});

  writePart(staging, 0, {{"/weights/A", floatTensor({1}, 0)}});
  // Part 1 missing.
  expectCheckpointError([&] { writeIndex(staging, sampleAttributes(1), 2); },
                        {"part-1.h5", "missing"});
  // The same dataset in two parts.
  writePart(staging, 1, {{"/weights/A", floatTensor({1}, 0)}});
  expectCheckpointError([&] { writeIndex(staging, sampleAttributes(1), 2); },
                        {"/weights/A", "part-0.h5", "part-1.h5"});
  // Commit before the index is written.
  const std::string other = (root_ / "ckpt-00000002.tmp-a").string();
  writePart(other, 0, {});
  expectCheckpointError([&] { commit(other, (root_ / "ckpt-00000002").string()); },
                        {"checkpoint.h5"});
}

}  // namespace
}  // namespace xtrain::checkpoint::testing
