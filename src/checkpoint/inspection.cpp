#include "checkpoint/inspection.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "checkpoint/crc32.hpp"
#include "checkpoint/h5_attributes.hpp"
#include "checkpoint/h5_files.hpp"
#include "checkpoint/h5_types.hpp"
#include "checkpoint/isolated_run.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/seal.hpp"

namespace xtrain::checkpoint {

namespace fs = std::filesystem;

namespace {

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// The outcome of probing an unsealed index, remembered for the file as it is (device, inode, size,
// modification time): --resume auto inspects a checkpoint several times, and an index that loops
// forever must cost the probe's time limit once, not once per look.
template <typename Probe>
IsolatedOutcome probeOnce(const std::string& indexFile, Probe probe) {
  struct stat st {};
  if (::stat(indexFile.c_str(), &st) != 0) return probe();
  const std::string key = xtrain::format("{}:{}:{}:{}.{}", st.st_dev, st.st_ino, st.st_size,
                                         st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  static std::mutex mutex;
  static std::map<std::string, IsolatedOutcome> outcomes;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = outcomes.find(key); it != outcomes.end()) return it->second;
  }
  IsolatedOutcome outcome = probe();
  std::lock_guard<std::mutex> lock(mutex);
  outcomes.emplace(key, outcome);
  return outcome;
}

class Inspector {
 public:
  // `probeUnsealed`: parse an index without a seal in a child process first (false in that child).
  Inspector(const std::string& path, Depth depth, bool probeUnsealed = true)
      : path_(path), depth_(depth), probeUnsealed_(probeUnsealed) {
    out_.dir = path;
  }

  Inspection run() {
    if (locate() && checkIndexSeal() && probeUnsealedIndex() && openIndex() && readRoot() &&
        depth_ >= Depth::Parts && checkParts() && depth_ >= Depth::Structure) {
      checkDatasets();
    }
    return std::move(out_);
  }

 private:
  void problem(std::string text) { out_.problems.push_back(std::move(text)); }

  // Runs f, recording a CheckpointError it throws as a problem; true when it did not throw.
  template <typename F>
  bool attempt(F&& f) {
    try {
      f();
      return true;
    } catch (const CheckpointError& e) {
      problem(e.what());
      return false;
    }
  }

  bool locate() {
    std::error_code ec;
    const fs::path p(path_);
    if (!fs::exists(p, ec)) {
      problem("checkpoint '" + path_ + "' does not exist");
      return false;
    }
    if (fs::is_directory(p, ec)) {
      out_.dir = path_;
      out_.indexFile = (p / layout::kIndexFile).string();
      if (!fs::exists(out_.indexFile, ec)) {
        problem("'" + path_ + "' has no " + layout::kIndexFile +
                ": it is not a checkpoint, or a save that did not finish");
        return false;
      }
    } else {
      out_.indexFile = path_;
      out_.dir = p.has_parent_path() ? p.parent_path().string() : ".";
    }
    return true;
  }

  // The index's bytes against its seal, before HDF5 parses them: HDF5 does not checksum all of its
  // metadata (the global heap of string attributes, for one), and damage there can crash it.
  bool checkIndexSeal() {
    // The seal vouches for the directory's checkpoint.h5 only (not for a part given as the path).
    sealApplies_ = fs::path(out_.indexFile).filename() == layout::kIndexFile;
    if (!sealApplies_) return true;
    const SealCheck seal = checkSeal(out_.dir, out_.indexFile);
    sealed_ = seal.state == SealState::Sound;
    if (seal.state != SealState::Broken) return true;
    problem(seal.problem);
    return false;
  }

  // An index no seal vouches for is parsed by a child process first, to the structure (what the
  // index describes, and the parts' headers; not the data): a fault or an endless loop inside HDF5
  // then ends the child, and the checkpoint is reported damaged.
  bool probeUnsealedIndex() {
    if (sealed_ || !probeUnsealed_) return true;
    const std::string path = path_;
    // Always to the structure, so one probe of a file vouches for every depth asked later.
    const Depth depth = Depth::Structure;
    const IsolatedOutcome outcome = probeOnce(out_.indexFile, [&] {
      return runIsolated(
          [&] {
            silenceHdf5Errors();
            Inspector(path, depth, /*probeUnsealed=*/false).run();
          },
          unsealedIndexTimeLimit());
    });
    if (outcome.completed) return true;
    problem(xtrain::format(
        "'{}' is damaged: HDF5 cannot parse it ({} while a separate process read it), and it has "
        "no "
        "{} to check it against (format version 1, or not the index of a checkpoint directory)",
        out_.indexFile, outcome.failure, layout::kSealFile));
    return false;
  }

  bool openIndex() {
    return attempt([&] { index_ = openHdf5File(out_.indexFile); });
  }

  bool readRoot() {
    const hid_t root = index_.get();
    const std::string& where = out_.indexFile;
    Attributes& a = out_.attributes;
    // The format name and version decide whether anything else can be understood.
    if (!attempt([&] { a.formatName = readStringAttribute(root, "formatName", where); })) {
      problem("'" + where + "' is not an xtrain checkpoint");
      return false;
    }
    if (a.formatName != kFormatName) {
      problem("'" + where + "' is not an xtrain checkpoint (formatName is '" + a.formatName +
              "', expected '" + kFormatName + "')");
      return false;
    }
    if (!attempt([&] { a.formatVersion = readInt64Attribute(root, "formatVersion", where); })) {
      return false;
    }
    if (a.formatVersion > kFormatVersion) {
      problem(xtrain::format(
          "'{}' was written by a newer xtrain (format version {}, this build reads up to {})",
          where, a.formatVersion, kFormatVersion));
      return false;
    }
    if (a.formatVersion < 1) {
      problem(xtrain::format("'{}' has an invalid format version {}", where, a.formatVersion));
      return false;
    }
    // Version 1 had no seal; from version 2 on a missing one means the checkpoint was tampered
    // with or damaged (its index was parsed unchecked).
    if (a.formatVersion >= 2 && sealApplies_ && !sealed_) {
      problem(xtrain::format(
          "'{}' is damaged: its {} is missing (format version {} checkpoints have one)", out_.dir,
          layout::kSealFile, a.formatVersion));
    }
    readCount(root, "step", a.step, 0, layout::kMaxStep);
    readCount(root, "epoch", a.epoch, 0, INT64_MAX);
    readCount(root, "samplesSeen", a.samplesSeen, 0, INT64_MAX);
    readCount(root, "globalReplicationFactor", a.globalReplicationFactor, 1, INT64_MAX);
    readCount(root, "instances", a.instances, 1, INT64_MAX);
    attempt([&] { a.optimizerType = readStringAttribute(root, "optimizerType", where); });
    attempt([&] {
      a.graphFingerprint = normalizeGraphFingerprint(
          readStringAttribute(root, "graphFingerprint", where), a.formatVersion);
    });
    attempt([&] { a.creationTime = readStringAttribute(root, "creationTime", where); });
    attempt([&] { a.xtrainVersion = readStringAttribute(root, "xtrainVersion", where); });
    attempt([&] { readHyperparameters(); });
    int64_t parts = 0;
    if (!attempt([&] { parts = readInt64Attribute(root, layout::kPartsAttribute, where); })) {
      return false;
    }
    if (parts < 1 || parts > 1'000'000) {
      problem(xtrain::format("'{}': attribute '{}' is {}, not a part count", where,
                             layout::kPartsAttribute, parts));
      return false;
    }
    out_.parts = static_cast<int>(parts);
    return true;
  }

  // An int64 root attribute that counts something, in [low, high]; anything else (a step of -7)
  // is damage, recorded as a problem.
  void readCount(hid_t root, const char* name, int64_t& value, int64_t low, int64_t high) {
    const std::string& where = out_.indexFile;
    if (!attempt([&] { value = readInt64Attribute(root, name, where); })) return;
    if (value < low || value > high) {
      const std::string expected = high == INT64_MAX ? xtrain::format("at least {}", low)
                                                     : xtrain::format("{} .. {}", low, high);
      problem(xtrain::format("'{}' is damaged: attribute '{}' is {}, expected {}", where, name,
                             value, expected));
    }
  }

  void readHyperparameters() {
    const std::string where = out_.indexFile + ": group /" + layout::kHyperparameterGroup;
    if (H5Lexists(index_.get(), layout::kHyperparameterGroup, H5P_DEFAULT) <= 0) {
      throw CheckpointError("{} is missing", where);
    }
    H5Handle group = ownGroup(H5Gopen2(index_.get(), layout::kHyperparameterGroup, H5P_DEFAULT));
    if (!group.valid())
      throw CheckpointError("{}: cannot open it (HDF5: {})", where, hdf5ErrorDetail());
    std::vector<std::string> names;
    auto collect = [](hid_t, const char* name, const H5A_info_t*, void* data) -> herr_t {
      static_cast<std::vector<std::string>*>(data)->push_back(name);
      return 0;
    };
    H5Aiterate2(group.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, collect, &names);
    for (const auto& name : names) {
      out_.attributes.hyperparameters[name] = readDoubleAttribute(group.get(), name, where);
    }
  }

  std::string partPath(int part) const {
    return (fs::path(out_.dir) / layout::partFile(part)).string();
  }

  bool checkParts() {
    partFiles_.resize(static_cast<size_t>(out_.parts));
    bool all = true;
    for (int i = 0; i < out_.parts; ++i) {
      const std::string file = partPath(i);
      std::error_code ec;
      if (!fs::exists(file, ec)) {
        problem(xtrain::format("part file '{}' is missing ({} declares {} parts)", file,
                               layout::kIndexFile, out_.parts));
        all = false;
      } else if (depth_ >= Depth::Structure) {
        all = attempt([&] { partFiles_[static_cast<size_t>(i)] = openHdf5File(file); }) && all;
      }
    }
    // Datasets whose part is unreadable are still checked as far as the index goes.
    return true;
  }

  void checkDatasets() {
    std::vector<std::string> paths;
    if (!attempt([&] { paths = datasetPaths(index_.get(), out_.indexFile); })) return;
    std::vector<std::set<std::string>> mapped(static_cast<size_t>(out_.parts));
    for (const auto& path : paths) {
      DatasetInfo info;
      int part = -1;
      if (!checkDataset(path, info, part)) continue;
      mapped[static_cast<size_t>(part)].insert(path);
      if (depth_ >= Depth::Checksums && !readDataset(info)) continue;
      out_.datasets.push_back(std::move(info));
    }
    // A part holding a dataset the index does not map means the index and the parts disagree.
    for (int i = 0; i < out_.parts; ++i) {
      const H5Handle& h5 = partFiles_[static_cast<size_t>(i)];
      if (!h5.valid()) continue;
      std::vector<std::string> held;
      if (!attempt([&] { held = datasetPaths(h5.get(), partPath(i)); })) continue;
      for (const auto& p : held) {
        if (mapped[static_cast<size_t>(i)].count(p) == 0 &&
            std::find(paths.begin(), paths.end(), p) == paths.end()) {
          problem(xtrain::format("'{}' holds dataset '{}', which {} does not map", partPath(i), p,
                                 layout::kIndexFile));
        }
      }
    }
  }

  // The index's virtual dataset `path` and its source in a part: mapping, type, shape, checksum
  // attribute. Records problems; true when sound.
  bool checkDataset(const std::string& path, DatasetInfo& info, int& part) {
    const std::string where = out_.indexFile + ": dataset '" + path + "'";
    H5Handle ds = ownDataset(H5Dopen2(index_.get(), path.c_str(), H5P_DEFAULT));
    if (!ds.valid()) {
      problem(where + ": cannot open it (HDF5: " + hdf5ErrorDetail() + ")");
      return false;
    }
    info.path = path;
    H5Handle type = ownType(H5Dget_type(ds.get()));
    const auto dataType = dataTypeOfHdf5(type.get());
    if (!dataType) {
      problem(where + ": its element type is not one xtrain writes");
      return false;
    }
    H5Handle space = ownSpace(H5Dget_space(ds.get()));
    info.info = TensorInfo(*dataType, shapeOfSpace(space.get()));
    if (!attempt(
            [&] { info.crc32 = readUint32Attribute(ds.get(), layout::kCrcAttribute, where); })) {
      return false;
    }

    H5Handle dcpl = ownPlist(H5Dget_create_plist(ds.get()));
    size_t count = 0;
    if (H5Pget_layout(dcpl.get()) != H5D_VIRTUAL || H5Pget_virtual_count(dcpl.get(), &count) < 0 ||
        count != 1) {
      problem(where + ": not a virtual dataset mapping one part dataset");
      return false;
    }
    const ssize_t fileLen = H5Pget_virtual_filename(dcpl.get(), 0, nullptr, 0);
    const ssize_t dsetLen = H5Pget_virtual_dsetname(dcpl.get(), 0, nullptr, 0);
    if (fileLen < 0 || dsetLen < 0) {
      problem(where + ": cannot read its mapping (HDF5: " + hdf5ErrorDetail() + ")");
      return false;
    }
    std::string sourceFile(static_cast<size_t>(fileLen) + 1, '\0');
    std::string sourceDataset(static_cast<size_t>(dsetLen) + 1, '\0');
    H5Pget_virtual_filename(dcpl.get(), 0, sourceFile.data(), sourceFile.size());
    H5Pget_virtual_dsetname(dcpl.get(), 0, sourceDataset.data(), sourceDataset.size());
    sourceFile.resize(static_cast<size_t>(fileLen));
    sourceDataset.resize(static_cast<size_t>(dsetLen));
    const auto index = layout::partIndex(sourceFile);
    if (!index || *index >= out_.parts) {
      problem(xtrain::format("{}: maps to '{}', which is not one of its part files ({} .. {})",
                             where, sourceFile, layout::partFile(0),
                             layout::partFile(out_.parts - 1)));
      return false;
    }
    if (sourceDataset != layout::virtualSourceName(path)) {
      problem(where + ": maps to dataset '" + sourceDataset + "' of '" + sourceFile +
              "', expected the same path");
      return false;
    }
    H5Handle virtualSelection = ownSpace(H5Pget_virtual_vspace(dcpl.get(), 0));
    H5Handle sourceSelection = ownSpace(H5Pget_virtual_srcspace(dcpl.get(), 0));
    const hssize_t elements = info.info.nelms();
    // An "all" source selection is stored without the source's extent (HDF5 learns it when it
    // opens the source); its size is checked against the part below.
    if (H5Sget_select_npoints(virtualSelection.get()) != elements ||
        (H5Sget_select_type(sourceSelection.get()) != H5S_SEL_ALL &&
         H5Sget_select_npoints(sourceSelection.get()) != elements)) {
      problem(where + ": its mapping does not cover the whole dataset");
      return false;
    }
    part = *index;
    info.partFile = sourceFile;
    return checkSource(info, part);
  }

  bool checkSource(const DatasetInfo& info, int part) {
    const H5Handle& h5 = partFiles_[static_cast<size_t>(part)];
    if (!h5.valid()) return false;  // the part's own problem is recorded
    const std::string file = partPath(part);
    const std::string where = file + ": dataset '" + info.path + "'";
    if (!isDataset(h5.get(), info.path)) {
      problem(xtrain::format("'{}' has no dataset '{}' (mapped by {})", file, info.path,
                             layout::kIndexFile));
      return false;
    }
    H5Handle ds = ownDataset(H5Dopen2(h5.get(), info.path.c_str(), H5P_DEFAULT));
    if (!ds.valid()) {
      problem(where + ": cannot open it (HDF5: " + hdf5ErrorDetail() + ")");
      return false;
    }
    H5Handle type = ownType(H5Dget_type(ds.get()));
    const auto dataType = dataTypeOfHdf5(type.get());
    H5Handle space = ownSpace(H5Dget_space(ds.get()));
    const Shape shape = shapeOfSpace(space.get());
    if (dataType != info.info.dataType() || shape != info.info.shape()) {
      problem(xtrain::format("{}: is {}{} but {} says {}", where,
                             dataType ? dataTypeName(*dataType) : "(unknown type)",
                             shapeToString(shape), layout::kIndexFile, info.info.toString()));
      return false;
    }
    uint32_t crc = 0;
    if (!attempt([&] { crc = readUint32Attribute(ds.get(), layout::kCrcAttribute, where); })) {
      return false;
    }
    if (crc != info.crc32) {
      problem(xtrain::format("{}: its crc32 attribute {} differs from {}'s {}", where, hex(crc),
                             layout::kIndexFile, hex(info.crc32)));
      return false;
    }
    return true;
  }

  // Reads the dataset through the virtual dataset (as any HDF5 reader would) and checks its bytes.
  bool readDataset(const DatasetInfo& info) {
    const std::string where = out_.indexFile + ": dataset '" + info.path + "'";
    // Sources are looked up in the checkpoint's directory first (not the working directory), so a
    // moved checkpoint reads its own parts.
    H5Handle dapl = ownPlist(H5Pcreate(H5P_DATASET_ACCESS));
    std::error_code ec;
    const std::string prefix = fs::absolute(out_.dir, ec).string();
    H5Pset_virtual_prefix(dapl.get(), prefix.c_str());
    H5Handle ds = ownDataset(H5Dopen2(index_.get(), info.path.c_str(), dapl.get()));
    if (!ds.valid()) {
      problem(where + ": cannot open it (HDF5: " + hdf5ErrorDetail() + ")");
      return false;
    }
    HostTensor value(info.info);
    H5Handle memType = hdf5TypeOf(info.info.dataType());
    if (value.nbytes() > 0 &&
        H5Dread(ds.get(), memType.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.raw()) < 0) {
      problem(xtrain::format("{}: cannot read its bytes from '{}' (HDF5: {})", where,
                             partPathOf(info), hdf5ErrorDetail()));
      return false;
    }
    const uint32_t crc = crc32Of(value.raw(), value.nbytes());
    if (crc != info.crc32) {
      problem(xtrain::format(
          "'{}': dataset '{}' is corrupt: its bytes have CRC-32 {}, the checkpoint recorded {}",
          partPathOf(info), info.path, hex(crc), hex(info.crc32)));
      return false;
    }
    if (depth_ >= Depth::Data) out_.values.emplace(info.path, std::move(value));
    return true;
  }

  std::string partPathOf(const DatasetInfo& info) const {
    return (fs::path(out_.dir) / info.partFile).string();
  }

  std::string path_;
  Depth depth_;
  Inspection out_;
  bool sealApplies_ = false;  // the index is a checkpoint.h5, which a seal may vouch for
  bool sealed_ = false;       // the index matched its seal
  bool probeUnsealed_ = true;
  H5Handle index_;
  std::vector<H5Handle> partFiles_;
};

}  // namespace

Inspection inspect(const std::string& path, Depth depth) {
  silenceHdf5Errors();
  return Inspector(path, depth).run();
}

void throwIfProblems(const Inspection& inspection) {
  const auto& p = inspection.problems;
  if (p.empty()) return;
  if (p.size() == 1) throw CheckpointError(p.front());
  std::string text = xtrain::format("checkpoint '{}' has {} problems:", inspection.dir, p.size());
  for (const auto& one : p) text += "\n  " + one;
  throw CheckpointError(text);
}

}  // namespace xtrain::checkpoint
