#include "data_source.hpp"

#include <cstring>

namespace xtrain::tools {

namespace {

class Hdf5Source : public DataSource {
 public:
  Hdf5Source(std::unique_ptr<checkpoint::DatasetReader> reader,
             const std::map<TensorId, TensorInfo>& inputs)
      : reader_(std::move(reader)) {
    const std::string& path = reader_->path();
    for (const auto& [id, info] : inputs) {
      const TensorInfo file = reader_->info(id);  // throws naming a missing dataset
      Shape sample(file.shape().begin() + 1, file.shape().end());
      Shape want(info.shape().begin() + 1, info.shape().end());
      if (sample != want) {
        throw error(
            "dataset '{}' in '{}' has samples of shape {}, but the model's input '{}' is {} "
            "(expected samples of shape {})",
            id, path, shapeToString(sample), id, info.toString(), shapeToString(want));
      }
      if (isFloatingPoint(file.dataType()) != isFloatingPoint(info.dataType())) {
        throw error("dataset '{}' in '{}' holds {} but the model's input '{}' is {}", id, path,
                    dataTypeName(file.dataType()), id, dataTypeName(info.dataType()));
      }
      const int64_t n = file.shape()[0];
      if (samples_ >= 0 && n != samples_) {
        throw error("datasets in '{}' disagree on the number of samples: '{}' has {}, others {}",
                    path, id, n, samples_);
      }
      samples_ = n;
    }
    if (samples_ <= 0) throw error("data file '{}' has no samples", path);
  }
  int64_t numSamples() const override { return samples_; }
  void fill(const TensorId& input, const TensorInfo& sampleInfo,
            const std::vector<int64_t>& samples, void* dst) override {
    reader_->readSamples(input, samples, sampleInfo.dataType(), dst);
  }

 private:
  std::unique_ptr<checkpoint::DatasetReader> reader_;
  int64_t samples_ = -1;
};

class ExampleSource : public DataSource {
 public:
  ExampleSource(SyntheticClassification data, TensorId x, TensorId labels)
      : data_(std::move(data)), x_(std::move(x)), labels_(std::move(labels)) {}
  int64_t numSamples() const override { return data_.samples; }
  void fill(const TensorId& input, const TensorInfo&, const std::vector<int64_t>& samples,
            void* dst) override {
    if (input == x_) {
      auto* out = static_cast<float*>(dst);
      for (size_t i = 0; i < samples.size(); ++i) {
        std::memcpy(out + i * static_cast<size_t>(data_.features),
                    data_.x.data() + samples[i] * data_.features,
                    static_cast<size_t>(data_.features) * sizeof(float));
      }
    } else if (input == labels_) {
      auto* out = static_cast<int32_t*>(dst);
      for (size_t i = 0; i < samples.size(); ++i)
        out[i] = data_.labels[static_cast<size_t>(samples[i])];
    } else {
      throw error("the built-in example has no input '{}'", input);
    }
  }

 private:
  SyntheticClassification data_;
  TensorId x_, labels_;
};

}  // namespace

std::unique_ptr<DataSource> openHdf5Source(const std::string& path,
                                           const std::map<TensorId, TensorInfo>& inputs) {
  return openHdf5Source(std::make_unique<checkpoint::DatasetReader>(
                            path, checkpoint::DatasetReader::residentBytesFromEnvironment()),
                        inputs);
}

std::unique_ptr<DataSource> openHdf5Source(std::unique_ptr<checkpoint::DatasetReader> reader,
                                           const std::map<TensorId, TensorInfo>& inputs) {
  return std::make_unique<Hdf5Source>(std::move(reader), inputs);
}

std::unique_ptr<DataSource> exampleSource(SyntheticClassification data, TensorId x,
                                          TensorId labels) {
  return std::make_unique<ExampleSource>(std::move(data), std::move(x), std::move(labels));
}

}  // namespace xtrain::tools
