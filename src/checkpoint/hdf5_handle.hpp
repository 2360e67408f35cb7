// RAII for HDF5 ids (files, datasets, dataspaces, types, attributes, property lists). Internal to
// src/checkpoint: the only folder that includes hdf5.h.
#pragma once

#include <hdf5.h>

#include <string>
#include <utility>

namespace xtrain::checkpoint {

// Owns one HDF5 id and closes it with the matching H5*close on destruction.
class H5Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Handle() = default;
  H5Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  H5Handle(H5Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
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
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && closer_ != nullptr) closer_(id_);
    id_ = H5I_INVALID_HID;
  }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

// Turns HDF5's automatic error printing off for the process (xtrain reports errors itself). Idempotent.
void silenceHdf5Errors();

}  // namespace xtrain::checkpoint
