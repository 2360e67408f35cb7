// Stage 1 of a save: one instance's datasets into <staging>/part-<instance>.h5.
#include <sys/stat.h>

#include <filesystem>
#include <future>
#include <set>
#include <vector>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/crc32.hpp"
#include "checkpoint/durable_files.hpp"
#include "checkpoint/h5_attributes.hpp"
#include "checkpoint/h5_files.hpp"
#include "checkpoint/h5_types.hpp"
#include "checkpoint/layout.hpp"

namespace xtrain::checkpoint {

namespace {

// "/a/b/c": absolute, no empty, "." or ".." component (HDF5 would resolve or refuse those), and not
// under the index's own hyperparameter group.
void checkDatasetPath(const std::string& path, const std::string& where) {
  bool ok = path.size() > 1 && path.front() == '/' && path.back() != '/';
  for (size_t start = 1; ok && start <= path.size();) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string part = path.substr(start, end - start);
    ok = !part.empty() && part != "." && part != "..";
    start = end + 1;
  }
  if (!ok) {
    throw CheckpointError(
        "{}: dataset path '{}' is not of the form /group/name (encode '/' in tensor names with "
        "encodeName)",
        where, path);
  }
  if (path.starts_with(std::string("/") + layout::kHyperparameterGroup + "/")) {
    throw CheckpointError("{}: dataset path '{}' is under the reserved group /{}", where, path,
                          layout::kHyperparameterGroup);
  }
}

// Creates and writes one dataset; returns it still open so that its checksum attribute can be
// added.
H5Handle writeDataset(hid_t file, const Dataset& d, const std::string& where) {
  H5Handle type = hdf5TypeOf(d.value.dataType());
  H5Handle space = dataspaceFor(d.value.shape());
  H5Handle lcpl = ownPlist(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  // Contiguous (the default) so a dataset is one run of bytes, written with one call; no fill pass
  // since every byte is written.
  H5Handle dcpl = ownPlist(H5Pcreate(H5P_DATASET_CREATE));
  H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER);
  H5Handle ds = ownDataset(H5Dcreate2(file, d.path.c_str(), type.get(), space.get(), lcpl.get(),
                                      dcpl.get(), H5P_DEFAULT));
  if (!ds.valid()) {
    throw CheckpointError("{}: cannot create dataset '{}' (HDF5: {})", where, d.path,
                          hdf5ErrorDetail());
  }
  if (d.value.nbytes() > 0 &&
      H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, d.value.raw()) < 0) {
    throw CheckpointError("{}: cannot write dataset '{}' (HDF5: {})", where, d.path,
                          hdf5ErrorDetail());
  }
  return ds;
}

}  // namespace

void writePart(const std::string& stagingDir, int instance, const std::vector<Dataset>& datasets) {
  silenceHdf5Errors();
  if (instance < 0) throw CheckpointError("writePart: instance {} is negative", instance);
  const std::string file =
      (std::filesystem::path(stagingDir) / layout::partFile(instance)).string();
  std::set<std::string> seen;
  for (const auto& d : datasets) {
    checkDatasetPath(d.path, file);
    if (!seen.insert(d.path).second) {
      throw CheckpointError("{}: dataset '{}' is given twice", file, d.path);
    }
    hdf5TypeOf(d.value.dataType());  // refuses unstorable types before anything is written
  }
  // Instances create the staging directory concurrently; an existing directory is fine.
  std::error_code ec;
  std::filesystem::create_directories(stagingDir, ec);
  if (ec && !std::filesystem::is_directory(stagingDir)) {
    throw CheckpointError("cannot create the staging directory '{}': {}", stagingDir, ec.message());
  }
  // Never write through a symbolic link planted under the staging name (a checkpoint directory in
  // a shared /tmp): the directory must be a real one.
  struct stat st {};
  if (::lstat(stagingDir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw CheckpointError(
        "the staging directory '{}' is not a directory (a symbolic link is refused); remove it",
        stagingDir);
  }
  // The checksums are computed on a second thread while the bytes are written: at ~3 GB/s the
  // CRC would otherwise add a third to the time of a large save. (If writing throws, the future's
  // destructor waits for the thread, which only reads `datasets`.)
  std::future<std::vector<uint32_t>> checksums = std::async(std::launch::async, [&datasets] {
    std::vector<uint32_t> crcs;
    crcs.reserve(datasets.size());
    for (const auto& d : datasets) crcs.push_back(crc32Of(d.value.raw(), d.value.nbytes()));
    return crcs;
  });
  H5Handle h5 = createHdf5File(file);
  std::vector<H5Handle> written;
  written.reserve(datasets.size());
  for (const auto& d : datasets) written.push_back(writeDataset(h5.get(), d, file));
  const std::vector<uint32_t> crcs = checksums.get();
  for (size_t i = 0; i < datasets.size(); ++i) {
    writeUint32Attribute(written[i].get(), layout::kCrcAttribute, crcs[i],
                         file + ": dataset '" + datasets[i].path + "'");
  }
  written.clear();
  closeWrittenFile(h5, file);
  fsyncPath(file);
}

}  // namespace xtrain::checkpoint
