// The op builders' subgraph ops, with PopART's names and keyword arguments:
// aiGraphcore.call(args, num_outputs, callee, debugName), aiOnnx.logical_if(args, num_outputs,
// else_branch, then_branch, name), aiOnnx.loop(args, num_outputs, body, debugContext) and
// aiOnnx.scan(args, num_outputs, body, num_scan_inputs, scan_input_axes, scan_input_directions,
// scan_output_axes, scan_output_directions, debugContext) (the opset 9 form), and
// aiGraphcore.packedDataBlock(args, maxSequenceLengths, resultSize, callbackBatchSize, callback,
// debugContext) and aiGraphcore.copyvarupdate(args, debugContext).
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "builder_subgraph.hpp"
#include "xtrain/builder_opset_additions.hpp"

namespace py = pybind11;

namespace xtrain::python {

void bindSubgraphOps(py::module_& m) {
  using Ids = std::vector<TensorId>;
  using Ints = std::vector<int64_t>;
  auto onnx = py::reinterpret_borrow<py::class_<AiOnnxOpset11>>(m.attr("AiOnnxOpset11"));
  onnx.def(
      "logical_if",
      [](AiOnnxOpset11& o, const Ids& args, unsigned numOutputs, py::handle elseBranch,
         py::handle thenBranch, const std::string& name) {
        return o.logical_if(args, numOutputs,
                            coreBuilderOf(elseBranch, "aiOnnx.logical_if: else_branch"),
                            coreBuilderOf(thenBranch, "aiOnnx.logical_if: then_branch"), name);
      },
      py::arg("args"), py::arg("num_outputs"), py::arg("else_branch"), py::arg("then_branch"),
      py::arg("name") = "");
  onnx.def(
      "loop",
      [](AiOnnxOpset11& o, const Ids& args, unsigned numOutputs, py::handle body,
         const std::string& d) {
        return o.loop(args, numOutputs, coreBuilderOf(body, "aiOnnx.loop: body"), d);
      },
      py::arg("args"), py::arg("num_outputs"), py::arg("body"), py::arg("debugContext") = "");
  onnx.def(
      "scan",
      [](AiOnnxOpset11& o, const Ids& args, unsigned numOutputs, py::handle body,
         int64_t numScanInputs, const Ints& inAxes, const Ints& inDirections, const Ints& outAxes,
         const Ints& outDirections, const std::string& d) {
        return o.scan(args, numOutputs, coreBuilderOf(body, "aiOnnx.scan: body"), numScanInputs,
                      inAxes, inDirections, outAxes, outDirections, d);
      },
      py::arg("args"), py::arg("num_outputs"), py::arg("body"), py::arg("num_scan_inputs"),
      py::arg("scan_input_axes") = Ints{}, py::arg("scan_input_directions") = Ints{},
      py::arg("scan_output_axes") = Ints{}, py::arg("scan_output_directions") = Ints{},
      py::arg("debugContext") = "");
  auto graphcore =
      py::reinterpret_borrow<py::class_<AiGraphcoreOpset1>>(m.attr("AiGraphcoreOpset1"));
  graphcore.def(
      "call",
      [](AiGraphcoreOpset1& o, const Ids& args, unsigned numOutputs, py::handle callee,
         const std::string& debugName) {
        return o.call(args, numOutputs, coreBuilderOf(callee, "aiGraphcore.call: callee"),
                      debugName);
      },
      py::arg("args"), py::arg("num_outputs"), py::arg("callee"), py::arg("debugName") = "");
  graphcore.def(
      "packedDataBlock",
      [](AiGraphcoreOpset1& o, const Ids& args, const Ints& maxSequenceLengths, int64_t resultSize,
         int64_t callbackBatchSize, py::handle callback, const std::string& d) {
        return AiGraphcoreOpset1Additions(o).packedDataBlock(
            args, maxSequenceLengths, resultSize, callbackBatchSize,
            coreBuilderOf(callback, "aiGraphcore.packedDataBlock: callback"), d);
      },
      py::arg("args"), py::arg("maxSequenceLengths"), py::arg("resultSize"),
      py::arg("callbackBatchSize"), py::arg("callback"), py::arg("debugContext") = "");
  graphcore.def(
      "copyvarupdate",
      [](AiGraphcoreOpset1& o, const Ids& args, const std::string& d) {
        return AiGraphcoreOpset1Additions(o).copyvarupdate(args, d);
      },
      py::arg("args"), py::arg("debugContext") = "");
}

}  // namespace xtrain::python
