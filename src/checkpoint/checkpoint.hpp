// HDF5 checkpoints: the file format of docs/checkpoint-format.md, written by the instances of a job
// in parallel and read back whole. No session knowledge here: the session decides what goes in
// (weights, optimizer state, random and data state) and checks what comes out against its graph.
//
// On disk a checkpoint is a directory:
//
//   <checkpoint-dir>/ckpt-<step, 8 digits>/checkpoint.h5   root attributes + one virtual dataset
//   per
//                                                          dataset, mapping into the parts
//   <checkpoint-dir>/ckpt-<step, 8 digits>/part-<i>.h5     the datasets instance i wrote
//   <checkpoint-dir>/latest                                name of the newest complete checkpoint
//
// Dataset paths: "/weights/<tensor>", "/optimizer/<weight>/<slot>", "/state/<name>"; a '/' or '%'
// in a tensor name is written %2F / %25 (encodeName), so every tensor is one dataset. Every dataset
// carries a CRC-32 of its bytes (attribute "crc32"), checked on read.
//
// Writing is staged so that a job killed at any moment leaves the previous checkpoint intact:
//   1. every instance i: writePart(staging, i, the datasets it owns)  (in parallel; fsync'ed)
//   2. after all parts are written, one instance: writeIndex(staging, attributes, parts)
//   3. the same instance: commit(staging, final): fsync, rename staging -> final, then replace
//      `latest` (write latest.tmp-<pid>-<n>, fsync, rename).
// A staging directory is "<final>.tmp-<tag>"; listing ignores those, and pruning removes stale
// ones. What a directory of checkpoints holds beside them (`latest`, the lock), which is the
// newest, and pruning are CheckpointDirectory's (checkpoint_directory.hpp).
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/host_tensor.hpp"
#include "xtrain/error.hpp"

namespace xtrain::checkpoint {

inline constexpr const char* kFormatName = "xtrain-checkpoint";
// Version 2 added the seal (the index's checksum, docs/checkpoint-format.md); version 3 writes the
// graph fingerprint as "fnv1a64:<16 hex digits>" (version 2 wrote "fnv1a64:{:016x} <decimal>").
// Versions 1 and 2 are still read.
inline constexpr int64_t kFormatVersion = 3;

// What is wrong with a checkpoint (corrupt, truncated, incomplete, newer format, checksum
// mismatch): the message names the file and the dataset or attribute.
class CheckpointError : public error {
 public:
  using error::error;
};

// The root attributes of checkpoint.h5.
struct Attributes {
  std::string formatName = kFormatName;
  int64_t formatVersion = kFormatVersion;
  int64_t step = 0;
  int64_t epoch = 0;
  int64_t samplesSeen = 0;
  int64_t globalReplicationFactor = 1;
  int64_t instances = 1;
  std::string optimizerType;                      // e.g. "SGD"
  std::map<std::string, double> hyperparameters;  // e.g. learningRate, momentum (defaults)
  std::string graphFingerprint;                   // the session's fingerprint of the model graph
  std::string creationTime;                       // ISO 8601, UTC
  std::string xtrainVersion;
};

struct Dataset {
  std::string path;  // "/weights/W1", "/optimizer/W1/velocity", "/state/rng"
  HostTensor value;
};

// Everything a checkpoint holds, read whole.
struct Contents {
  Attributes attributes;
  std::map<std::string, HostTensor> datasets;  // by path
};

// "a/b%c" -> "a%2Fb%25c", and back.
std::string encodeName(const std::string& tensorName);

// 64-bit FNV-1a over strings, each followed by a separator byte (so ("ab", "c") and ("a", "bc")
// differ): the hash of graph fingerprints, and of what the instances of a job compare.
struct Fnv1a64 {
  uint64_t value = 1469598103934665603ull;
  void add(std::string_view text);
};

// The graph fingerprint "fnv1a64:<16 hex digits>" of a 64-bit FNV-1a hash.
std::string graphFingerprint(uint64_t hash);
// A stored graphFingerprint attribute as this version writes it: checkpoints of format version 2
// and earlier hold "fnv1a64:{:016x} <decimal hash>" (an unformatted specifier), which becomes
// graphFingerprint(hash); anything else is returned unchanged. The reader applies it, so an old
// checkpoint matches a session of the same graph.
std::string normalizeGraphFingerprint(const std::string& stored, int64_t formatVersion);
std::string decodeName(const std::string& encoded);

// "ckpt-00000010" for step 10.
std::string checkpointName(int64_t step);

// Who writes a staging directory. Its name is "<final>.tmp-<host>-<pid>-<nonce>" (host: a hash of
// the host's name, pid and nonce of the job's instance 0), so that two jobs saving the same step in
// one directory never share a staging directory, even without a launcher's job id, and prune() can
// tell a live job's from a killed one's. Every instance of a job must use the same owner (the
// session agrees on instance 0's).
struct StagingOwner {
  uint32_t host = 0;
  int64_t pid = 0;
  uint32_t nonce = 0;
};
// This process on this host, with a fresh random nonce.
StagingOwner thisProcessAsStagingOwner();
std::string stagingDirectory(const std::string& finalDir, const StagingOwner& owner);
// The owner a staging directory's name records, or nullopt for other names (older xtrains named
// them after the launcher's job id).
std::optional<StagingOwner> stagingOwnerOf(const std::string& stagingName);
// True when the owner is a process alive on this host.
bool ownerAlive(const StagingOwner& owner);
// True when the owner was a process of this host that no longer exists (false for other hosts:
// nothing can be said about them).
bool ownerGone(const StagingOwner& owner);

// Stage 1: writes `datasets` to <staging>/part-<instance>.h5 (creating the staging directory when
// needed), each with its crc32 attribute, and fsyncs the file.
void writePart(const std::string& stagingDir, int instance, const std::vector<Dataset>& datasets);
// Stage 2: reads the part files 0..parts-1 of the staging directory (their datasets, shapes, types
// and checksums) and writes <staging>/checkpoint.h5: the attributes and one virtual dataset per
// dataset, of its whole shape, mapping to its part (relative file names, so the directory can
// move). Throws CheckpointError when a part is missing or two parts hold the same path. An empty
// attributes.creationTime is filled in with the current UTC time.
void writeIndex(const std::string& stagingDir, const Attributes& attributes, int parts);
// Stage 3: makes the staged checkpoint the complete `finalDir` and points <parent>/latest at it,
// unless CheckpointDirectory(parent).checkLatestIsReplaceable() refuses (then the checkpoint is
// complete and `latest` is left as it was, with a warning).
void commit(const std::string& stagingDir, const std::string& finalDir);

// Reads and verifies a checkpoint (its directory or its checkpoint.h5): format name, version (a
// newer version is refused, naming both), every dataset's presence, shape and crc32. Throws
// CheckpointError.
Contents read(const std::string& path);
// The attributes only (no dataset is read; used by ls and by --resume).
Attributes readAttributes(const std::string& path);
// Like read() but returns every problem found instead of throwing at the first (xckpt verify).
std::vector<std::string> verify(const std::string& path);

// One dataset as the index describes it (no data read).
struct DatasetInfo {
  std::string path;      // "/weights/W1"
  TensorInfo info;       // element type and shape
  uint32_t crc32 = 0;    // stored checksum of its bytes
  std::string partFile;  // the part holding its bytes, relative to the checkpoint: "part-0.h5"
};
// The datasets of a checkpoint, sorted by path, after read()'s structural checks (format, version,
// parts present, each dataset mapped to its part with the same shape, type and checksum attribute)
// but without reading data or computing checksums (xckpt show). Throws CheckpointError.
std::vector<DatasetInfo> listDatasets(const std::string& path);

// Whether checkpoints may be written on a background thread while other threads use HDF5 (the HDF5
// library is a thread-safe build). Sessions write synchronously when it is not.
bool backgroundWritesSupported();

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
