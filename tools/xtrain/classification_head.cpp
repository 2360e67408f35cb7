#include "classification_head.hpp"

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string_view>
#include <vector>

namespace xtrain::tools {

namespace {

// Just enough of the protobuf wire format to read a ModelProto's nodes (ONNX and protobuf are
// private dependencies of the library; the tool reads the few fields it needs itself).
class WireReader {
 public:
  explicit WireReader(std::string_view bytes)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}
  bool done() const { return p_ >= end_ || bad_; }
  bool bad() const { return bad_; }

  // Reads the next field's key; false at the end or on malformed input.
  bool next(uint32_t& field, uint32_t& wireType) {
    if (done()) return false;
    const uint64_t key = varint();
    if (bad_) return false;
    field = static_cast<uint32_t>(key >> 3);
    wireType = static_cast<uint32_t>(key & 7);
    return true;
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) break;
      const auto b = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    bad_ = true;
    return 0;
  }
  std::string_view bytes() {
    const uint64_t n = varint();
    if (bad_ || n > static_cast<uint64_t>(end_ - p_)) {
      bad_ = true;
      return {};
    }
    std::string_view out(p_, static_cast<size_t>(n));
    p_ += n;
    return out;
  }
  void skip(uint32_t wireType) {
    switch (wireType) {
      case 0: varint(); break;
      case 1: advance(8); break;
      case 2: bytes(); break;
      case 5: advance(4); break;
      default: bad_ = true;
    }
  }

 private:
  void advance(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) {
      bad_ = true;
      return;
    }
    p_ += n;
  }
  const char* p_;
  const char* end_;
  bool bad_ = false;
};

struct Node {
  std::vector<std::string> inputs, outputs;
  std::string opType, domain;
  std::map<std::string, int64_t> intAttrs;
};

// AttributeProto: name = 1, i = 3.
void readAttribute(std::string_view bytes, Node& node) {
  WireReader r(bytes);
  std::string name;
  std::optional<int64_t> value;
  uint32_t field = 0, wire = 0;
  while (r.next(field, wire)) {
    if (field == 1 && wire == 2)
      name = std::string(r.bytes());
    else if (field == 3 && wire == 0)
      value = static_cast<int64_t>(r.varint());
    else
      r.skip(wire);
  }
  if (!r.bad() && value) node.intAttrs[name] = *value;
}

// NodeProto: input = 1, output = 2, op_type = 4, attribute = 5, domain = 7.
Node readNode(std::string_view bytes) {
  WireReader r(bytes);
  Node n;
  uint32_t field = 0, wire = 0;
  while (r.next(field, wire)) {
    if (wire != 2) {
      r.skip(wire);
      continue;
    }
    const std::string_view v = r.bytes();
    if (field == 1)
      n.inputs.emplace_back(v);
    else if (field == 2)
      n.outputs.emplace_back(v);
    else if (field == 4)
      n.opType = std::string(v);
    else if (field == 5)
      readAttribute(v, n);
    else if (field == 7)
      n.domain = std::string(v);
  }
  return n;
}

// ModelProto.graph = 7; GraphProto.node = 1.
std::vector<Node> readNodes(const std::string& model) {
  std::vector<Node> nodes;
  WireReader r(model);
  uint32_t field = 0, wire = 0;
  while (r.next(field, wire)) {
    if (field != 7 || wire != 2) {
      r.skip(wire);
      continue;
    }
    WireReader g(r.bytes());
    while (g.next(field, wire)) {
      if (field == 1 && wire == 2)
        nodes.push_back(readNode(g.bytes()));
      else
        g.skip(wire);
    }
  }
  return nodes;
}

bool isOnnxDomain(const std::string& d) {
  return d.empty() || d == "ai.onnx";
}

// How far back from the loss the search goes: the loss op itself is normally its producer or a
// reduction / scale away from it.
constexpr int kMaxDepth = 6;

}  // namespace

std::optional<ClassificationHead> findClassificationHead(const std::string& modelBytes,
                                                         const TensorId& loss) {
  const std::vector<Node> nodes = readNodes(modelBytes);
  std::map<std::string, const Node*> producer;
  for (const auto& n : nodes) {
    for (const auto& o : n.outputs) producer[o] = &n;
  }
  std::optional<ClassificationHead> found;
  std::set<const Node*> seen;
  std::deque<std::pair<std::string, int>> queue{{loss, 0}};
  while (!queue.empty()) {
    const auto [tensor, depth] = queue.front();
    queue.pop_front();
    const auto it = producer.find(tensor);
    if (it == producer.end() || !seen.insert(it->second).second) continue;
    const Node& n = *it->second;
    const bool onnxLoss = isOnnxDomain(n.domain) && (n.opType == "SoftmaxCrossEntropyLoss" ||
                                                     n.opType == "NegativeLogLikelihoodLoss");
    const bool graphcoreNll = n.domain == "ai.graphcore" && n.opType == "Nll";
    if ((onnxLoss || graphcoreNll) && n.inputs.size() >= 2) {
      if (found) return std::nullopt;  // two classification losses: which accuracy?
      ClassificationHead h{n.opType, n.inputs[0], n.inputs[1], std::nullopt};
      const auto ignore = n.intAttrs.find(onnxLoss ? "ignore_index" : "ignoreIndex");
      if (ignore != n.intAttrs.end()) h.ignoreIndex = ignore->second;
      found = h;
      continue;
    }
    if (depth + 1 >= kMaxDepth) continue;
    for (const auto& in : n.inputs) {
      if (!in.empty()) queue.emplace_back(in, depth + 1);
    }
  }
  return found;
}

}  // namespace xtrain::tools
