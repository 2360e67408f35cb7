// File-system steps that make a checkpoint durable and its publication atomic: fsync of files and
// directories, atomic replacement of a small file. POSIX; every failure throws CheckpointError
// naming the path and the system's reason.
#pragma once
#pragma GCC visibility push(default)

#include <cstdint>
#include <string>

namespace xtrain::checkpoint {

// fsync of a regular file or a directory (a directory's fsync makes the names created, renamed or
// removed in it durable).
void fsyncPath(const std::string& path);
// fsync of every regular file directly in `dir`, then of `dir` itself.
void fsyncDirectoryAndFiles(const std::string& dir);
// Replaces `path` by a file holding `content` so that a reader (or a crash) sees the old or the new
// content, never a mix: writes <path>.tmp-<host>-<pid>-<nonce>, fsyncs it, renames it over `path`,
// fsyncs the directory.
void replaceFileDurably(const std::string& path, const std::string& content);
// The bytes of the regular files under `dir` (recursively); 0 when it cannot be read.
uint64_t bytesUnder(const std::string& dir);
// The directory holding `path` ("." for a bare name); `path` may end in '/'.
std::string parentDirectory(const std::string& path);
// The last component of `path` ("ckpt-00000010" for "run/ckpt-00000010/").
std::string baseName(const std::string& path);

}  // namespace xtrain::checkpoint

#pragma GCC visibility pop
