# Copyright (c) 2018 Graphcore Ltd. All rights reserved.
#
# Copied from https://github.com/graphcore/popart/blob/d2f20d78db91f62a22dc39470e294b0d987055c5/docs/popart/files/simple_addition.py
# under the MIT licence (../LICENSE.graphcore-popart). Changed for xtrain (tests/python/test_external.py):
# - `import popart` -> `import xtrain as popart`
#
import numpy as np
import xtrain as popart

# Create a builder and construct a graph
builder = popart.Builder()

data_shape = popart.TensorInfo("FLOAT", [1])

a = builder.addInputTensor(data_shape)
b = builder.addInputTensor(data_shape)

o = builder.aiOnnx.add([a, b])

builder.addOutputTensor(o)

proto = builder.getModelProto()

# Describe how to run the model
dataFlow = popart.DataFlow(1, {o: popart.AnchorReturnType("All")})

# Create a session to compile and execute the graph
session = popart.InferenceSession(
    fnModel=proto,
    dataFlow=dataFlow,
    deviceInfo=popart.DeviceManager().createIpuModelDevice({}),
)

# Compile graph
session.prepareDevice()

# Create buffers to receive results from the execution
anchors = session.initAnchorArrays()

# Generate some random input data
data_a = np.random.rand(1).astype(np.float32)
data_b = np.random.rand(1).astype(np.float32)

stepio = popart.PyStepIO({a: data_a, b: data_b}, anchors)
session.run(stepio)

print("Input a is " + str(data_a))
print("Input b is " + str(data_b))
print("Result is " + str(anchors[o]))
