// The timeline of a job of several instances (docs/trace.md): each instance writes its part,
// `<FILE>.instance-<K>`, and leaves a note naming FILE in the job's rendezvous directory; when the
// job (or one attempt of it) ends, however it ended, xrun merges the parts it finds into FILE, one
// process per instance, with their times put on one clock (each part carries the wall-clock time
// of its ts 0, xtrainOriginRealtimeNs).
#pragma once
#pragma GCC visibility push(default)

#include <string>
#include <vector>

namespace xtrain::timeline {

// "<path>.instance-<instance>".
std::string partPath(const std::string& path, int instance);

// Leaves the note for xrun: `<rendezvousDir>/timeline-<instance>` holding the absolute path of
// FILE. Throws xtrain::runtime_error when it cannot be written.
void registerPart(const std::string& rendezvousDir, int instance, const std::string& path);

struct MergeOutcome {
  std::string path;                   // FILE
  int merged = 0;                     // parts merged into it
  std::vector<std::string> problems;  // "instance 1: no part file (was it killed?)", ...
  bool written = false;               // FILE was written (at least one part merged)
};

// Merges the parts of `parts` (instance -> part path) into `path`: the part files merged are
// removed, FILE is written atomically. Never throws: what went wrong is in `problems`.
MergeOutcome mergeParts(const std::string& path,
                        const std::vector<std::pair<int, std::string>>& parts);

// Every FILE named by notes in `rendezvousDir`, merged (none: empty).
std::vector<MergeOutcome> mergeRegisteredParts(const std::string& rendezvousDir);

}  // namespace xtrain::timeline

#pragma GCC visibility pop
