// What another user can plant beside an output in a shared directory (issue 27): the name a writer
// might use for its temporary, FILE.tmp, as a symbolic link to a victim file, as a regular file or
// as a FIFO. A writer that opened the fixed name would fill the victim through the link (as root:
// any file of the system), clobber the file, or block on the FIFO. Tests plant them, run the
// writer, and check that every planted thing and the victim are as they were.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "testing/file_testing.hpp"

namespace xtrain::testing {

enum class PlantKind { SymlinkToVictim, RegularFile, Fifo };

inline const char* toString(PlantKind kind) {
  switch (kind) {
    case PlantKind::SymlinkToVictim: return "a symbolic link to the victim";
    case PlantKind::RegularFile: return "a regular file";
    case PlantKind::Fifo: return "a FIFO";
  }
  return "?";
}

class PlantedTemporaries {
 public:
  static constexpr const char* kVictimText = "the victim's own content\n";
  static constexpr const char* kPlantedText = "planted by another user\n";

  // The victim file: created at `victim` with kVictimText.
  explicit PlantedTemporaries(std::string victim) : victim_(std::move(victim)) {
    writeFileBytes(victim_, kVictimText);
  }

  // Plants `output` + ".tmp" as `kind`.
  void plantBeside(const std::string& output, PlantKind kind) {
    const std::string name = output + ".tmp";
    switch (kind) {
      case PlantKind::SymlinkToVictim: std::filesystem::create_symlink(victim_, name); break;
      case PlantKind::RegularFile: writeFileBytes(name, kPlantedText); break;
      case PlantKind::Fifo: EXPECT_EQ(::mkfifo(name.c_str(), 0666), 0) << name; break;
    }
    planted_.push_back({name, kind});
  }
  void plantBeside(const std::vector<std::string>& outputs, PlantKind kind) {
    for (const auto& o : outputs) plantBeside(o, kind);
  }

  // The victim holds its own content and each planted name is what was planted.
  void expectUntouched() const {
    EXPECT_EQ(readFileBytes(victim_), kVictimText) << "the victim " << victim_ << " was written";
    for (const auto& [name, kind] : planted_) {
      struct stat st {};
      ASSERT_EQ(::lstat(name.c_str(), &st), 0) << name << " (" << toString(kind) << ") is gone";
      switch (kind) {
        case PlantKind::SymlinkToVictim:
          EXPECT_TRUE(S_ISLNK(st.st_mode)) << name;
          EXPECT_EQ(std::filesystem::read_symlink(name).string(), victim_) << name;
          break;
        case PlantKind::RegularFile:
          EXPECT_TRUE(S_ISREG(st.st_mode)) << name;
          EXPECT_EQ(readFileBytes(name), kPlantedText) << name;
          break;
        case PlantKind::Fifo: EXPECT_TRUE(S_ISFIFO(st.st_mode)) << name; break;
      }
    }
  }

  // The names the test made: the victim and what was planted.
  std::set<std::string> names() const {
    std::set<std::string> out{std::filesystem::path(victim_).filename().string()};
    for (const auto& p : planted_) out.insert(std::filesystem::path(p.first).filename().string());
    return out;
  }

 private:
  std::string victim_;
  std::vector<std::pair<std::string, PlantKind>> planted_;
};

// The names of the entries of `dir` (not recursive).
inline std::set<std::string> namesIn(const std::filesystem::path& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.insert(e.path().filename().string());
  }
  return out;
}

}  // namespace xtrain::testing
