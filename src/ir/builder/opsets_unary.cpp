// The Builder methods of the elementwise and layout ops of src/ir/ops/math_unary_ops.cpp,
// bitwise_ops.cpp, depth_space_ops.cpp and lrn_ops.cpp, with PopART's names and defaults. Each is
// one BuilderImpl::node call; the op registry gives the semantics, so only what the ONNX checker
// cannot name well (an enumerated string, a positive integer) is checked here.
#include <string>

#include "ir/builder/builder_impl.hpp"

namespace xtrain {

namespace {

void checkBlocksize(const char* method, int64_t blocksize) {
  if (blocksize < 1) {
    throw error("Builder: {}: blocksize must be a positive integer, got {}", method, blocksize);
  }
}

void checkMode(const char* method, const std::string& mode) {
  if (mode != "DCR" && mode != "CRD") {
    throw error("Builder: {}: mode '{}' is not one of [\"DCR\", \"CRD\"]", method, mode);
  }
}

}  // namespace

#define XT_UNARY(Class, method, type, domain)                                        \
  TensorId Class::method(const std::vector<TensorId>& args, const std::string& dc) { \
    return impl_->node(#method, type, args, 1, 1, 1, {}, dc, domain)[0];             \
  }
#define XT_BINARY(Class, method, type, domain)                                       \
  TensorId Class::method(const std::vector<TensorId>& args, const std::string& dc) { \
    return impl_->node(#method, type, args, 2, 2, 1, {}, dc, domain)[0];             \
  }

XT_UNARY(AiOnnxOpset11, asin, "Asin", "")
XT_UNARY(AiOnnxOpset11, acos, "Acos", "")
XT_UNARY(AiOnnxOpset11, atan, "Atan", "")
XT_UNARY(AiOnnxOpset11, sinh, "Sinh", "")
XT_UNARY(AiOnnxOpset11, cosh, "Cosh", "")
XT_UNARY(AiOnnxOpset11, tan, "Tan", "")
XT_UNARY(AiOnnxOpset11, asinh, "Asinh", "")
XT_UNARY(AiOnnxOpset11, acosh, "Acosh", "")
XT_UNARY(AiOnnxOpset11, atanh, "Atanh", "")
XT_UNARY(AiOnnxOpset11, round, "Round", "")
XT_UNARY(AiOnnxOpset11, isnan, "IsNaN", "")
XT_UNARY(AiGraphcoreOpset1, expm1, "Expm1", ir::kGraphcoreDomain)
XT_UNARY(AiGraphcoreOpset1, log1p, "Log1p", ir::kGraphcoreDomain)
XT_UNARY(AiGraphcoreOpset1, bitwisenot, "BitwiseNot", ir::kGraphcoreDomain)
XT_BINARY(AiGraphcoreOpset1, bitwiseand, "BitwiseAnd", ir::kGraphcoreDomain)
XT_BINARY(AiGraphcoreOpset1, bitwiseor, "BitwiseOr", ir::kGraphcoreDomain)
XT_BINARY(AiGraphcoreOpset1, bitwisexor, "BitwiseXor", ir::kGraphcoreDomain)
XT_BINARY(AiGraphcoreOpset1, bitwisexnor, "BitwiseXnor", ir::kGraphcoreDomain)

#undef XT_UNARY
#undef XT_BINARY

TensorId AiOnnxOpset11::isinf(const std::vector<TensorId>& args, int64_t detect_negative,
                              int64_t detect_positive, const std::string& dc) {
  return impl_->node("isinf", "IsInf", args, 1, 1, 1,
                     {{"detect_negative", detect_negative}, {"detect_positive", detect_positive}},
                     dc)[0];
}

TensorId AiOnnxOpset11::shrink(const std::vector<TensorId>& args, float bias, float lambd,
                               const std::string& dc) {
  if (!(lambd >= 0.0f)) throw error("Builder: shrink: lambd must be >= 0, got {}", lambd);
  return impl_->node("shrink", "Shrink", args, 1, 1, 1, {{"bias", bias}, {"lambd", lambd}}, dc)[0];
}

TensorId AiOnnxOpset11::lrn(const std::vector<TensorId>& args, int64_t size, float alpha,
                            float beta, float bias, const std::string& dc) {
  if (size < 1) throw error("Builder: lrn: size must be a positive integer, got {}", size);
  return impl_->node("lrn", "LRN", args, 1, 1, 1,
                     {{"size", size}, {"alpha", alpha}, {"beta", beta}, {"bias", bias}}, dc)[0];
}

TensorId AiOnnxOpset11::depthtospace(const std::vector<TensorId>& args, int64_t blocksize,
                                     const std::string& mode, const std::string& dc) {
  checkBlocksize("depthtospace", blocksize);
  checkMode("depthtospace", mode);
  return impl_->node("depthtospace", "DepthToSpace", args, 1, 1, 1,
                     {{"blocksize", blocksize}, {"mode", mode}}, dc)[0];
}

TensorId AiOnnxOpset11::spacetodepth(const std::vector<TensorId>& args, int64_t blocksize,
                                     const std::string& dc) {
  checkBlocksize("spacetodepth", blocksize);
  return impl_->node("spacetodepth", "SpaceToDepth", args, 1, 1, 1, {{"blocksize", blocksize}},
                     dc)[0];
}

TensorId AiGraphcoreOpset1::depthtospace(const std::vector<TensorId>& args, int64_t blocksize,
                                         const std::string& mode, const std::string& dc) {
  checkBlocksize("depthtospace", blocksize);
  checkMode("depthtospace", mode);
  return impl_->node("depthtospace", "DepthToSpace", args, 1, 1, 1,
                     {{"blocksize", blocksize}, {"mode", mode}}, dc, ir::kGraphcoreDomain)[0];
}

}  // namespace xtrain
