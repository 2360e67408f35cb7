// PopART's GraphTransformer: edits of an ONNX model before a session is made from it (element
// types a model was exported with and xtrain or the user does not want, initializers to make
// constant, unused inputs, BatchNormalization's training outputs, external data).
//
//   xtrain::GraphTransformer gt("model.onnx");   // a file, or the serialized ModelProto
//   gt.convertINT64ToINT32();
//   gt.convertAllFixedPointInitializersToConstants();
//   auto session = xtrain::TrainingSession::createFromOnnxModel(gt.getModelProto(), ...);
//
// Each convert<A>To<B> changes every A of the model to B: the tensors in initializers and in node
// attributes (Constant's value, ConstantOfShape's), and the element types of the graph's inputs,
// outputs and value_info, subgraphs included. A value B cannot hold is an error naming the tensor
// (INT64 to INT32 clips instead with clip = true), as is a tensor whose data is external. The
// methods throw xtrain::error with PopART's messages; a failed call leaves the model unchanged.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "xtrain/api.hpp"

namespace xtrain {

class XTRAIN_API GraphTransformer {
 public:
  // A path to an ONNX file, or the bytes of a ModelProto (as Builder::createFromOnnxModel).
  explicit GraphTransformer(const std::string& modelProtoOrFilename);
  ~GraphTransformer();
  GraphTransformer(const GraphTransformer&) = delete;
  GraphTransformer& operator=(const GraphTransformer&) = delete;

  // The edited model, serialized.
  std::string getModelProto() const;

  // Graph inputs (and their initializers) that no node reads are removed.
  void removeUnusedInputs();
  // BatchNormalization nodes get the five outputs of their training form.
  void prepareNodesForTraining();

  void convertFloatsToHalfs();
  void convertDoublesToHalfs();
  void convertDoublesToFloats();
  void convertBFloats16ToFloat32();
  void convertUINT8ToINT32();
  void convertUINT16ToINT32();
  void convertINT8ToINT32();
  void convertINT16ToINT32();
  void convertINT64ToINT32(bool clip = false);

  // The initializers `ids` become Constant nodes (and leave the graph's inputs).
  void convertInitializersToConstants(const std::vector<std::string>& ids);
  // Every initializer of an integer or BOOL type becomes a Constant node.
  void convertAllFixedPointInitializersToConstants();
  // Builder::saveInitializersExternally's edit.
  void saveInitializersExternally(const std::vector<std::string>& ids, const std::string& filename);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace xtrain
