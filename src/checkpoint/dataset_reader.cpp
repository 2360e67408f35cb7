#include "checkpoint/dataset_reader.hpp"

#include <sys/stat.h>

#include "checkpoint/hdf5_handle.hpp"
#include "xtrain/error.hpp"

namespace xtrain::checkpoint {

namespace {

hid_t memoryType(DataType type) {
  switch (type) {
    case DataType::FLOAT: return H5T_NATIVE_FLOAT;
    case DataType::DOUBLE: return H5T_NATIVE_DOUBLE;
    case DataType::INT32: return H5T_NATIVE_INT32;
    case DataType::INT64: return H5T_NATIVE_INT64;
    case DataType::INT16: return H5T_NATIVE_INT16;
    case DataType::INT8: return H5T_NATIVE_INT8;
    case DataType::UINT8: return H5T_NATIVE_UINT8;
    case DataType::UINT16: return H5T_NATIVE_UINT16;
    case DataType::UINT32: return H5T_NATIVE_UINT32;
    case DataType::UINT64: return H5T_NATIVE_UINT64;
    case DataType::BOOL: return H5T_NATIVE_UINT8;
    default: throw error("HDF5 data of type {} is not supported", dataTypeName(type));
  }
}

DataType fileType(hid_t type, const std::string& where) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT) {
    if (size == 4) return DataType::FLOAT;
    if (size == 8) return DataType::DOUBLE;
    if (size == 2) return DataType::FLOAT16;
  } else if (cls == H5T_INTEGER) {
    const bool isSigned = H5Tget_sign(type) == H5T_SGN_2;
    switch (size) {
      case 1: return isSigned ? DataType::INT8 : DataType::UINT8;
      case 2: return isSigned ? DataType::INT16 : DataType::UINT16;
      case 4: return isSigned ? DataType::INT32 : DataType::UINT32;
      case 8: return isSigned ? DataType::INT64 : DataType::UINT64;
      default: break;
    }
  }
  throw error("{}: element type (HDF5 class {}, {} bytes) is not a number type xtrain reads", where,
              static_cast<int>(cls), size);
}

}  // namespace

struct DatasetReader::Impl {
  H5Handle file;
};

DatasetReader::DatasetReader(const std::string& path) : path_(path), impl_(std::make_unique<Impl>()) {
  silenceHdf5Errors();
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw error("data file '{}' does not exist", path);
  if (!S_ISREG(st.st_mode)) throw error("data file '{}' is not a regular file", path);
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    throw error("data file '{}' is not an HDF5 file (or is truncated)", path);
  }
  impl_->file = H5Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!impl_->file.valid()) throw error("cannot open HDF5 data file '{}'", path);
}

DatasetReader::~DatasetReader() = default;

std::vector<std::string> DatasetReader::datasetNames() const {
  std::vector<std::string> names;
  auto visit = [](hid_t group, const char* name, const H5L_info_t*, void* data) -> herr_t {
    H5O_info_t info;
    if (H5Oget_info_by_name2(group, name, &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0 &&
        info.type == H5O_TYPE_DATASET) {
      static_cast<std::vector<std::string>*>(data)->push_back(name);
    }
    return 0;
  };
  H5Literate(impl_->file.get(), H5_INDEX_NAME, H5_ITER_INC, nullptr, visit, &names);
  return names;
}

bool DatasetReader::has(const std::string& name) const {
  if (H5Lexists(impl_->file.get(), name.c_str(), H5P_DEFAULT) <= 0) return false;
  H5O_info_t info;
  return H5Oget_info_by_name2(impl_->file.get(), name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) >= 0 &&
         info.type == H5O_TYPE_DATASET;
}

TensorInfo DatasetReader::info(const std::string& name) const {
  if (!has(name)) {
    throw error("data file '{}' has no dataset '{}' (it has: {})", path_, name, datasetNames());
  }
  H5Handle ds(H5Dopen2(impl_->file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  H5Handle space(H5Dget_space(ds.get()), H5Sclose);
  H5Handle type(H5Dget_type(ds.get()), H5Tclose);
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 1) {
    throw error("dataset '{}' in '{}' is a scalar; expected [samples, ...]", name, path_);
  }
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  Shape shape(dims.begin(), dims.end());
  return TensorInfo(fileType(type.get(), "dataset '" + name + "' in '" + path_ + "'"), shape);
}

void DatasetReader::readSamples(const std::string& name, const std::vector<int64_t>& samples,
                                DataType type, void* dst) const {
  const TensorInfo full = info(name);
  const int64_t numSamples = full.shape()[0];
  int64_t sampleElements = 1;
  for (size_t i = 1; i < full.shape().size(); ++i) sampleElements *= full.shape()[i];
  const size_t sampleBytes = static_cast<size_t>(sampleElements) * dataTypeSize(type);
  const hid_t memType = memoryType(type);

  H5Handle ds(H5Dopen2(impl_->file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  H5Handle fileSpace(H5Dget_space(ds.get()), H5Sclose);
  std::vector<hsize_t> start(full.shape().size(), 0);
  std::vector<hsize_t> count(full.shape().begin(), full.shape().end());
  auto* out = static_cast<unsigned char*>(dst);
  // One read per run of consecutive sample indices.
  for (size_t i = 0; i < samples.size();) {
    const int64_t first = samples[i];
    if (first < 0 || first >= numSamples) {
      throw error("sample {} is out of range for dataset '{}' in '{}' ({} samples)", first, name, path_,
                  numSamples);
    }
    size_t run = 1;
    while (i + run < samples.size() && samples[i + run] == first + static_cast<int64_t>(run) &&
           first + static_cast<int64_t>(run) < numSamples) {
      ++run;
    }
    start[0] = static_cast<hsize_t>(first);
    count[0] = static_cast<hsize_t>(run);
    H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr);
    H5Handle memSpace(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
    if (H5Dread(ds.get(), memType, memSpace.get(), fileSpace.get(), H5P_DEFAULT, out + i * sampleBytes) <
        0) {
      throw error("reading samples {}..{} of dataset '{}' in '{}' failed (corrupt or truncated file?)",
                  first, first + static_cast<int64_t>(run) - 1, name, path_);
    }
    i += run;
  }
}

struct DatasetWriter::Impl {
  H5Handle file;
};

DatasetWriter::DatasetWriter(const std::string& path) : path_(path), impl_(std::make_unique<Impl>()) {
  silenceHdf5Errors();
  impl_->file = H5Handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!impl_->file.valid()) throw error("cannot create HDF5 file '{}'", path);
}

DatasetWriter::~DatasetWriter() = default;

void DatasetWriter::write(const std::string& name, const TensorInfo& info, const void* data) {
  std::vector<hsize_t> dims(info.shape().begin(), info.shape().end());
  H5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  const hid_t type = memoryType(info.dataType());
  H5Handle ds(H5Dcreate2(impl_->file.get(), name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT),
              H5Dclose);
  if (!ds.valid()) throw error("cannot create dataset '{}' in '{}'", name, path_);
  if (H5Dwrite(ds.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    throw error("cannot write dataset '{}' in '{}'", name, path_);
  }
}

}  // namespace xtrain::checkpoint
