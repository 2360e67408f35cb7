// RAII for HDF5 ids (files, datasets, dataspaces, types, attributes, property lists). Internal to
// src/checkpoint: the only folder that includes hdf5.h.
#pragma once

#include <hdf5.h>

#include <string>
#include <utility>

#pragma GCC visibility push(default)

namespace xtrain::checkpoint {

// Owns one HDF5 id and closes it with the matching H5*close on destruction.
class H5Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Handle() = default;
  H5Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& o) noexcept
      : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
  H5Handle& operator=(H5Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      closer_ = o.closer_;
    }
    return *this;
  }
  ~H5Handle() { reset(); }

  hid_t get() const { return id_; }
  // Gives up ownership: the caller closes the id.
  hid_t release() { return std::exchange(id_, H5I_INVALID_HID); }
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Turns HDF5's automatic error printing off for the calling thread (xtrain reports errors itself).
// Debian's HDF5 is built thread-safe, which makes the error stack (and this setting) per thread, so
// every entry point calls it: a checkpoint written on a background thread must be silent too. Cheap
// after the first call on a thread.
void silenceHdf5Errors();

// The most specific message on the calling thread's HDF5 error stack (what the last failing HDF5
// call reported, e.g. "truncated file: eof = 1000, ... stored_eof = 6144"), or "" when empty.
std::string hdf5ErrorDetail();

// Owning wrappers for the common kinds of id (invalid when the HDF5 call failed): own<H5Xclose>
// closes the id with H5Xclose.
template <H5Handle::Closer kClose>
H5Handle own(hid_t id) {
  return H5Handle(id, kClose);
}
inline constexpr auto ownFile = &own<H5Fclose>;
inline constexpr auto ownGroup = &own<H5Gclose>;
inline constexpr auto ownDataset = &own<H5Dclose>;
inline constexpr auto ownSpace = &own<H5Sclose>;
inline constexpr auto ownType = &own<H5Tclose>;
inline constexpr auto ownAttribute = &own<H5Aclose>;
inline constexpr auto ownPlist = &own<H5Pclose>;

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
