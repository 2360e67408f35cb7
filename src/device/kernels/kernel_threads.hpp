// How many threads the kernels (oneDNN, on OpenMP) started from the calling thread may use.
#pragma once
#pragma GCC visibility push(default)

namespace xtrain::device {

// Sets the calling thread's kernel thread count (OpenMP's nthreads for parallel regions it starts).
// Replica threads call it so that L replicas running at once share the cores instead of each
// starting a full team.
void setKernelThreadsForThisThread(int threads);
// The current value for the calling thread.
int kernelThreadsForThisThread();

}  // namespace xtrain::device

#pragma GCC visibility pop
