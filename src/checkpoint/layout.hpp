// Names of the files and attributes of a checkpoint directory (docs/checkpoint-format.md).
// Internal.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <optional>
#include <string>

namespace xtrain::checkpoint::layout {

inline constexpr const char* kIndexFile = "checkpoint.h5";
inline constexpr const char* kLatestFile = "latest";
// Locked by the job writing into the directory (CheckpointDirectory::lock), holding its pid.
inline constexpr const char* kLockFile = ".xtrain-lock";
// Written by writeIndex beside the index (seal.hpp): the index's size and CRC-32, and the mark of a
// directory xtrain committed.
inline constexpr const char* kSealFile = "seal";
// The largest step a checkpoint may record: 10^12 steps (31 years at 1000 steps a second). A larger
// or negative one is damage, not training progress.
inline constexpr int64_t kMaxStep = 1'000'000'000'000;
// Markers in the names of directories that are not checkpoints: a save in progress (or killed), and
// a checkpoint being replaced or removed.
inline constexpr const char* kStagingMarker = ".tmp-";
inline constexpr const char* kRetiredMarker = ".old-";
// A directory that stood under a checkpoint's name without being xtrain's (no seal), set aside by
// commit() instead of being replaced: never listed, never pruned.
inline constexpr const char* kKeptMarker = ".kept-";
// Root attribute of checkpoint.h5 beyond the Attributes fields: how many part files there are.
inline constexpr const char* kPartsAttribute = "parts";
// Group of checkpoint.h5 holding one float64 attribute per hyperparameter.
inline constexpr const char* kHyperparameterGroup = "hyperparameters";
// Per-dataset attribute.
inline constexpr const char* kCrcAttribute = "crc32";

// HDF5 reads the source file and dataset names of a virtual dataset as printf-like patterns
// ("%b" = block number): a literal '%' (as in encoded tensor names) is written "%%".
std::string virtualSourceName(const std::string& name);

// "part-3.h5"
std::string partFile(int instance);
// The instance of a part file name, or nullopt when `name` is not "part-<i>.h5".
std::optional<int> partIndex(const std::string& name);
// The step of a checkpoint directory name "ckpt-<digits>", or nullopt for anything else (staging
// and retired directories included).
std::optional<int64_t> checkpointStep(const std::string& name);
// Whether `name`, an entry of a checkpoint directory, is one that xtrain's checkpoint code creates,
// replaces, renames or removes there: `latest` and its temporary copies ("latest.tmp-..."), the
// lock file, a checkpoint "ckpt-<digits>" and its staging, retired and set-aside copies
// ("ckpt-<digits>.tmp-...", ".old-...", ".kept-..."). A file of the user's under such a name is at
// risk; under any other name it is left alone.
bool isReservedName(const std::string& name);

}  // namespace xtrain::checkpoint::layout

#pragma GCC visibility pop
