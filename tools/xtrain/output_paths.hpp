// Every file xtrain writes (--save-model, --trace, --metrics) must stay clear of every other file
// it writes and of everything it reads or keeps: `--trace run.onnx --save-model run.onnx`,
// `--metrics data.h5 --val-data data.h5` or `--trace ck/ckpt-00000010/part-0.h5 --resume
// ck/ckpt-00000010` would replace a model, a data set or a checkpoint without a word.
#pragma once

#include "options.hpp"

namespace xtrain::tools {

// Throws UsageError (exit 2), naming both flags and the path, when an output
//  - is the same file as another output, or as --model, --data, --val-data;
//  - is, or lies inside, the --checkpoint-dir or the --resume checkpoint;
//  - lies inside --checkpoint-dir under a name xtrain keeps there (`latest`, the lock file,
//    `ckpt-<step>` and their temporary copies: checkpoint::layout::isReservedName). Other names
//    there (`--metrics ck/metrics.jsonl`) are the user's, and allowed.
// Paths are compared after resolving `.`, `..` and symbolic links (a dangling one too: writing
// follows it), and an existing output also by device and inode, which catches a hard link to a
// model, a data set or a file of a checkpoint. Called before anything is read or written.
void checkOutputsSpareInputs(const TrainOptions& options);

}  // namespace xtrain::tools
