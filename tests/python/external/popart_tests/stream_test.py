# Copyright (c) 2019 Graphcore Ltd. All rights reserved.
#
# Copied from https://github.com/graphcore/popart/blob/d2f20d78db91f62a22dc39470e294b0d987055c5/tests/integration/stream_test.py
# under the MIT licence (../LICENSE.graphcore-popart). Changed for xtrain (tests/python/test_external.py):
# - `import popart` -> `import xtrain as popart`
# - `test_util` is xtrain's own stand-in (test_util.py here), not PopART's
#
import numpy as np
import xtrain as popart
import test_util as tu


def test_stream_on_off():

    builder = popart.Builder()
    shape = popart.TensorInfo("FLOAT16", [2])

    i1 = builder.addInputTensor(shape)
    i2 = builder.addInputTensor(shape)
    o = builder.aiOnnx.add([i1, i2])
    builder.addOutputTensor(o)

    proto = builder.getModelProto()

    dataFlow = popart.DataFlow(
        1,
        {
            i1: popart.AnchorReturnType("All"),
            i2: popart.AnchorReturnType("All"),
            o: popart.AnchorReturnType("All"),
        },
    )

    with tu.create_test_device() as device:
        session = popart.InferenceSession(
            fnModel=proto, dataFlow=dataFlow, deviceInfo=device
        )

        session.prepareDevice()

        anchors = session.initAnchorArrays()

        inputs = {
            i1: np.array([1.0, 3.0], dtype=np.float16),
            i2: np.array([7.0, 8.0], dtype=np.float16),
        }
        stepio = popart.PyStepIO(inputs, anchors)

        session.run(stepio)

        # confirm that writing device-to-host of a Stream Tensor returns correctly (unchanged)
        assert np.allclose(anchors[i1], np.array([1.0, 3.0], dtype=np.float16))
        assert np.allclose(anchors[i2], np.array([7.0, 8.0], dtype=np.float16))
