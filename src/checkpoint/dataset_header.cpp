#include "checkpoint/dataset_header.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <vector>

#include "xtrain/error.hpp"

namespace xtrain::checkpoint {

namespace {

// The first object header chunk is read whole up to this size (h5py's are a few hundred bytes).
constexpr uint64_t kMaxHeaderBytes = 1 << 20;
constexpr unsigned kDatatypeMessage = 3;
constexpr unsigned kEnumClass = 8;

uint64_t littleEndian(const unsigned char* p, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = bytes; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// The bytes of the file at [offset, offset + size), fewer at its end.
std::vector<unsigned char> readAt(const std::string& path, uint64_t offset, uint64_t size) {
  std::ifstream in(path, std::ios::binary);
  std::vector<unsigned char> bytes(size);
  if (!in.seekg(static_cast<std::streamoff>(offset))) return {};
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<size_t>(in.gcount()));
  return bytes;
}

// The datatype message found in the messages [at, end) of a header chunk; `v2` selects the
// message framing of version-2 headers (`orderField`: messages carry a creation order).
std::optional<std::vector<unsigned char>> findDatatype(const std::vector<unsigned char>& h,
                                                       size_t at, size_t end, bool v2,
                                                       bool orderField) {
  end = std::min(end, h.size());
  const size_t prefix = v2 ? 4 + (orderField ? 2 : 0) : 8;
  while (at + prefix <= end) {
    const unsigned type = v2 ? h[at] : static_cast<unsigned>(littleEndian(&h[at], 2));
    const auto size = static_cast<size_t>(littleEndian(&h[at + (v2 ? 1 : 2)], 2));
    const size_t data = at + prefix;
    if (data + size > end) return std::nullopt;
    if (type == kDatatypeMessage) {
      return std::vector<unsigned char>(h.begin() + static_cast<std::ptrdiff_t>(data),
                                        h.begin() + static_cast<std::ptrdiff_t>(data + size));
    }
    at = data + size;
  }
  return std::nullopt;
}

// The datatype message of the object header at `offset` of the file, when it lies in the header's
// first chunk (always so for h5py's datasets).
std::optional<std::vector<unsigned char>> datatypeMessage(const std::string& path,
                                                          uint64_t offset) {
  const std::vector<unsigned char> h = readAt(path, offset, 64);
  if (h.size() >= 16 && h[0] == 1) {  // version 1: 16-byte prefix, 8-byte message headers
    const uint64_t chunk = littleEndian(&h[8], 4);
    if (chunk > kMaxHeaderBytes) return std::nullopt;
    return findDatatype(readAt(path, offset, 16 + chunk), 16, 16 + chunk, false, false);
  }
  if (h.size() >= 8 && std::memcmp(h.data(), "OHDR", 4) == 0 && h[4] == 2) {
    const unsigned flags = h[5];
    size_t at = 6 + ((flags & 0x20) != 0 ? 16 : 0) + ((flags & 0x10) != 0 ? 4 : 0);
    const size_t width = size_t{1} << (flags & 3);
    if (at + width > h.size()) return std::nullopt;
    const uint64_t chunk = littleEndian(&h[at], width);
    at += width;
    if (chunk > kMaxHeaderBytes) return std::nullopt;
    return findDatatype(readAt(path, offset, at + chunk), at, at + chunk, true,
                        (flags & 0x04) != 0);
  }
  return std::nullopt;
}

}  // namespace

void checkEnumTypeBeforeOpening(hid_t file, const std::string& path, const std::string& name,
                                const std::string& where) {
  H5L_info_t link;
  if (H5Lget_info(file, name.c_str(), &link, H5P_DEFAULT) < 0 || link.type == H5L_TYPE_EXTERNAL) {
    return;  // the object may be in another file
  }
  H5O_info_t object;
  if (H5Oget_info_by_name2(file, name.c_str(), &object, H5O_INFO_BASIC, H5P_DEFAULT) < 0) return;
  // Addresses count from the superblock, which a user block puts after its bytes.
  hsize_t userBlock = 0;
  H5Handle fcpl(H5Fget_create_plist(file), H5Pclose);
  if (!fcpl.valid() || H5Pget_userblock(fcpl.get(), &userBlock) < 0) return;
  const auto message = datatypeMessage(path, userBlock + object.addr);
  // Class and version, class bits (3 bytes), size (4); an enum's base type follows, framed alike.
  if (!message || message->size() < 16 || ((*message)[0] & 0x0f) != kEnumClass) return;
  const uint64_t size = littleEndian(&(*message)[4], 4);
  const uint64_t baseSize = littleEndian(&(*message)[12], 4);
  if (size != baseSize) {
    throw error(
        "{}: its element type is an enum of {} bytes over a base type of {} bytes: the file is "
        "damaged",
        where, size, baseSize);
  }
}

}  // namespace xtrain::checkpoint
