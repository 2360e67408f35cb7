// Writing a file the user named as an output (--save-model, xckpt export-onnx, ...) without ever
// destroying what was there when the path is not an ordinary file. Every tool writes its outputs
// through this; errors are xtrain::error naming `what` (the flag or command) and the path.
#pragma once
#pragma GCC visibility push(default)

#include <string>
#include <string_view>

namespace xtrain {

// Checks, before any work is done, that writeOutputFile(path, ...) can succeed as far as can be
// known: the path is not empty, not a directory, block device or socket, and (for a regular file
// or a new name) its directory exists and is writable. Symbolic links are followed.
void checkOutputPath(const std::string& path, std::string_view what);

// Writes `bytes` to `path`:
//  - a regular file or a new name: written to a temporary file in the same directory
//    (SiblingTemporary: an unforeseeable name, created O_EXCL|O_NOFOLLOW), fsynced and renamed over
//    the path, so a crash leaves the old or the new content, never a mix; an existing
//    file keeps its permission bits;
//  - a symbolic link: followed to its final target, which is written as above; the link stays;
//  - a character device or a FIFO (/dev/null, /dev/stdout, a pipe): written through, never
//    replaced; a FIFO that no process reads is refused instead of blocking;
//  - a directory, block device or socket: refused.
void writeOutputFile(const std::string& path, std::string_view bytes, std::string_view what);

// Writes `bytes` to `path`, a file whose name xtrain chose in a directory (autoReport's
// report.json, logDir's memory-report.txt and .dot files, the trace's note for xrun): whatever is
// at the name is replaced by a new regular file as above, never followed or written through (a
// symbolic link or FIFO planted under the name in a shared directory is replaced, its target left
// alone); an existing regular file keeps its permission bits. A directory is refused. Throws
// xtrain::error naming `what` and the path.
void replaceOwnFile(const std::string& path, std::string_view bytes, std::string_view what);

}  // namespace xtrain

#pragma GCC visibility pop
