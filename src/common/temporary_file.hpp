// SiblingTemporary: the temporary file beside an output that every writer of xtrain creates, fills
// and renames into place, so that a reader (or a crash) sees the old file or the new one, never
// half of one. One mechanism for every such write (writeOutputFile, replaceOwnFile, the trace,
// the checkpoints' small files, the file store) because the temporary is where another user
// attacks: in a shared directory, a fixed name such as FILE.tmp can be planted beforehand as a
// symbolic link to a victim file, which a writer running as root would then truncate and fill.
// So the name is unforeseeable (64 random bits) and the file is created with
// O_CREAT|O_EXCL|O_NOFOLLOW: whatever already holds a name (a link, a file, a FIFO) is never
// opened; another name is drawn instead.
//
// The name is drawn when the object is made; creating, writing and renaming the file allocate
// nothing and make only async-signal-safe calls (open, write, rename, unlink), so a signal handler
// can publish a file whose SiblingTemporary was made before the signal (the trace on SIGINT).
// Not thread-safe: one thread (or one handler) uses an object at a time.
#pragma once
#pragma GCC visibility push(default)

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace xtrain {

class SiblingTemporary {
 public:
  // Draws the name of a temporary in `target`'s directory: ".<name>.tmp-<16 hex digits>" (the
  // target's name cut to 96 bytes, so the temporary's name stays within NAME_MAX). Nothing is
  // created yet.
  explicit SiblingTemporary(const std::string& target);
  // Removes the temporary when it was created and not renamed into place.
  ~SiblingTemporary();
  SiblingTemporary(const SiblingTemporary&) = delete;
  SiblingTemporary& operator=(const SiblingTemporary&) = delete;

  // Creates the file for writing (O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, `mode` less the
  // umask); when the name is taken, draws another, up to 16 times. Returns the descriptor (the
  // caller closes it), or -1 with errno set. A second create() discards the first file.
  // Async-signal-safe.
  int create(mode_t mode = 0666) noexcept;
  // Renames the created file over the target (whatever is there: a symbolic link is replaced, not
  // followed). false with errno set, the temporary removed. Async-signal-safe.
  bool publish() noexcept;
  // Removes the created file, if any. Async-signal-safe.
  void discard() noexcept;

  const std::string& path() const { return path_; }      // the temporary's current name
  const std::string& target() const { return target_; }  // what publish() replaces

 private:
  void drawName() noexcept;

  std::string target_;
  std::string path_;  // its 16 hex digits are rewritten in place by drawName()
  size_t randomAt_ = 0;
  uint64_t state_ = 0;  // a generator seeded from getrandom(2): the next names are unforeseeable
  bool created_ = false;
};

}  // namespace xtrain

#pragma GCC visibility pop
