// HDF5 error handling shared by the data set reader and the checkpoint code.
#include <string>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/hdf5_handle.hpp"

namespace xtrain::checkpoint {

void silenceHdf5Errors() {
  // Per thread: with a thread-safe HDF5 each thread has its own default error stack.
  thread_local bool silenced = false;
  if (!silenced) {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    silenced = true;
  }
}

std::string hdf5ErrorDetail() {
  // Walking downward starts at the API call and ends at the function that found the problem, whose
  // description is the informative one.
  std::string last;
  auto visit = [](unsigned, const H5E_error2_t* e, void* data) -> herr_t {
    if (e->desc != nullptr && e->desc[0] != '\0') *static_cast<std::string*>(data) = e->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, visit, &last);
  return last;
}

}  // namespace xtrain::checkpoint

namespace xtrain::checkpoint {

bool backgroundWritesSupported() {
  hbool_t threadSafe = 0;
  return H5is_library_threadsafe(&threadSafe) >= 0 && threadSafe != 0;
}

}  // namespace xtrain::checkpoint
