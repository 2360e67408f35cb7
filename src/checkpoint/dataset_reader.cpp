#include "checkpoint/dataset_reader.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "checkpoint/dataset_header.hpp"
#include "checkpoint/dataset_storage.hpp"
#include "checkpoint/dataset_values.hpp"
#include "checkpoint/h5_types.hpp"
#include "checkpoint/hdf5_handle.hpp"
#include "common/checked_math.hpp"
#include "common/env_switch.hpp"
#include "xtrain/error.hpp"

namespace xtrain::checkpoint {

namespace {

// Only the standard IEEE and two's-complement layouts (either byte order) are read: HDF5 can
// describe other bit layouts, and a damaged file's type can claim one, which its conversion code is
// not made to survive. FLOAT16 is the IEEE half layout that numpy and h5py write.
bool isStandardLayout(hid_t type, H5T_class_t cls, size_t size) {
  if (cls == H5T_INTEGER) {
    if (H5Tget_offset(type) != 0 || H5Tget_precision(type) != 8 * size) return false;
    const H5T_order_t order = H5Tget_order(type);
    return order == H5T_ORDER_LE || order == H5T_ORDER_BE;
  }
  if (size == 4) return H5Tequal(type, H5T_IEEE_F32LE) > 0 || H5Tequal(type, H5T_IEEE_F32BE) > 0;
  if (size == 8) return H5Tequal(type, H5T_IEEE_F64LE) > 0 || H5Tequal(type, H5T_IEEE_F64BE) > 0;
  size_t signPos = 0, exponentPos = 0, exponentSize = 0, mantissaPos = 0, mantissaSize = 0;
  if (H5Tget_fields(type, &signPos, &exponentPos, &exponentSize, &mantissaPos, &mantissaSize) < 0) {
    return false;
  }
  return signPos == 15 && exponentPos == 10 && exponentSize == 5 && mantissaPos == 0 &&
         mantissaSize == 10 && H5Tget_ebias(type) == 15;
}

const char* className(H5T_class_t cls) {
  switch (cls) {
    case H5T_INTEGER: return "an integer";
    case H5T_FLOAT: return "a floating-point number";
    case H5T_TIME: return "a time";
    case H5T_STRING: return "a string";
    case H5T_BITFIELD: return "a bit field";
    case H5T_OPAQUE: return "opaque bytes";
    case H5T_COMPOUND: return "a compound (struct)";
    case H5T_REFERENCE: return "a reference";
    case H5T_ENUM: return "an enum";
    case H5T_VLEN: return "a variable-length sequence";
    case H5T_ARRAY: return "an array";
    default: return "of no known HDF5 class";
  }
}

DataType fileType(hid_t type, const std::string& where) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (cls == H5T_ENUM) {
    // numpy bool, as h5py writes it: masks are commonly stored so. isBoolEnum has checked the
    // 1-byte integer base, whose bit layout is then the standard one.
    if (isBoolEnum(type)) return DataType::BOOL;
    throw error(
        "{}: element type is an enum ({}), not a number type xtrain reads: the only enum read is "
        "h5py's bool (a 1-byte integer base, members FALSE=0 and TRUE=1)",
        where, describeEnum(type));
  }
  std::optional<DataType> result;
  if (cls == H5T_FLOAT) {
    if (size == 4) result = DataType::FLOAT;
    if (size == 8) result = DataType::DOUBLE;
    if (size == 2) result = DataType::FLOAT16;
  } else if (cls == H5T_INTEGER) {
    const bool isSigned = H5Tget_sign(type) == H5T_SGN_2;
    switch (size) {
      case 1: result = isSigned ? DataType::INT8 : DataType::UINT8; break;
      case 2: result = isSigned ? DataType::INT16 : DataType::UINT16; break;
      case 4: result = isSigned ? DataType::INT32 : DataType::UINT32; break;
      case 8: result = isSigned ? DataType::INT64 : DataType::UINT64; break;
      default: break;
    }
  }
  if (!result) {
    throw error(
        "{}: element type ({}, {} bytes; HDF5 class {}) is not a number type xtrain reads: "
        "expected integers of 1, 2, 4 or 8 bytes, floats of 2, 4 or 8 bytes, or h5py's bool",
        where, className(cls), size, static_cast<int>(cls));
  }
  if (!isStandardLayout(type, cls, size)) {
    throw error(
        "{}: element type ({}, {} bytes) has a non-standard bit layout (not IEEE or two's "
        "complement): the file is damaged or was written by an unusual writer",
        where, dataTypeName(*result), size);
  }
  return *result;
}

// Why `name` is not a dataset xtrain can open: a soft or external link that does not resolve,
// something that is not a dataset, or nothing at all.
std::string whyNotADataset(hid_t file, const std::string& name) {
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) <= 0) return "has no dataset";
  H5L_info_t link;
  if (H5Lget_info(file, name.c_str(), &link, H5P_DEFAULT) < 0) return "has no readable dataset";
  if (link.type == H5L_TYPE_SOFT || link.type == H5L_TYPE_EXTERNAL) {
    std::string value(link.u.val_size + 1, '\0');
    if (H5Lget_val(file, name.c_str(), value.data(), value.size(), H5P_DEFAULT) < 0) {
      return "has a link named so that cannot be read";
    }
    if (link.type == H5L_TYPE_SOFT) {
      return "has a soft link to '" + std::string(value.c_str()) + "' that does not resolve for";
    }
    const char* targetFile = nullptr;
    const char* targetObject = nullptr;
    if (H5Lunpack_elink_val(value.data(), value.size(), nullptr, &targetFile, &targetObject) < 0) {
      return "has a damaged external link for";
    }
    return "has an external link to '" + std::string(targetObject) + "' in file '" +
           std::string(targetFile) + "', which cannot be opened, for";
  }
  return "has an object that is not a dataset (a group?) named";
}

}  // namespace

struct DatasetReader::Impl {
  H5Handle file;
  std::set<std::string> storageChecked;  // datasets whose storage lies inside the file
  size_t residentBudget = 0;
  size_t residentUsed = 0;
  // Whole datasets read at their first use, by (name, type asked for).
  struct Resident {
    std::vector<unsigned char> bytes;
    int64_t numSamples = 0;
    size_t sampleBytes = 0;
  };
  std::map<std::pair<std::string, DataType>, Resident> resident;
};

size_t DatasetReader::residentBytesFromEnvironment() {
  // 0 keeps no data in memory.
  return static_cast<size_t>(readByteCount("XTRAIN_DATA_RESIDENT_BYTES", size_t{256} << 20));
}

size_t DatasetReader::residentBytes() const {
  return impl_->residentUsed;
}

DatasetReader::DatasetReader(const std::string& path, size_t residentBytes)
    : path_(path), impl_(std::make_unique<Impl>()) {
  impl_->residentBudget = residentBytes;
  silenceHdf5Errors();
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw error("data file '{}' does not exist", path);
  if (!S_ISREG(st.st_mode)) throw error("data file '{}' is not a regular file", path);
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    throw error("data file '{}' is not an HDF5 file (or is truncated)", path);
  }
  // No sieve buffer: a batch is scattered rows of the file, and HDF5 filled its 64 KiB sieve
  // buffer for each one (20x the bytes of the batch read); without it each row is one read of its
  // own bytes, and large contiguous selections are read directly either way.
  H5Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fapl.valid() || H5Pset_sieve_buf_size(fapl.get(), 0) < 0) {
    throw error("cannot set up reading the HDF5 data file '{}'", path);
  }
  impl_->file = H5Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
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
  return H5Oget_info_by_name2(impl_->file.get(), name.c_str(), &info, H5O_INFO_BASIC,
                              H5P_DEFAULT) >= 0 &&
         info.type == H5O_TYPE_DATASET;
}

TensorInfo DatasetReader::info(const std::string& name) const {
  if (!has(name)) {
    throw error("data file '{}' {} '{}' (its datasets: {})", path_,
                whyNotADataset(impl_->file.get(), name), name, datasetNames());
  }
  const std::string where = "dataset '" + name + "' in '" + path_ + "'";
  if (impl_->storageChecked.count(name) == 0) {
    checkEnumTypeBeforeOpening(impl_->file.get(), path_, name, where);
  }
  H5Handle ds(H5Dopen2(impl_->file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw error("cannot open dataset '{}' in '{}' (damaged file?)", name, path_);
  H5Handle space(H5Dget_space(ds.get()), H5Sclose);
  H5Handle type(H5Dget_type(ds.get()), H5Tclose);
  if (!space.valid() || !type.valid()) {
    throw error("cannot read the shape or type of dataset '{}' in '{}' (damaged file?)", name,
                path_);
  }
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 1) {
    throw error("dataset '{}' in '{}' is a scalar; expected [samples, ...]", name, path_);
  }
  std::vector<hsize_t> dims(static_cast<size_t>(rank)), maxDims(static_cast<size_t>(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), maxDims.data());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (maxDims[i] != H5S_UNLIMITED && dims[i] > maxDims[i]) {
      throw error("{}: dimension {} is {}, more than its maximum {}: the file is damaged", where, i,
                  dims[i], maxDims[i]);
    }
  }
  const TensorInfo result(fileType(type.get(), where), Shape(dims.begin(), dims.end()));
  // Checked once per dataset, before anyone sizes anything by these dimensions.
  if (impl_->storageChecked.count(name) == 0) {
    checkStorageInsideFile(ds.get(), result, H5Tget_size(type.get()), where);
    impl_->storageChecked.insert(name);
  }
  return result;
}

void DatasetReader::readSamples(const std::string& name, const std::vector<int64_t>& samples,
                                DataType type, void* dst) const {
  auto* out = static_cast<unsigned char*>(dst);
  const auto key = std::make_pair(name, type);
  auto kept = impl_->resident.find(key);
  if (kept == impl_->resident.end()) {
    const TensorInfo full = info(name);
    const int64_t numSamples = full.shape()[0];
    const size_t sampleBytes =
        numSamples == 0 ? 0 : static_cast<size_t>(full.nelms() / numSamples) * dataTypeSize(type);
    const size_t wholeBytes = static_cast<size_t>(numSamples) * sampleBytes;
    if (samples.empty() || wholeBytes > impl_->residentBudget - impl_->residentUsed) {
      readFromFile(name, full, samples, type, dst);
      return;
    }
    Impl::Resident whole{std::vector<unsigned char>(wholeBytes), numSamples, sampleBytes};
    std::vector<int64_t> all(static_cast<size_t>(numSamples));
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
    readFromFile(name, full, all, type, whole.bytes.data());
    impl_->residentUsed += wholeBytes;
    kept = impl_->resident.emplace(key, std::move(whole)).first;
  }
  const Impl::Resident& r = kept->second;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (samples[i] < 0 || samples[i] >= r.numSamples) {
      throw error("sample {} is out of range for dataset '{}' in '{}' ({} samples)", samples[i],
                  name, path_, r.numSamples);
    }
    std::memcpy(out + i * r.sampleBytes,
                r.bytes.data() + static_cast<size_t>(samples[i]) * r.sampleBytes, r.sampleBytes);
  }
}

void DatasetReader::readFromFile(const std::string& name, const TensorInfo& full,
                                 const std::vector<int64_t>& samples, DataType type,
                                 void* dst) const {
  const int64_t numSamples = full.shape()[0];
  const int64_t sampleElements = numSamples == 0 ? 0 : full.nelms() / numSamples;
  const size_t sampleBytes = static_cast<size_t>(sampleElements) * dataTypeSize(type);
  memoryTypeOf(type);  // throws for a type the reader does not convert to
  if (samples.empty()) return;

  // The distinct indices in file order, read run by run (consecutive indices in one read) into a
  // staging buffer, then copied to the batch's order. One read per run rather than one H5Dread of
  // their union: HDF5 builds a union of hyperslabs in quadratic time (8192 scattered rows took
  // a second).
  std::vector<int64_t> sorted(samples);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (int64_t s : {sorted.front(), sorted.back()}) {
    if (s < 0 || s >= numSamples) {
      throw error("sample {} is out of range for dataset '{}' in '{}' ({} samples)", s, name, path_,
                  numSamples);
    }
  }
  // Read straight into dst when the batch is already in file order without repeats.
  const bool inFileOrder =
      sorted.size() == samples.size() && std::is_sorted(samples.begin(), samples.end());
  std::vector<unsigned char> staging(inFileOrder ? 0 : sorted.size() * sampleBytes);
  auto* out = static_cast<unsigned char*>(dst);
  unsigned char* rows = inFileOrder ? out : staging.data();

  H5Handle ds(H5Dopen2(impl_->file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw error("cannot open dataset '{}' in '{}'", name, path_);
  H5Handle fileSpace(H5Dget_space(ds.get()), H5Sclose);
  SampleRunReader values(ds.get(), full, type, "dataset '" + name + "' in '" + path_ + "'");
  std::vector<hsize_t> start(full.shape().size(), 0);
  std::vector<hsize_t> count(full.shape().begin(), full.shape().end());
  for (size_t i = 0; i < sorted.size();) {
    size_t run = 1;
    while (i + run < sorted.size() && sorted[i + run] == sorted[i] + static_cast<int64_t>(run)) {
      ++run;
    }
    start[0] = static_cast<hsize_t>(sorted[i]);
    count[0] = static_cast<hsize_t>(run);
    H5Sselect_hyperslab(fileSpace.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(),
                        nullptr);
    H5Handle memSpace(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr),
                      H5Sclose);
    values.read(memSpace.get(), fileSpace.get(), sorted[i], static_cast<int64_t>(run),
                rows + i * sampleBytes);
    i += run;
  }
  if (inFileOrder) return;
  for (size_t i = 0; i < samples.size(); ++i) {
    const auto at = std::lower_bound(sorted.begin(), sorted.end(), samples[i]) - sorted.begin();
    std::memcpy(out + i * sampleBytes, staging.data() + static_cast<size_t>(at) * sampleBytes,
                sampleBytes);
  }
}

struct DatasetWriter::Impl {
  H5Handle file;
};

DatasetWriter::DatasetWriter(const std::string& path)
    : path_(path), impl_(std::make_unique<Impl>()) {
  silenceHdf5Errors();
  impl_->file =
      H5Handle(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!impl_->file.valid()) throw error("cannot create HDF5 file '{}'", path);
}

DatasetWriter::~DatasetWriter() = default;

void DatasetWriter::write(const std::string& name, const TensorInfo& info, const void* data) {
  std::vector<hsize_t> dims(info.shape().begin(), info.shape().end());
  H5Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  const hid_t type = memoryTypeOf(info.dataType());
  H5Handle ds(H5Dcreate2(impl_->file.get(), name.c_str(), type, space.get(), H5P_DEFAULT,
                         H5P_DEFAULT, H5P_DEFAULT),
              H5Dclose);
  if (!ds.valid()) throw error("cannot create dataset '{}' in '{}'", name, path_);
  if (H5Dwrite(ds.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    throw error("cannot write dataset '{}' in '{}'", name, path_);
  }
}

void DatasetWriter::softLink(const std::string& name, const std::string& target) {
  if (H5Lcreate_soft(target.c_str(), impl_->file.get(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT) <
      0) {
    throw error("cannot create the soft link '{}' in '{}'", name, path_);
  }
}

void DatasetWriter::externalLink(const std::string& name, const std::string& file,
                                 const std::string& object) {
  if (H5Lcreate_external(file.c_str(), object.c_str(), impl_->file.get(), name.c_str(), H5P_DEFAULT,
                         H5P_DEFAULT) < 0) {
    throw error("cannot create the external link '{}' in '{}'", name, path_);
  }
}

}  // namespace xtrain::checkpoint
