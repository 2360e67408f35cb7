"""The optimizers: PopART's dict-of-tuples constructors, insertSpecific, the getters, the enums,
ClipNormSettings, and errors that name the culprit."""
import unittest

import numpy as np

import xtrain as popart

F32 = 1e-6  # hyperparameters are float32


class OptimizerValueTest(unittest.TestCase):
    def test_constructors(self):
        v = popart.OptimizerValue()
        self.assertEqual((v.val(), v.isConst()), (0.0, True))
        v = popart.OptimizerValue(0.5)
        self.assertEqual((v.val(), v.isConst()), (0.5, True))
        v = popart.OptimizerValue(val=0.25, isConst=False)
        self.assertEqual((v.val(), v.isConst()), (0.25, False))
        v = popart.OptimizerValue((2.0, False))
        self.assertEqual((v.val(), v.isConst()), (2.0, False))
        self.assertEqual(popart.OptimizerValue(0.5, True), popart.OptimizerValue(0.5))
        self.assertNotEqual(popart.OptimizerValue(0.5, False), popart.OptimizerValue(0.5))
        self.assertEqual(repr(popart.OptimizerValue(0.5, False)), "OptimizerValue(0.5, False)")
        self.assertEqual(repr(popart.OptimizerValue(0.1)), "OptimizerValue(0.1, True)")
        self.assertEqual(repr(popart.OptimizerValue(1e-6)), "OptimizerValue(1e-06, True)")
        self.assertEqual(repr(popart.OptimizerValue(3)), "OptimizerValue(3.0, True)")
        with self.assertRaises(TypeError):
            popart.OptimizerValue("0.5")


SGD_DEFAULTS = {"learningRates": (0.1, False), "weightDecays": (0.0, True),
                "momentums": (0.0, True), "dampenings": (0.0, True),
                "velocityScalings": (1.0, True), "nesterov": (0.0, True)}


class SGDTest(unittest.TestCase):
    def check(self, opt, getter, expected, weight=None):
        m = getattr(opt, getter)()
        v = m.getDefault() if weight is None else m.get(weight)
        self.assertAlmostEqual(v.val(), expected[0], delta=F32, msg=getter)
        self.assertEqual(v.isConst(), expected[1], msg=getter)

    def test_defaults(self):
        opt = popart.SGD({})
        for getter, expected in SGD_DEFAULTS.items():
            self.check(opt, getter, expected)
        self.assertEqual(opt.getLossScalingVal(), 1.0)
        self.assertIsInstance(opt, popart.Optimizer)
        self.assertEqual(opt.type_s(), "SGD")

    def test_dict_round_trip(self):
        opt = popart.SGD({"defaultLearningRate": (0.01, False), "defaultWeightDecay": (1e-4, True),
                          "defaultMomentum": (0.9, True), "defaultDampening": (0.1, False),
                          "defaultVelocityScaling": (2.0, True), "lossScaling": (8.0, False),
                          "nesterov": (1.0, True)})
        self.check(opt, "learningRates", (0.01, False))
        self.check(opt, "weightDecays", (1e-4, True))
        self.check(opt, "momentums", (0.9, True))
        self.check(opt, "dampenings", (0.1, False))
        self.check(opt, "velocityScalings", (2.0, True))
        self.check(opt, "nesterov", (1.0, True))
        self.assertEqual(opt.getLossScalingVal(), 8.0)
        self.assertEqual(opt.lossScaling(), popart.OptimizerValue(8.0, False))
        self.assertTrue(opt.requiresVelocity())

    def test_insert_specific(self):
        opt = popart.SGD({"defaultLearningRate": (0.1, False), "defaultMomentum": (0.9, True)})
        opt.insertSpecific("w0", {"learningRate": (0.5, True), "momentum": (0.0, True)})
        self.assertTrue(opt.hasSpecific("w0"))
        self.assertFalse(opt.hasSpecific("w1"))
        self.check(opt, "learningRates", (0.5, True), "w0")
        self.check(opt, "momentums", (0.0, True), "w0")
        self.check(opt, "learningRates", (0.1, False), "w1")  # the default
        self.check(opt, "learningRates", (0.1, False))
        self.assertTrue(opt.learningRates().hasSpecific("w0"))
        values = opt.valuesOf("w0")
        self.assertEqual(sorted(values), sorted(opt.specificKeys()))
        self.assertEqual(values["learningRate"], popart.OptimizerValue(0.5, True))
        # The map is a snapshot taken by the getter.
        lrs = opt.learningRates()
        opt.insertSpecific("w1", {"learningRate": (0.3, True)})
        self.assertFalse(lrs.hasSpecific("w1"))
        self.assertTrue(opt.learningRates().hasSpecific("w1"))

    def test_nesterov_is_a_value_of_each_weight(self):
        # PopART's SGD: nesterov is an OptimizerValueMap with a default and insertSpecific values.
        opt = popart.SGD({"defaultMomentum": (0.9, True), "nesterov": (1.0, True)})
        opt.insertSpecific("w0", {"nesterov": (0.0, True)})
        opt.insertSpecific("w1", {"learningRate": (0.5, False)})
        self.check(opt, "nesterov", (1.0, True))
        self.check(opt, "nesterov", (0.0, True), "w0")
        self.check(opt, "nesterov", (1.0, True), "w1")  # a key not given keeps the default
        self.assertTrue(opt.nesterov().hasSpecific("w0"))
        self.assertIn("nesterov", opt.specificKeys())
        self.assertEqual(opt.valuesOf("w0")["nesterov"], popart.OptimizerValue(0.0, True))
        # PopART's programs also write the flag as (bool, bool).
        opt = popart.SGD({"defaultMomentum": (0.9, True), "nesterov": (True, True)})
        opt.insertSpecific("w0", {"nesterov": (False, True)})
        self.check(opt, "nesterov", (1.0, True))
        self.check(opt, "nesterov", (0.0, True), "w0")
        with self.assertRaisesRegex(TypeError, r"\['learningRate'\].*\(True, True\)"):
            opt.insertSpecific("w1", {"learningRate": (True, True)})  # only the flag is a bool
        # The keyword form takes a bool, a number or an OptimizerValue.
        self.check(popart.SGD(nesterov=popart.OptimizerValue(1.0, False)), "nesterov", (1.0, False))
        self.check(popart.SGD(nesterov=(1.0, True)), "nesterov", (1.0, True))
        self.check(popart.SGD(nesterov=False), "nesterov", (0.0, True))
        with self.assertRaisesRegex(ValueError, "'defaultNesterov'"):
            popart.SGD({"defaultNesterov": (1.0, True)})

    def test_unknown_keys(self):
        with self.assertRaisesRegex(ValueError, r"'defaultLR'.*defaultLearningRate.*nesterov"):
            popart.SGD({"defaultLR": (0.1, False)})
        opt = popart.SGD({})
        with self.assertRaisesRegex(ValueError, r"'w0'.*'lr'.*learningRate.*velocityScaling"):
            opt.insertSpecific("w0", {"lr": (0.1, True)})
        with self.assertRaisesRegex(ValueError, "defaultLearningRate"):
            opt.insertSpecific("w0", {"defaultLearningRate": (0.1, True)})

    def test_wrong_types(self):
        with self.assertRaisesRegex(TypeError, "defaultMomentum"):
            popart.SGD({"defaultMomentum": "0.9"})
        with self.assertRaisesRegex(TypeError, "defaultMomentum"):
            popart.SGD({"defaultMomentum": (0.9, 1)})
        with self.assertRaisesRegex(TypeError, "defaultMomentum"):
            popart.SGD({"defaultMomentum": (0.9, True, 1)})
        with self.assertRaisesRegex(TypeError, "dict"):
            popart.SGD([("defaultMomentum", (0.9, True))])
        with self.assertRaisesRegex(TypeError, "key"):
            popart.SGD({1: (0.9, True)})
        with self.assertRaisesRegex(TypeError, "learningRate"):
            popart.SGD({}).insertSpecific("w", {"learningRate": None})
        with self.assertRaisesRegex(TypeError, "clip_norm_settings"):
            popart.SGD({}, clip_norm_settings=[1.0])

    def test_values_accept_float_and_optimizer_value(self):
        opt = popart.SGD({"defaultLearningRate": 0.2,
                          "defaultMomentum": popart.OptimizerValue(0.5, False)})
        self.check(opt, "learningRates", (0.2, True))
        self.check(opt, "momentums", (0.5, False))

    def test_numpy_scalars(self):
        import numpy as np
        opt = popart.SGD({"defaultLearningRate": (np.float32(0.25), np.bool_(False)),
                          "defaultMomentum": np.float64(0.5)})
        self.check(opt, "learningRates", (0.25, False))
        self.check(opt, "momentums", (0.5, True))
        self.check(popart.SGD(np.float32(0.5)), "learningRates", (0.5, False))
        self.check(popart.ConstSGD(np.float32(0.5)), "learningRates", (0.5, True))
        with self.assertRaisesRegex(TypeError, "defaultMomentum"):
            popart.SGD({"defaultMomentum": (np.bool_(True), True)})

    def test_invalid_values_raise(self):
        with self.assertRaisesRegex(Exception, "momentum"):
            popart.SGD({"defaultMomentum": (1.5, True)})
        with self.assertRaisesRegex(Exception, "learning rate"):
            popart.SGD({"defaultLearningRate": (-1.0, True)})

    def test_keyword_constructor(self):
        opt = popart.SGD(defaultLearningRate=(0.05, False), defaultMomentum=0.9, nesterov=True,
                         lossScaling=(4.0, False))
        self.check(opt, "learningRates", (0.05, False))
        self.check(opt, "momentums", (0.9, True))
        self.check(opt, "nesterov", (1.0, True))
        self.assertEqual(opt.getLossScalingVal(), 4.0)
        self.check(popart.SGD(), "learningRates", (0.1, False))
        # The chapter's popart.SGD(stepLr) (a rate that updateOptimizerFromHost may change), and
        # C++'s argument order.
        self.check(popart.SGD(0.05), "learningRates", (0.05, False))
        self.check(popart.SGD(0.05), "weightDecays", (0.0, True))
        opt = popart.SGD((0.05, False), 0.001, 0.9)
        self.check(opt, "learningRates", (0.05, False))
        self.check(opt, "weightDecays", (0.001, True))
        self.check(opt, "momentums", (0.9, True))
        self.check(popart.SGD(nesterov=1), "nesterov", (1.0, True))  # an OptimizerValue, as in C++
        with self.assertRaisesRegex(TypeError, "nesterov"):
            popart.SGD(nesterov="yes")
        with self.assertRaisesRegex(TypeError, "defaultWeightDecay"):
            popart.SGD(defaultWeightDecay="x")

    def test_popart_keywords(self):
        clip = popart.ClipNormSettings.clipAllWeights(1.0)
        opt = popart.SGD({"defaultLearningRate": (0.1, True)}, clip_norm_settings=[clip],
                         accumulatorAndMomentum=popart.SGDAccumulatorAndMomentum.Separate,
                         debugContext="mysgd")
        self.assertEqual(opt.getClipNormSettings(), [clip])
        opt = popart.SGD(pyd={}, accumType="UNDEFINED", accl1Type=None)
        self.assertIsInstance(opt, popart.SGD)
        popart.SGD({}, accumType="FLOAT16", accl1Type=popart.DataType.FLOAT)
        with self.assertRaisesRegex(ValueError, "accumType=.*'FLOT'"):
            popart.SGD({}, accumType="FLOT")
        with self.assertRaisesRegex(popart.popart_exception, "accl1Type is INT32"):
            popart.SGD({}, accl1Type=popart.DataType.INT32)

    def test_const_sgd(self):
        clip = popart.ClipNormSettings.clipWeights(["w0", "w1"], 2.0)
        opt = popart.ConstSGD(0.01, weight_decay=0.001, loss_scaling=2.0,
                              clip_norm_settings=[clip])
        self.assertIsInstance(opt, popart.SGD)
        self.check(opt, "learningRates", (0.01, True))
        self.check(opt, "weightDecays", (0.001, True))
        self.check(opt, "momentums", (0.0, True))
        self.assertEqual(opt.getLossScalingVal(), 2.0)
        self.assertEqual(opt.getClipNormSettings(), [clip])
        self.check(popart.ConstSGD(learning_rate=0.5), "weightDecays", (0.0, True))
        with self.assertRaisesRegex(TypeError, "learning_rate"):
            popart.ConstSGD("0.1")


class SgdStateTypesTest(unittest.TestCase):
    """SGD's accumType and accl1Type are the storage types of its state (PopART's sgd.cpp):
    Separate keeps the accumulator Accum___<w> (accumType) and the velocity Accl1___<w>
    (accl1Type), each rounded when stored, the weight moving by the stored velocity; Combined keeps
    Accl___<w> in the weight's type whatever the types given."""

    X = np.array([[1000.3, 3.1, 0.3, 2.0], [0.0007, 0.2, 7.7, 2.0]], np.float32)

    def train(self, opt, steps=3):
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [4]), "x")
        w = b.addInitializedInputTensor(np.full(4, 5.0, np.float32), "w")
        loss = b.aiGraphcore.l1loss([b.aiOnnx.mul([w, x])], 1.0,
                                    reduction=popart.ReductionType.Sum)
        opts = popart.SessionOptions()
        opts.enableGradientAccumulation = True
        opts.accumulationFactor = 2
        s = popart.TrainingSession(b.getModelProto(), popart.DataFlow(1, {}), loss, opt,
                                   popart.DeviceManager().createCpuDevice(), userOptions=opts)
        s.prepareDevice()
        s.weightsFromHost()
        for _ in range(steps):
            s.run(popart.PyStepIO({x: self.X}, {}))
        s.weightsToHost()
        return s

    @staticmethod
    def sgd(mode, accum, accl1):
        return popart.SGD({"defaultLearningRate": (0.1, True), "defaultMomentum": (0.9, True)},
                          accumulatorAndMomentum=mode, accumType=accum, accl1Type=accl1)

    def test_separate_float16_state_of_a_float_weight(self):
        f16, f32 = np.float16, np.float32
        s = self.train(self.sgd(popart.SGDAccumulatorAndMomentum.Separate, "FLOAT16", "FLOAT16"))
        got = {"w": np.zeros(4, f32), "Accl1___w": np.zeros(4, f16)}
        s.readWeights(popart.PyWeightsIO(got))
        w, v = np.full(4, 5.0, f32), np.zeros(4, f16)
        for _ in range(3):
            g = np.sign(w * self.X) * self.X  # the L1 loss's gradient of each micro-batch
            acc = g[0].astype(f16)  # the accumulator holds each sum rounded
            acc = (acc.astype(f32) + g[1]).astype(f16)
            v = (f32(0.9) * v.astype(f32) + acc.astype(f32)).astype(f16)
            w = w - f32(0.1) * v.astype(f32)
        np.testing.assert_array_equal(got["Accl1___w"], v)
        np.testing.assert_array_equal(got["w"], w)
        # FLOAT state gives other numbers: the types are honoured.
        s32 = self.train(self.sgd(popart.SGDAccumulatorAndMomentum.Separate, "FLOAT", "FLOAT"))
        w32 = {"w": np.zeros(4, f32)}
        s32.readWeights(popart.PyWeightsIO(w32))
        self.assertFalse(np.array_equal(w32["w"], w))

    def test_combined_keeps_the_weight_type(self):
        s = self.train(self.sgd(popart.SGDAccumulatorAndMomentum.Combined, "FLOAT16", "FLOAT16"),
                       steps=1)
        got = {"Accl___w": np.zeros(4, np.float32)}
        s.readWeights(popart.PyWeightsIO(got))
        self.assertEqual(got["Accl___w"].dtype, np.float32)
        self.assertTrue(np.all(got["Accl___w"] != 0))
        with self.assertRaisesRegex(popart.popart_exception, "state layout is fixed"):
            s.updateOptimizerFromHost(
                self.sgd(popart.SGDAccumulatorAndMomentum.Separate, "FLOAT16", "FLOAT16"))


class NesterovPerWeightTrainingTest(unittest.TestCase):
    """A session whose weights differ in nesterov: after one step (whose gradients do not depend on
    the rules yet) each weight is as in a session where every weight has its value, so each
    follows its own rule. tests/session/sgd_rule_test.cpp checks several steps against the
    formula."""

    def train(self, opt):
        import numpy as np
        from python_testing import linear_model
        s = popart.TrainingSession(linear_model(), popart.DataFlow(1, {}), "loss", opt,
                                   popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        s.weightsFromHost()
        rng = np.random.RandomState(5)
        x = rng.rand(2, 4).astype(np.float32)
        t = rng.rand(2, 3).astype(np.float32)
        s.run(popart.PyStepIO({"x": x, "t": t}, {}))
        s.weightsToHost()
        w = {"w": np.zeros((4, 3), np.float32), "b": np.zeros(3, np.float32)}
        s.readWeights(popart.PyWeightsIO(w))
        return w

    def test_each_weight_follows_its_own_rule(self):
        import numpy as np

        def sgd(nesterov):
            return popart.SGD({"defaultLearningRate": (0.1, False), "defaultMomentum": (0.9, True),
                               "nesterov": (1.0 if nesterov else 0.0, True)})
        on, off = self.train(sgd(True)), self.train(sgd(False))
        self.assertFalse(np.array_equal(on["w"], off["w"]))  # the two rules differ here
        self.assertFalse(np.array_equal(on["b"], off["b"]))
        mixed = sgd(False)
        mixed.insertSpecific("w", {"nesterov": (1.0, True)})
        got = self.train(mixed)
        np.testing.assert_array_equal(got["w"], on["w"])
        np.testing.assert_array_equal(got["b"], off["b"])


class OneElementLossScalingTest(unittest.TestCase):
    """Loss scaling with a loss of one element that is not a scalar (ReduceSum keeps its dims:
    [1, 1]): the seed takes the loss's shape, and training equals that with the scalar loss.
    (The seed tensor was once registered with a moved-from, empty shape.)"""

    def step(self, keepdims):
        import numpy as np
        b = popart.Builder()
        x = b.addInputTensor(popart.TensorInfo("FLOAT", [2, 3]), "x")
        w = b.addInitializedInputTensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "w")
        loss = b.aiOnnx.reducesum([b.aiOnnx.matmul([x, w])], keepdims=keepdims)
        self.assertEqual(b.getTensorShape(loss), [1, 1] if keepdims else [])
        opt = popart.SGD({"defaultLearningRate": (0.1, False), "lossScaling": (200.0, False)})
        s = popart.TrainingSession(b.getModelProto(), popart.DataFlow(1, {}), loss, opt,
                                   popart.DeviceManager().createCpuDevice())
        s.prepareDevice()
        s.weightsFromHost()
        s.run(popart.PyStepIO({x: np.ones((2, 3), np.float32)}, {}))
        s.weightsToHost()
        got = {w: np.zeros((3, 4), np.float32)}
        s.readWeights(popart.PyWeightsIO(got))
        return got[w]

    def test_kept_dims_train_as_the_scalar(self):
        import numpy as np
        kept = self.step(1)
        np.testing.assert_array_equal(kept, self.step(0))
        # d sum(x @ w) / dw = 2 everywhere (two rows of ones), lr 0.1
        np.testing.assert_allclose(kept, np.arange(12, dtype=np.float32).reshape(3, 4) / 10 - 0.2,
                                   rtol=1e-6)


class ClipNormSettingsTest(unittest.TestCase):
    def test_round_trip(self):
        c = popart.ClipNormSettings.clipWeights(["a", "b"], 3.0)
        self.assertEqual((c.weightIds, c.maxNorm), (["a", "b"], 3.0))
        self.assertEqual(c.getMode(), popart.ClipNormSettings.Mode.ClipSpecifiedWeights)
        self.assertEqual(c, popart.ClipNormSettings(weightIds=["a", "b"], maxNorm=3.0))
        a = popart.ClipNormSettings.clipAllWeights(maxNorm=1.5)
        self.assertEqual((a.getWeightIds(), a.getMaxNorm()), ([], 1.5))
        self.assertEqual(a.getMode(), popart.ClipNormSettings.Mode.ClipAllWeights)
        self.assertEqual(repr(a), "ClipNormSettings.clipAllWeights(1.5)")
        self.assertEqual(repr(c), "ClipNormSettings.clipWeights(['a', 'b'], 3.0)")

    def test_errors(self):
        with self.assertRaises(TypeError):
            popart.ClipNormSettings.clipWeights("a", "x")
        all_ = popart.ClipNormSettings.clipAllWeights(1.0)
        some = popart.ClipNormSettings.clipWeights(["a"], 1.0)
        with self.assertRaisesRegex(Exception, "clipAllWeights"):
            popart.SGD({}, clip_norm_settings=[all_, some])
        with self.assertRaises(Exception):
            popart.SGD({}, clip_norm_settings=[popart.ClipNormSettings.clipAllWeights(-1.0)])


class AdamTest(unittest.TestCase):
    def test_defaults_and_dict(self):
        opt = popart.Adam({})
        self.assertEqual(opt.getMode(), popart.AdamMode.Adam)
        self.assertEqual(opt.getWeightDecayMode(), popart.WeightDecayMode.Decay)
        self.assertEqual(opt.type_s(), "Adam")
        expected = {"learningRates": (0.1, False), "weightDecays": (0.0, True),
                    "beta1s": (0.9, True), "beta2s": (0.999, True), "epss": (1e-6, True),
                    "maxWeightNorms": (10.0, True)}
        for getter, (val, const) in expected.items():
            with self.subTest(getter=getter):
                v = getattr(opt, getter)().getDefault()
                self.assertAlmostEqual(v.val(), val, delta=F32)
                self.assertEqual(v.isConst(), const)
        opt = popart.Adam({"defaultLearningRate": (0.01, False), "defaultBeta2": (0.99, True),
                           "defaultEps": (1e-8, True), "maxWeightNorm": (5.0, True),
                           "lossScaling": (2.0, True)},
                          mode=popart.AdamMode.Lamb,
                          weight_decay_mode=popart.WeightDecayMode.L2Regularization,
                          accl1_type="FLOAT16", debugContext="adam")
        self.assertTrue(opt.isLamb())
        self.assertEqual(opt.getMode(), popart.AdamMode.Lamb)
        self.assertEqual(opt.getWeightDecayMode(), popart.WeightDecayMode.L2Regularization)
        self.assertAlmostEqual(opt.beta2s().getDefault().val(), 0.99, delta=F32)
        self.assertAlmostEqual(opt.maxWeightNorms().getDefault().val(), 5.0, delta=F32)
        self.assertEqual(opt.getLossScalingVal(), 2.0)
        if hasattr(popart, "DataType"):
            self.assertEqual(opt.getAccl1Type(), popart.DataType.FLOAT16)
            self.assertEqual(opt.getAccl2Type(), popart.DataType.FLOAT)

    def test_insert_specific_and_errors(self):
        opt = popart.Adam({}, popart.AdamMode.AdaMax)
        opt.insertSpecific("w", {"beta1": (0.8, True), "eps": (1e-4, True)})
        self.assertAlmostEqual(opt.beta1s().get("w").val(), 0.8, delta=F32)
        self.assertAlmostEqual(opt.epss().get("w").val(), 1e-4, delta=F32)
        self.assertAlmostEqual(opt.beta1s().get("v").val(), 0.9, delta=F32)
        with self.assertRaisesRegex(ValueError, r"'momentum'.*beta1"):
            opt.insertSpecific("w", {"momentum": (0.8, True)})
        with self.assertRaisesRegex(ValueError, r"'defaultMomentum'.*defaultBeta1"):
            popart.Adam({"defaultMomentum": (0.9, True)})
        with self.assertRaisesRegex(TypeError, "defaultBeta1"):
            popart.Adam({"defaultBeta1": (True, 0.9)})
        with self.assertRaisesRegex(ValueError, "accl2_type.*'HALFISH'"):
            popart.Adam({}, accl2_type="HALFISH")
        with self.assertRaisesRegex(Exception, "accl1Type|INT32"):
            popart.Adam({}, accl1_type="INT32")
        with self.assertRaisesRegex(Exception, "scaledOptimizerState"):
            popart.Adam({}, scaled_optimizer_state=True)
        with self.assertRaises(TypeError):
            popart.Adam({}, mode="Lamb")

    def test_enums(self):
        self.assertEqual(sorted(popart.AdamMode.__members__),
                         sorted(["Adam", "AdamNoBias", "Lamb", "LambNoBias", "AdaMax"]))
        self.assertEqual(sorted(popart.WeightDecayMode.__members__),
                         ["Decay", "L2Regularization"])
        self.assertEqual(sorted(popart.SGDAccumulatorAndMomentum.__members__),
                         ["Combined", "Separate"])
        self.assertEqual(popart.AdamMode.LambNoBias.name, "LambNoBias")


class AdaptiveTest(unittest.TestCase):
    def test_defaults_and_dict(self):
        opt = popart.Adaptive({})
        self.assertEqual(opt.getMode(), popart.AdaptiveMode.RMSProp)
        self.assertEqual(opt.getWeightDecayMode(), popart.WeightDecayMode.Decay)
        expected = {"learningRates": (0.01, False), "weightDecays": (0.0, True),
                    "alphas": (0.99, True), "momentums": (0.0, True), "epss": (1e-6, True)}
        for getter, (val, const) in expected.items():
            with self.subTest(getter=getter):
                v = getattr(opt, getter)().getDefault()
                self.assertAlmostEqual(v.val(), val, delta=F32)
                self.assertEqual(v.isConst(), const)
        self.assertFalse(opt.requiresMomentum())
        opt = popart.Adaptive({"defaultAlpha": (0.9, True), "defaultMomentum": (0.5, False)},
                              mode=popart.AdaptiveMode.CenteredRMSProp,
                              weight_decay_mode=popart.WeightDecayMode.L2Regularization,
                              clip_norm_settings=[popart.ClipNormSettings.clipAllWeights(1.0)])
        self.assertEqual(opt.getMode(), popart.AdaptiveMode.CenteredRMSProp)
        self.assertAlmostEqual(opt.alphas().getDefault().val(), 0.9, delta=F32)
        self.assertTrue(opt.requiresMomentum())
        self.assertEqual(len(opt.getClipNormSettings()), 1)
        opt.insertSpecific("w", {"alpha": (0.5, True)})
        self.assertAlmostEqual(opt.alphas().get("w").val(), 0.5, delta=F32)
        self.assertEqual(sorted(popart.AdaptiveMode.__members__),
                         sorted(["AdaGrad", "RMSProp", "CenteredRMSProp", "AdaDelta"]))

    def test_errors(self):
        with self.assertRaisesRegex(ValueError, r"'defaultBeta1'.*defaultAlpha"):
            popart.Adaptive({"defaultBeta1": (0.9, True)})
        with self.assertRaisesRegex(popart.popart_exception,
                                    "rmspropTFVariant parameter is only valid with the RMSProp"):
            popart.Adaptive({}, mode=popart.AdaptiveMode.AdaGrad, rmsprop_tf_variant=True)
        with self.assertRaisesRegex(TypeError, "rmsprop_tf_variant"):
            popart.Adaptive({}, rmsprop_tf_variant="yes")
        with self.assertRaisesRegex(ValueError, r"'beta1'.*alpha"):
            popart.Adaptive({}).insertSpecific("w", {"beta1": (0.9, True)})


if __name__ == "__main__":
    unittest.main()
