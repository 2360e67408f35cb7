# graphcore_builder_test.cpp reads the nodes the Builder writes with ONNX's protobuf classes.
target_link_libraries(test_${_name} PRIVATE onnx onnx_proto protobuf::libprotobuf)
