// Stage 2 of a save: checkpoint.h5, the root attributes and one virtual dataset per dataset of the
// parts, so that a reader (xtrain, h5py, h5dump) sees every tensor whole in one file.
#include <chrono>
#include <ctime>
#include <filesystem>
#include <map>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/durable_files.hpp"
#include "checkpoint/h5_attributes.hpp"
#include "checkpoint/h5_files.hpp"
#include "checkpoint/layout.hpp"
#include "checkpoint/seal.hpp"

namespace xtrain::checkpoint {

namespace {

// A dataset found in a part, as the index maps it.
struct PartDataset {
  int part = 0;
  H5Handle type;
  Shape shape;
  uint32_t crc = 0;
};

std::string utcNow() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void scanPart(const std::string& dir, int part, std::map<std::string, PartDataset>& found) {
  const std::string file = (std::filesystem::path(dir) / layout::partFile(part)).string();
  if (!std::filesystem::exists(file)) {
    throw CheckpointError(
        "writeIndex: part file '{}' is missing (instance {} has not written its part)", file, part);
  }
  H5Handle h5 = openHdf5File(file);
  for (const auto& path : datasetPaths(h5.get(), file)) {
    const std::string where = file + ": dataset '" + path + "'";
    H5Handle ds = ownDataset(H5Dopen2(h5.get(), path.c_str(), H5P_DEFAULT));
    if (!ds.valid())
      throw CheckpointError("{}: cannot open it (HDF5: {})", where, hdf5ErrorDetail());
    auto [it, inserted] = found.try_emplace(path);
    if (!inserted) {
      throw CheckpointError("writeIndex: dataset '{}' is in two parts: '{}' and '{}'", path,
                            layout::partFile(it->second.part), layout::partFile(part));
    }
    PartDataset& d = it->second;
    d.part = part;
    d.type = ownType(H5Dget_type(ds.get()));
    H5Handle space = ownSpace(H5Dget_space(ds.get()));
    d.shape = shapeOfSpace(space.get());
    d.crc = readUint32Attribute(ds.get(), layout::kCrcAttribute, where);
  }
}

void writeRootAttributes(hid_t file, const Attributes& a, int parts, const std::string& where) {
  const hid_t root = file;
  writeStringAttribute(root, "formatName", a.formatName, where);
  writeInt64Attribute(root, "formatVersion", a.formatVersion, where);
  writeInt64Attribute(root, "step", a.step, where);
  writeInt64Attribute(root, "epoch", a.epoch, where);
  writeInt64Attribute(root, "samplesSeen", a.samplesSeen, where);
  writeInt64Attribute(root, "globalReplicationFactor", a.globalReplicationFactor, where);
  writeInt64Attribute(root, "instances", a.instances, where);
  writeStringAttribute(root, "optimizerType", a.optimizerType, where);
  writeStringAttribute(root, "graphFingerprint", a.graphFingerprint, where);
  writeStringAttribute(root, "creationTime", a.creationTime.empty() ? utcNow() : a.creationTime,
                       where);
  writeStringAttribute(root, "xtrainVersion", a.xtrainVersion, where);
  writeInt64Attribute(root, layout::kPartsAttribute, parts, where);
  H5Handle group = ownGroup(
      H5Gcreate2(file, layout::kHyperparameterGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  if (!group.valid()) {
    throw CheckpointError("{}: cannot create group /{} (HDF5: {})", where,
                          layout::kHyperparameterGroup, hdf5ErrorDetail());
  }
  for (const auto& [name, value] : a.hyperparameters) {
    writeDoubleAttribute(group.get(), name, value,
                         where + ": group /" + layout::kHyperparameterGroup);
  }
}

void writeVirtualDataset(hid_t file, const std::string& path, const PartDataset& d,
                         const std::string& where) {
  H5Handle virtualSpace = dataspaceFor(d.shape);
  H5Handle sourceSpace = dataspaceFor(d.shape);  // the whole source dataset (selection "all")
  H5Handle dcpl = ownPlist(H5Pcreate(H5P_DATASET_CREATE));
  // A relative source file name is looked up in the directory of checkpoint.h5 (HDF5 >= 1.10.2),
  // so the checkpoint can be moved or renamed as a whole.
  const std::string source = layout::partFile(d.part);
  if (H5Pset_virtual(dcpl.get(), virtualSpace.get(), source.c_str(),
                     layout::virtualSourceName(path).c_str(), sourceSpace.get()) < 0) {
    throw CheckpointError("{}: cannot map dataset '{}' to '{}' (HDF5: {})", where, path, source,
                          hdf5ErrorDetail());
  }
  H5Handle lcpl = ownPlist(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  H5Handle ds = ownDataset(H5Dcreate2(file, path.c_str(), d.type.get(), virtualSpace.get(),
                                      lcpl.get(), dcpl.get(), H5P_DEFAULT));
  if (!ds.valid()) {
    throw CheckpointError("{}: cannot create virtual dataset '{}' (HDF5: {})", where, path,
                          hdf5ErrorDetail());
  }
  writeUint32Attribute(ds.get(), layout::kCrcAttribute, d.crc, where + ": dataset '" + path + "'");
}

}  // namespace

void writeIndex(const std::string& stagingDir, const Attributes& attributes, int parts) {
  silenceHdf5Errors();
  if (parts < 1)
    throw CheckpointError("writeIndex: {} parts; a checkpoint has at least one", parts);
  // A reader treats such a step as damage: refuse to write a checkpoint no one could resume.
  if (attributes.step < 0 || attributes.step > layout::kMaxStep) {
    throw CheckpointError("writeIndex: step {} is not a step count (0 .. {})", attributes.step,
                          layout::kMaxStep);
  }
  std::map<std::string, PartDataset> found;
  for (int part = 0; part < parts; ++part) scanPart(stagingDir, part, found);

  const std::string file = (std::filesystem::path(stagingDir) / layout::kIndexFile).string();
  H5Handle h5 = createHdf5File(file);
  writeRootAttributes(h5.get(), attributes, parts, file);
  for (const auto& [path, d] : found) writeVirtualDataset(h5.get(), path, d, file);
  closeWrittenFile(h5, file);
  fsyncPath(file);
  // Sealed once the index's bytes are final; commit() refuses a staging directory without a seal.
  writeSeal(stagingDir);
}

}  // namespace xtrain::checkpoint
