// Single-copy reads from another process's memory (Linux cross-memory attach, process_vm_readv):
// the shm backend's large all-reduce reads its peers' buffers where they lie instead of staging
// them through the shared segment.
#pragma once
#pragma GCC visibility push(default)

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace xtrain::comm::shm {

// Whether this process wants single-copy reads for the groups it creates or joins from now on:
// only with XTRAIN_SHM_SINGLE_COPY=1 (or when a test policy says so for that rank), because on the
// project's machine they did not beat the slots (docs/performance-history.md, "Session 9"). A group
// uses them only if every rank wants them and every rank could read every peer (probe below).
bool singleCopyWanted(int rank);

// Test hook: decides singleCopyWanted per rank instead of the environment (empty: the
// environment again). Returns the previous policy. Must not race the creation of a group.
std::function<bool(int)> setSingleCopyPolicyForTesting(std::function<bool(int)> policy);

// Whether `bytes` bytes at `remote` in process `pid` can be read and equal `expected`: false when
// the kernel refuses (Yama ptrace_scope, a seccomp filter, no such process, another user) or the
// address is not mapped. Never throws.
bool canReadPeer(int pid, const void* remote, const void* expected, size_t bytes);

// Copies `bytes` bytes at `remote` in process `pid` to `local`. Returns "" on success, else why
// not (errno's text); `peerGone` is set when the process no longer exists.
std::string readPeer(int pid, const void* remote, void* local, size_t bytes, bool& peerGone);

// How many readPeer calls succeeded in this process so far (for tests: which path ran).
uint64_t peerReadsSoFar();

}  // namespace xtrain::comm::shm

#pragma GCC visibility pop
