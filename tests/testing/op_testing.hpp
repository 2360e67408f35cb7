// Helpers for op tests: run a small graph forward, and check its gradients against central finite
// differences.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "common/host_tensor.hpp"
#include "ir/graph.hpp"
#include "testing/error_testing.hpp"

namespace xtrain::testing {

// Builds the ops under test from the given input tensor ids; returns the outputs to check.
using BuildFn =
    std::function<std::vector<TensorId>(ir::Graph& graph, const std::vector<TensorId>& inputs)>;

// Adds one op (ai.onnx unless a domain is given) and returns its outputs: the usual BuildFn body.
std::vector<TensorId> addOp(ir::Graph& graph, const std::string& type, std::vector<TensorId> inputs,
                            Attributes attrs = {}, int numOutputs = 1,
                            const std::string& domain = ir::kOnnxDomain, int opset = 13);

// Inputs of floating type become Variables (they get gradients), others Consts. Returns the
// outputs' values.
std::vector<HostTensor> runForward(const BuildFn& build, const std::vector<HostTensor>& inputs);

struct GradCheckOptions {
  double eps = 1e-3;        // finite-difference step
  double rtol = 2e-2;       // relative tolerance between analytic and numeric gradient
  double atol = 2e-3;       // absolute tolerance
  std::vector<size_t> wrt;  // input indices to check; empty: every floating-point input
  uint64_t seed = 7;        // seed of the random projection of the outputs
};

// Builds loss = sum_k sum(out_k * R_k) with fixed random R_k, differentiates it with autodiff, and
// compares the gradient of every checked input with central differences of the loss. Reports
// mismatches with gtest.
void expectGradientsMatch(const BuildFn& build, const std::vector<HostTensor>& inputs,
                          const GradCheckOptions& options = {});

// Attributes from a list: attrs({{"axis", int64_t{1}}, {"epsilon", 1e-5f}}).
inline Attributes attrs(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attributes a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}

// Uniform random FLOAT tensor in [lo, hi), deterministic in seed.
HostTensor randomTensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// |a - e| <= atol + rtol * |e| elementwise, same shape and type; the message names the first
// mismatches.
::testing::AssertionResult allClose(const HostTensor& actual, const HostTensor& expected,
                                    double rtol = 1e-5, double atol = 1e-6);

}  // namespace xtrain::testing
