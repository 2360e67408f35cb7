"""xtrain.torch's optimizer.variable_attrs (docs/poptorch.md, "Optimizers"): PopTorch's constant and
variable optimizer attributes, isConstant, and markAsConstant / markAsVariable before compiling:
a marked-variable attribute changes between calls as PyTorch's does, a marked-constant one is
refused once compiled."""
import unittest

from python_testing import PrivatePool
from torch_testing import SKIP_REASON, torch
import torch_testing as tt

if torch is not None:
    import xtrain.torch as poptorch


@unittest.skipIf(torch is None, SKIP_REASON)
class VariableAttributes(PrivatePool, unittest.TestCase):

    def test_listing_rules(self):
        # The chapter's listing 4.16: given attributes (and lr) variable, the others constant.
        params = tt.make(tt.Mlp).parameters
        opt = poptorch.optim.SGD(params(), lr=0.01, momentum=0.0, use_combined_accum=False)
        self.assertFalse(opt.variable_attrs.isConstant("lr"))
        self.assertFalse(opt.variable_attrs.isConstant("momentum"))
        self.assertTrue(opt.variable_attrs.isConstant("loss_scaling"))
        opt = poptorch.optim.SGD(params(), lr=0.01, loss_scaling=2.0, use_combined_accum=False)
        self.assertTrue(opt.variable_attrs.isConstant("momentum"))
        self.assertFalse(opt.variable_attrs.isConstant("loss_scaling"))
        opt.variable_attrs.markAsVariable("momentum")
        opt.variable_attrs.markAsConstant("loss_scaling")
        self.assertFalse(opt.variable_attrs.isConstant("momentum"))
        self.assertTrue(opt.variable_attrs.isConstant("loss_scaling"))
        self.assertIsInstance(opt.variable_attrs, poptorch.optim.VariableAttributes)

    def test_marked_variable_changes_between_calls_as_in_pytorch(self):
        model = tt.make(tt.Mlp)
        reference = tt.twin(model)
        opt = poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        opt.variable_attrs.markAsVariable("weight_decay")  # not given: constant until marked
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
        wrapped = poptorch.trainingModel(model, optimizer=opt)
        for step, (x, y) in enumerate(tt.mlp_data(4, 4)):
            if step == 2:
                for o in (opt, ref_opt):
                    o.param_groups[0]["weight_decay"] = 0.05
            wrapped(x, y)
            tt.pytorch_step(reference, ref_opt, x, y)
        for k, v in model.state_dict().items():
            torch.testing.assert_close(v, reference.state_dict()[k], rtol=1e-4, atol=1e-6, msg=k)

    def test_unmarked_or_marked_constant_is_refused_once_compiled(self):
        for mark in (None, "markAsConstant"):
            with self.subTest(mark=mark):
                model = tt.make(tt.Mlp)
                if mark is None:  # weight_decay not given: constant
                    opt = poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
                    attr, value = "weight_decay", 0.05
                else:  # momentum given, so variable, but marked constant
                    opt = poptorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
                    opt.variable_attrs.markAsConstant("momentum")
                    attr, value = "momentum", 0.5
                wrapped = poptorch.trainingModel(model, optimizer=opt)
                wrapped(*tt.mlp_data(1, 4)[0])
                opt.param_groups[0][attr] = value
                with self.assertRaisesRegex(poptorch.OptimizerError,
                                            r"'%s'.*constant.*markAsVariable" % attr):
                    wrapped(*tt.mlp_data(1, 4)[0])

    def test_marks_after_compiling_are_refused(self):
        model = tt.make(tt.Mlp)
        opt = poptorch.optim.Adam(model.parameters(), lr=0.01)
        wrapped = poptorch.trainingModel(model, optimizer=opt)
        wrapped(*tt.mlp_data(1, 4)[0])
        opt.variable_attrs.markAsVariable("eps")
        opt.param_groups[0]["lr"] = 0.005
        with self.assertRaisesRegex(poptorch.OptimizerError,
                                    r"variable_attrs changed after the model was compiled.*eps"):
            wrapped(*tt.mlp_data(1, 4)[0])

    def test_bad_marks(self):
        opt = poptorch.optim.AdamW(tt.make(tt.Mlp).parameters(), lr=0.01)
        with self.assertRaisesRegex(ValueError, "unknown attribute 'momentum'.*betas"):
            opt.variable_attrs.markAsVariable("momentum")
        with self.assertRaisesRegex(ValueError, "learning rate is always variable"):
            opt.variable_attrs.markAsConstant("lr")


if __name__ == "__main__":
    unittest.main()
