#include "launcher/failure_clues.hpp"

#include <algorithm>
#include <charconv>

namespace xtrain::launcher {
namespace {

// Reads a non-negative decimal number at `pos` (advanced past it); -1 when there is none.
long long readNumber(std::string_view s, size_t& pos) {
  long long value = -1;
  const auto [end, ec] = std::from_chars(s.data() + pos, s.data() + s.size(), value);
  if (ec != std::errc() || value < 0) return -1;
  pos = static_cast<size_t>(end - s.data());
  return value;
}

}  // namespace

std::string hostLostByMpirun(std::string_view line) {
  const size_t at = line.find("Remote daemon:");
  if (at == std::string_view::npos) return {};
  const std::string_view node = " on node ";
  const size_t on = line.find(node, at);
  if (on == std::string_view::npos) return {};
  std::string host(line.substr(on + node.size()));
  host.erase(host.find_last_not_of(" \t\r") + 1);
  return host;
}

std::vector<int> instancesThatDidNotArrive(std::string_view line, int numInstances) {
  const std::string_view tail = " did not arrive";
  const size_t end = line.rfind(tail);
  const size_t size = line.rfind("' (size ", end);
  const size_t ranks = line.rfind("ranks [", end);
  if (end == std::string_view::npos || size == std::string_view::npos ||
      ranks == std::string_view::npos || ranks < size || line.find(" in group '") > size) {
    return {};
  }
  size_t pos = size + 8;
  if (readNumber(line, pos) != numInstances) return {};
  pos = ranks + 7;
  std::vector<int> out;
  while (pos < end && line[pos] != ']') {
    const long long r = readNumber(line, pos);
    if (r < 0 || r >= numInstances) return {};
    out.push_back(static_cast<int>(r));
    while (pos < end && (line[pos] == ',' || line[pos] == ' ')) ++pos;
  }
  if (pos >= end || line[pos] != ']' || out.empty()) return {};
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace xtrain::launcher
