#include "checkpoint/dataset_storage.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "common/checked_math.hpp"
#include "xtrain/error.hpp"

namespace xtrain::checkpoint {

namespace {

struct ChunkShape {
  hsize_t bytes = 0;  // of one whole chunk, as HDF5 holds it in memory (and on disk unfiltered)
  bool filtered = false;
};

std::string joined(const std::vector<hsize_t>& dims, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) out += ", ";
    out += dims[i] == H5S_UNLIMITED ? std::string("unlimited") : std::to_string(dims[i]);
  }
  return out;
}

// HDF5 writes no chunk dimension larger than a fixed dimension of its dataset (H5Dcreate refuses
// one) and does not check that when it reads: a chunk shape damaged into [5, 16711684] for a
// [64, 4] dataset makes H5Dread copy far past its buffers (a SIGSEGV inside libhdf5, h5dump's
// too). (A chunk dimension of 0 or a chunk of 4 GiB HDF5 refuses itself, when the dataset opens.)
ChunkShape chunkShapeOf(hid_t ds, hid_t plist, int64_t rank, size_t fileElementSize,
                        const std::string& where) {
  const auto dimCount = static_cast<size_t>(std::max<int64_t>(rank, 1));
  std::vector<hsize_t> chunkDims(dimCount);
  if (H5Pget_chunk(plist, static_cast<int>(dimCount), chunkDims.data()) != rank) {
    throw error("{}: its chunk shape cannot be read: the file is damaged", where);
  }
  std::vector<hsize_t> dims(dimCount);
  std::vector<hsize_t> maxDims(dimCount);
  H5Handle space(H5Dget_space(ds), H5Sclose);
  if (!space.valid() ||
      H5Sget_simple_extent_dims(space.get(), dims.data(), maxDims.data()) != rank) {
    throw error("{}: its shape cannot be read: the file is damaged", where);
  }
  const auto count = static_cast<size_t>(rank);
  ChunkShape shape{fileElementSize, H5Pget_nfilters(plist) != 0};
  for (size_t i = 0; i < count; ++i) {
    if (chunkDims[i] == 0 || (maxDims[i] != H5S_UNLIMITED && chunkDims[i] > maxDims[i])) {
      throw error(
          "{}: its chunk shape [{}] does not fit its shape [{}] (at most [{}]): the file is "
          "damaged",
          where, joined(chunkDims, count), joined(dims, count), joined(maxDims, count));
    }
    if (__builtin_mul_overflow(shape.bytes, chunkDims[i], &shape.bytes)) {
      throw error("{}: its chunk shape overflows: the file is damaged", where);
    }
  }
  return shape;
}

// Every filter of the pipeline can be undone by this HDF5: h5py's own lzf, for one, is a plugin
// that plain libhdf5 lacks, and HDF5 would only fail at the first read.
void requireDecodableFilters(hid_t plist, const std::string& where) {
  const int filters = H5Pget_nfilters(plist);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0;
    size_t values = 0;
    unsigned config = 0;
    char name[64] = {};
    const H5Z_filter_t id = H5Pget_filter2(plist, static_cast<unsigned>(i), &flags, &values,
                                           nullptr, sizeof name, name, &config);
    if (id < 0) throw error("{}: its filter pipeline cannot be read: the file is damaged", where);
    if (H5Zfilter_avail(id) <= 0) {
      throw error(
          "{}: its chunks are encoded with the filter '{}' (HDF5 filter {}), which this HDF5 "
          "library cannot decode (no plugin for it in HDF5_PLUGIN_PATH): write the data with "
          "compression='gzip' or none",
          where, name, static_cast<int>(id));
    }
  }
}

// Chunk by chunk: each lies inside the file and, unfiltered, holds exactly a chunk's bytes (HDF5
// reads an unfiltered chunk by its recorded size and leaves the rest of the chunk unset: wrong
// data, silently).
void checkEachChunk(hid_t ds, hid_t space, hsize_t chunks, const ChunkShape& shape,
                    hsize_t fileSize, const std::string& where) {
  for (hsize_t i = 0; i < chunks; ++i) {
    haddr_t address = 0;
    hsize_t size = 0;
    if (H5Dget_chunk_info(ds, space, i, nullptr, nullptr, &address, &size) < 0 ||
        address == HADDR_UNDEF || address > fileSize || size > fileSize - address) {
      throw error("{}: chunk {} of {} lies outside the file ({} bytes): the file is damaged", where,
                  i, chunks, fileSize);
    }
    if (!shape.filtered && size != shape.bytes) {
      throw error("{}: chunk {} of {} holds {} bytes, not a chunk's {}: the file is damaged", where,
                  i, chunks, size, shape.bytes);
    }
  }
}

// The whole index at once, in one pass: the chunks' recorded sizes add up to no more than the file
// and, unfiltered, to exactly the chunk count times a chunk's bytes (one damaged size changes the
// sum). A chunk recorded outside the file is left to HDF5, which refuses to read past the end of
// the file (its message reaches the user through readSamples).
void checkChunkTotals(hid_t ds, hsize_t chunks, const ChunkShape& shape, hsize_t fileSize,
                      const std::string& where) {
  const hsize_t stored = H5Dget_storage_size(ds);
  if (stored > fileSize) {
    throw error("{}: its {} chunks hold {} bytes, more than the file's {}: the file is damaged",
                where, chunks, stored, fileSize);
  }
  hsize_t expected = 0;
  if (!shape.filtered &&
      (__builtin_mul_overflow(chunks, shape.bytes, &expected) || stored != expected)) {
    throw error(
        "{}: its {} unfiltered chunks hold {} bytes, not {} x a chunk's {}: a chunk's recorded "
        "size is wrong, the file is damaged",
        where, chunks, stored, chunks, shape.bytes);
  }
}

// HDF5 1.10's chunk queries (H5Dget_chunk_info, H5Dget_chunk_info_by_coord) walk the chunk index
// from its start on every call, so visiting every chunk that way takes time quadratic in their
// number (20,000 chunks: 2 s in a v1 B-tree, 12-17 s in libver='latest' indexes); 1.10 has no
// H5Dchunk_iter. Small indexes are checked chunk by chunk, large ones by their totals.
void checkChunks(hid_t ds, hid_t plist, int64_t rank, size_t fileElementSize, hsize_t fileSize,
                 const std::string& where) {
  const ChunkShape shape = chunkShapeOf(ds, plist, rank, fileElementSize, where);
  requireDecodableFilters(plist, where);
  // The dataset's own dataspace (all of it selected), not H5S_ALL: 1.10.8 takes only a real
  // dataspace id there and fails on H5S_ALL ("invalid dataspace identifier"), which once refused
  // every chunked file. Unwritten chunks are not in the index: HDF5 gives their fill value.
  H5Handle space(H5Dget_space(ds), H5Sclose);
  hsize_t chunks = 0;
  if (!space.valid() || H5Dget_num_chunks(ds, space.get(), &chunks) < 0) {
    throw error("{}: its chunk index cannot be read: the file is damaged ({})", where,
                hdf5ErrorDetail());
  }
  if (chunks <= kChunksCheckedOneByOne) {
    checkEachChunk(ds, space.get(), chunks, shape, fileSize, where);
  } else {
    checkChunkTotals(ds, chunks, shape, fileSize, where);
  }
}

}  // namespace

// The bytes a dataset's storage occupies in its file must lie inside the file: HDF5 reads
// whatever addresses a damaged file's layout message names. Contiguous data and every chunk are
// checked; compact data lives in the object header, which HDF5 has already read.
void checkStorageInsideFile(hid_t ds, const TensorInfo& full, size_t fileElementSize,
                            const std::string& where) {
  H5Handle file(H5Iget_file_id(ds), H5Fclose);
  hsize_t fileSize = 0;
  if (!file.valid() || H5Fget_filesize(file.get(), &fileSize) < 0) {
    throw error("{}: cannot read the size of its file", where);
  }
  H5Handle plist(H5Dget_create_plist(ds), H5Pclose);
  const H5D_layout_t layout = plist.valid() ? H5Pget_layout(plist.get()) : H5D_LAYOUT_ERROR;
  const auto bytes = static_cast<hsize_t>(checkedMul(where + ": the size in bytes", full.nelms(),
                                                     static_cast<int64_t>(fileElementSize)));
  auto outside = [&](haddr_t address, hsize_t size) {
    return address > fileSize || size > fileSize - address;
  };
  // HDF5 copies a whole dataset's worth of bytes out of contiguous or compact storage whatever
  // size the layout message records: a recorded size that does not match the dataset is damage.
  auto requireStorageSize = [&](const char* kind) {
    const hsize_t stored = H5Dget_storage_size(ds);
    if (stored != bytes) {
      throw error(
          "{}: its {} storage holds {} bytes, but {} values of {} bytes need {}: the file is "
          "damaged",
          where, kind, stored, full.nelms(), fileElementSize, bytes);
    }
  };
  if (layout == H5D_CONTIGUOUS) {
    const haddr_t address = H5Dget_offset(ds);
    if (address == HADDR_UNDEF) return;  // never written: HDF5 returns the fill value
    requireStorageSize("contiguous");
    if (outside(address, bytes)) {
      throw error(
          "{}: its {} bytes of data at offset {} lie beyond the end of the file ({} bytes): the "
          "file is truncated or damaged",
          where, bytes, address, fileSize);
    }
  } else if (layout == H5D_COMPACT) {
    requireStorageSize("compact");
  } else if (layout == H5D_CHUNKED) {
    checkChunks(ds, plist.get(), full.rank(), fileElementSize, fileSize, where);
  } else {
    throw error(
        "{}: its storage layout ({}) is not one xtrain reads (contiguous, chunked or compact)",
        where, static_cast<int>(layout));
  }
}

}  // namespace xtrain::checkpoint
