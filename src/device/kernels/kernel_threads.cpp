#include "device/kernels/kernel_threads.hpp"

#include <omp.h>

#include <algorithm>

namespace xtrain::device {

void setKernelThreadsForThisThread(int threads) {
  omp_set_num_threads(std::max(1, threads));
}

int kernelThreadsForThisThread() {
  return omp_get_max_threads();
}

}  // namespace xtrain::device
