// Einsum: canonical equations (ellipsis, implicit output), forward against a double-precision loop
// over every label, both kernel paths (batched matmul and loop nest), gradients (GeneralEinsum)
// against finite differences, errors.
#include <gtest/gtest.h>

#include <map>

#include "testing/op_testing.hpp"

namespace xtrain::testing {
namespace {

// Evaluates an explicit equation of letters ("ij,jk->ik") in double, broadcasting size-1
// dimensions.
HostTensor einsumRef(const std::string& eq, const std::vector<HostTensor>& xs) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string lhs = eq.substr(0, arrow);
  size_t start = 0;
  for (;;) {
    const size_t c = lhs.find(',', start);
    terms.push_back(lhs.substr(start, c - start));
    if (c == std::string::npos) break;
    start = c + 1;
  }
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t k = 0; k < terms.size(); ++k) {
    for (size_t p = 0; p < terms[k].size(); ++p) {
      size[terms[k][p]] = std::max(size[terms[k][p]], xs[k].shape()[p]);
    }
  }
  std::vector<char> labels;
  for (const auto& [c, s] : size) labels.push_back(c);
  Shape os;
  for (char c : out) os.push_back(size[c]);
  std::vector<double> acc(static_cast<size_t>(shapeNelms(os)), 0.0);
  std::map<char, int64_t> at;
  int64_t total = 1;
  for (char c : labels) total *= size[c];
  for (int64_t i = 0; i < total; ++i) {
    int64_t r = i;
    for (size_t l = labels.size(); l-- > 0;) {
      at[labels[l]] = r % size[labels[l]];
      r /= size[labels[l]];
    }
    double p = 1;
    for (size_t k = 0; k < terms.size(); ++k) {
      int64_t off = 0;
      for (size_t q = 0; q < terms[k].size(); ++q) {
        const int64_t d = xs[k].shape()[q];
        off = off * d + (d == 1 ? 0 : at[terms[k][q]]);
      }
      p *= xs[k].getAsDouble(off);
    }
    int64_t o = 0;
    for (char c : out) o = o * size[c] + at[c];
    acc[static_cast<size_t>(o)] += p;
  }
  HostTensor y(TensorInfo(DataType::FLOAT, os));
  for (int64_t i = 0; i < y.nelms(); ++i) y.setFromDouble(i, acc[static_cast<size_t>(i)]);
  return y;
}

struct Case {
  std::string equation;   // as ONNX gives it
  std::string canonical;  // what canonicalize should make of it (for the reference)
  std::vector<Shape> shapes;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"ij,jk->ik", "ij,jk->ik", {{3, 4}, {4, 5}}},
      {"ij,jk", "ij,jk->ik", {{3, 4}, {4, 5}}},
      {"bij,bjk->bik", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}},
      {"bhqd,bhkd->bhqk", "bhqd,bhkd->bhqk", {{2, 2, 3, 4}, {2, 2, 5, 4}}},
      {"bhqk,bhkd->bqhd", "bhqk,bhkd->bqhd", {{2, 3, 4, 5}, {2, 3, 5, 2}}},
      {"...ij,...jk->...ik", "Aij,Ajk->Aik", {{2, 3, 4}, {1, 4, 2}}},
      {"...ij,jk", "Aij,jk->Aik", {{2, 3, 4}, {4, 5}}},
      {"i,i->", "i,i->", {{6}, {6}}},
      {"i,j->ij", "i,j->ij", {{3}, {4}}},
      {"ij->ji", "ij->ji", {{3, 4}}},
      {"ii->i", "ii->i", {{4, 4}}},
      {"ii", "ii->", {{4, 4}}},
      {"ijk->", "ijk->", {{2, 3, 4}}},
      {"ij,ij->ij", "ij,ij->ij", {{3, 4}, {3, 4}}},
      {"ij,ij->ij", "ij,ij->ij", {{1, 4}, {3, 1}}},
      {"aB,c", "aB,c->Bac", {{2, 3}, {4}}},
      {"ij...", "ijA->Aij", {{2, 3, 5}}},
      {"ij,jk,kl->il", "ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}},
      {"bij,j->bi", "bij,j->bi", {{2, 3, 4}, {4}}},
      {"ij,jk->", "ij,jk->", {{3, 4}, {4, 5}}},
      {"ik,k->i", "ik,k->i", {{3, 4}, {4}}},
      {"iij,jk->ik", "iij,jk->ik", {{3, 3, 2}, {2, 4}}},
      {"Ba,aB->a", "Ba,aB->a", {{3, 4}, {4, 3}}},
      {"b...,b...->...", "bA,bA->A", {{3, 4}, {3, 1}}},
      {"...", "->", {{}}},
      {"i...->...", "iAB->AB", {{2, 3, 4}}},
      {"...i,...i,i->...", "Ai,Ai,i->A", {{3, 4}, {1, 4}, {4}}},
      {"ab,bc,cd,d->ad", "ab,bc,cd,d->ad", {{2, 3}, {3, 4}, {4, 2}, {2}}},
      {"ii,ij,jk->k", "ii,ij,jk->k", {{3, 3}, {3, 2}, {2, 4}}},
  };
  return c;
}

TEST(EinsumOp, ForwardMatchesReferenceForEveryKindOfEquation) {
  uint64_t seed = 1;
  for (const Case& c : cases()) {
    std::vector<HostTensor> xs;
    for (const Shape& s : c.shapes) xs.push_back(randomTensor(s, seed++));
    std::string canonical;
    auto out = runForward(
        [&](ir::Graph& g, auto in) {
          auto outs =
              addOp(g, "Einsum", in, attrs({{"equation", c.equation}}), 1, ir::kOnnxDomain, 12);
          canonical = g.op(g.tensor(outs[0]).producer).attrs.getString("equation");
          return outs;
        },
        xs);
    EXPECT_EQ(canonical, c.canonical) << c.equation;
    EXPECT_TRUE(allClose(out[0], einsumRef(c.canonical, xs), 1e-5, 1e-5)) << c.equation;
  }
}

TEST(EinsumOp, GradientsMatchFiniteDifferences) {
  uint64_t seed = 100;
  for (const Case& c : cases()) {
    std::vector<HostTensor> xs;
    for (const Shape& s : c.shapes) xs.push_back(randomTensor(s, seed++));
    SCOPED_TRACE(c.equation);
    expectGradientsMatch(
        [&](ir::Graph& g, auto in) {
          return addOp(g, "Einsum", in, attrs({{"equation", c.equation}}), 1, ir::kOnnxDomain, 12);
        },
        xs);
  }
}

TEST(EinsumOp, SecondOrderThroughGeneralEinsum) {
  // The gradient of "ii->i" writes a diagonal; its own gradient reads it back.
  HostTensor dy = randomTensor({4}, 3);
  expectGradientsMatch(
      [](ir::Graph& g, auto in) {
        return addOp(g, "GeneralEinsum", in,
                     attrs({{"equation", std::string("i->ii")}, {"shape", Shape{4, 4}}}), 1,
                     ir::kXtrainDomain);
      },
      {dy});
  auto out = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "GeneralEinsum", in,
                     attrs({{"equation", std::string("i->ij")}, {"shape", Shape{4, 3}}}), 1,
                     ir::kXtrainDomain);
      },
      {dy});
  for (int64_t i = 0; i < 12; ++i) EXPECT_EQ(out[0].getAsDouble(i), dy.getAsDouble(i / 3));
}

TEST(EinsumOp, LargeMatMulPathAgreesWithLoopPath) {
  // "ik,kj->ij" goes through oneDNN; "ik,kj,j->ij" (three operands) through the loop nest.
  HostTensor a = randomTensor({37, 61}, 1), b = randomTensor({61, 29}, 2);
  HostTensor ones(TensorInfo(DataType::FLOAT, {29}));
  for (auto& v : ones.span<float>()) v = 1.0f;
  auto fast = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Einsum", {in[0], in[1]}, attrs({{"equation", std::string("ik,kj->ij")}}),
                     1, ir::kOnnxDomain, 12);
      },
      {a, b, ones});
  auto loop = runForward(
      [](ir::Graph& g, auto in) {
        return addOp(g, "Einsum", in, attrs({{"equation", std::string("ik,kj,j->ij")}}), 1,
                     ir::kOnnxDomain, 12);
      },
      {a, b, ones});
  EXPECT_TRUE(allClose(fast[0], einsumRef("ik,kj->ij", {a, b}), 1e-4, 1e-5));
  EXPECT_TRUE(allClose(loop[0], fast[0], 1e-4, 1e-5));
}

TEST(EinsumOp, Errors) {
  auto einsum = [](const std::string& eq, const std::vector<Shape>& shapes) {
    std::vector<HostTensor> xs;
    for (const Shape& s : shapes) xs.push_back(randomTensor(s, 1));
    runForward(
        [&](ir::Graph& g, auto in) {
          return addOp(g, "Einsum", in, attrs({{"equation", eq}}), 1, ir::kOnnxDomain, 12);
        },
        xs);
  };
  expectError(
      [&] {
        einsum("ij,jk->ik", {{3, 4}, {5, 6}});
      },
      {"Einsum 'op_under_test'", "label 'j' has size 4 in input 0", "5 in input 1"});
  expectError([&] { einsum("ij->ik", {{3, 4}}); }, {"Einsum", "output label 'k'", "in no input"});
  expectError([&] { einsum("ij,jk->ik", {{3, 4}}); }, {"Einsum", "2 input terms", "1 inputs"});
  expectError([&] { einsum("ijk->i", {{3, 4}}); }, {"Einsum", "term 'ijk'", "rank 2"});
  expectError([&] { einsum("ij->ii", {{3, 4}}); }, {"Einsum", "output label 'i' repeats"});
  expectError([&] { einsum("i$->i", {{3, 4}}); }, {"Einsum", "invalid character '$'"});
  expectError([&] { einsum("i..j->i", {{3, 4}}); }, {"Einsum", "not one '...'"});
  expectError(
      [&] {
        runForward(
            [](ir::Graph& g, auto in) {
              return addOp(g, "Einsum", in, attrs({{"equation", std::string("i->i")}}));
            },
            {HostTensor::fromVector<int64_t>({2}, {1, 2})});
      },
      {"Einsum", "only FLOAT and FLOAT16"});
}

}  // namespace
}  // namespace xtrain::testing
