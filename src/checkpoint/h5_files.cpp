#include "checkpoint/h5_files.hpp"

#include <sys/stat.h>

#include <algorithm>

#include "checkpoint/checkpoint.hpp"

namespace xtrain::checkpoint {

namespace {

H5Handle fileAccessList() {
  H5Handle fapl = ownPlist(H5Pcreate(H5P_FILE_ACCESS));
  H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
  return fapl;
}

}  // namespace

H5Handle createHdf5File(const std::string& path) {
  silenceHdf5Errors();
  H5Handle fapl = fileAccessList();
  H5Handle file = ownFile(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()));
  if (!file.valid()) {
    throw CheckpointError("cannot create '{}' (HDF5: {})", path, hdf5ErrorDetail());
  }
  return file;
}

H5Handle openHdf5File(const std::string& path) {
  silenceHdf5Errors();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw CheckpointError("'{}' is missing", path);
  if (!S_ISREG(st.st_mode)) throw CheckpointError("'{}' is not a regular file", path);
  if (st.st_size == 0) throw CheckpointError("'{}' is empty (truncated to nothing)", path);
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    throw CheckpointError("'{}' is not an HDF5 file (no HDF5 signature)", path);
  }
  H5Handle file = ownFile(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT));
  if (!file.valid()) {
    const std::string detail = hdf5ErrorDetail();
    if (detail.find("truncated") != std::string::npos) {
      throw CheckpointError("'{}' is truncated (HDF5: {})", path, detail);
    }
    throw CheckpointError("'{}' is corrupt: HDF5 cannot open it ({})", path, detail);
  }
  return file;
}

void closeWrittenFile(H5Handle& file, const std::string& path) {
  const hid_t id = file.release();
  if (id >= 0 && H5Fclose(id) < 0) {
    throw CheckpointError("cannot finish writing '{}' (HDF5: {})", path, hdf5ErrorDetail());
  }
}

std::vector<std::string> datasetPaths(hid_t file, const std::string& where) {
  std::vector<std::string> paths;
  auto visit = [](hid_t, const char* name, const H5O_info_t* info, void* data) -> herr_t {
    if (info->type == H5O_TYPE_DATASET) {
      static_cast<std::vector<std::string>*>(data)->push_back(std::string("/") + name);
    }
    return 0;
  };
  if (H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_INC, visit, &paths, H5O_INFO_BASIC) < 0) {
    throw CheckpointError("{}: cannot list its datasets (HDF5: {})", where, hdf5ErrorDetail());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

bool isDataset(hid_t file, const std::string& path) {
  // H5Lexists needs every parent group to exist: check them from the root down.
  size_t pos = 0;
  while ((pos = path.find('/', pos + 1)) != std::string::npos) {
    if (H5Lexists(file, path.substr(0, pos).c_str(), H5P_DEFAULT) <= 0) return false;
  }
  if (H5Lexists(file, path.c_str(), H5P_DEFAULT) <= 0) return false;
  H5O_info_t info;
  return H5Oget_info_by_name2(file, path.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0 &&
         info.type == H5O_TYPE_DATASET;
}

H5Handle dataspaceFor(const Shape& shape) {
  if (shape.empty()) return ownSpace(H5Screate(H5S_SCALAR));
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  return ownSpace(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
}

Shape shapeOfSpace(hid_t space) {
  const int rank = H5Sget_simple_extent_ndims(space);
  if (rank <= 0) return {};
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  return Shape(dims.begin(), dims.end());
}

}  // namespace xtrain::checkpoint
