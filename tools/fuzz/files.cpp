#include "files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "unique_fd.hpp"

namespace xfuzz {

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void writeFile(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

std::string EntryState::describe() const {
  std::ostringstream s;
  switch (type) {
    case 'f': s << "regular file, " << size << " bytes, hash " << std::hex << hash; break;
    case 'd': s << "directory"; break;
    case 'l': s << "symlink to '" << linkTarget << "'"; break;
    case 'p': s << "FIFO"; break;
    case 'c': s << "char device " << major(device) << "," << minor(device); break;
    case 'b': s << "block device " << major(device) << "," << minor(device); break;
    case 's': s << "socket"; break;
    default: s << "unknown type"; break;
  }
  return s.str();
}

namespace {

uint64_t hashFile(const fs::path& p) {
  // O_NOFOLLOW|O_NONBLOCK: if the entry was swapped for a FIFO or link since lstat, do not block.
  UniqueFd fd(open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return 0;
  uint64_t h = 1469598103934665603ull;  // FNV-1a 64
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(buf[i])) * 1099511628211ull;
  }
  return h;
}

EntryState stateOf(const fs::path& p) {
  EntryState e;
  struct stat st {};
  if (lstat(p.c_str(), &st) != 0) return e;
  if (S_ISREG(st.st_mode)) {
    e.type = 'f';
    e.size = static_cast<uint64_t>(st.st_size);
    e.hash = hashFile(p);
  } else if (S_ISDIR(st.st_mode)) {
    e.type = 'd';
  } else if (S_ISLNK(st.st_mode)) {
    e.type = 'l';
    std::error_code ec;
    e.linkTarget = fs::read_symlink(p, ec).string();
  } else if (S_ISFIFO(st.st_mode)) {
    e.type = 'p';
  } else if (S_ISCHR(st.st_mode)) {
    e.type = 'c';
    e.device = st.st_rdev;
  } else if (S_ISBLK(st.st_mode)) {
    e.type = 'b';
    e.device = st.st_rdev;
  } else if (S_ISSOCK(st.st_mode)) {
    e.type = 's';
  }
  return e;
}

void walk(const fs::path& root, const std::string& rel, int depth, Snapshot& out) {
  std::error_code ec;
  for (fs::directory_iterator it(root / rel, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(".xfuzz", 0) == 0) continue;
    const std::string childRel = rel == "." ? name : rel + "/" + name;
    EntryState s = stateOf(root / childRel);
    out[childRel] = s;
    if (s.type == 'd' && depth != 0) walk(root, childRel, depth < 0 ? -1 : depth - 1, out);
  }
}

}  // namespace

Snapshot snapshot(const fs::path& root, int depth) {
  Snapshot s;
  s["."] = stateOf(root);
  walk(root, ".", depth, s);
  return s;
}

ScratchDir::ScratchDir(fs::path p) : path_(std::move(p)) { fs::create_directories(path_); }

ScratchDir::~ScratchDir() {
  if (!owned_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void ScratchDir::keepAs(const fs::path& dest) {
  std::error_code ec;
  fs::remove_all(dest, ec);
  fs::create_directories(dest.parent_path(), ec);
  fs::rename(path_, dest, ec);
  if (ec) {  // another file system: copy, then remove the original
    copyTree(path_, dest);
    fs::remove_all(path_, ec);
  }
  owned_ = false;
}

fs::path makeUniqueDir(const fs::path& parent, const std::string& prefix) {
  fs::create_directories(parent);
  std::string templ = (parent / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(templ.data())) throw std::runtime_error("mkdtemp in " + parent.string() + ": " + std::strerror(errno));
  return templ;
}

void copyTree(const fs::path& from, const fs::path& to) {
  struct stat st {};
  if (lstat(from.c_str(), &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    fs::create_directories(to);
    for (const auto& e : fs::directory_iterator(from)) copyTree(e.path(), to / e.path().filename());
  } else if (S_ISLNK(st.st_mode)) {
    fs::create_symlink(fs::read_symlink(from), to);
  } else if (S_ISFIFO(st.st_mode)) {
    mkfifo(to.c_str(), 0644);
  } else if (S_ISREG(st.st_mode)) {
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  }
  // Device nodes are not copied: a kept failure directory holds no devices.
}

std::string shellLine(const std::vector<std::string>& argv, bool abbreviate) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    if (abbreviate && a.size() > 200) {
      out += "\"$(printf '%" + std::to_string(a.size()) + "s' | tr ' ' " + std::string(1, a[0]) + ")\"";
      continue;
    }
    bool plain = !a.empty();
    for (char c : a)
      if (!(isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./:=+,@%", c))) plain = false;
    if (plain) {
      out += a;
    } else {
      out += '\'';
      for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
    }
  }
  return out;
}

std::string tailOfFile(const fs::path& p, int lines) {
  std::string text;
  try {
    text = readFile(p);
  } catch (const std::exception&) {
    return "";
  }
  if (text.size() > 8192) text = text.substr(text.size() - 8192);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  // Walk back over `lines` newlines; what follows the last one found is the tail.
  size_t start = text.size();
  for (int i = 0; i < lines && start > 0; ++i) {
    const size_t nl = text.rfind('\n', start - 1);
    if (nl == std::string::npos) {
      start = 0;
      break;
    }
    start = nl == 0 && i + 1 < lines ? 0 : nl;
    if (start == 0) break;
  }
  return start < text.size() && text[start] == '\n' ? text.substr(start + 1) : text.substr(start);
}

}  // namespace xfuzz
