// Reading checkpoints: views of one inspection (inspection.hpp) at the depth each caller needs.
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/inspection.hpp"

namespace xtrain::checkpoint {

Contents read(const std::string& path) {
  Inspection inspection = inspect(path, Depth::Data);
  // Only a checkpoint found sound throughout is returned: nothing is half-loaded.
  throwIfProblems(inspection);
  return Contents{std::move(inspection.attributes), std::move(inspection.values)};
}

Attributes readAttributes(const std::string& path) {
  Inspection inspection = inspect(path, Depth::Attributes);
  throwIfProblems(inspection);
  return std::move(inspection.attributes);
}

std::vector<std::string> verify(const std::string& path) {
  return inspect(path, Depth::Checksums).problems;
}

std::vector<DatasetInfo> listDatasets(const std::string& path) {
  Inspection inspection = inspect(path, Depth::Structure);
  throwIfProblems(inspection);
  return std::move(inspection.datasets);
}

}  // namespace xtrain::checkpoint
