"""The package imports from the build tree, as PopART programs import popart."""
import unittest


class ImportTest(unittest.TestCase):
    def test_import_as_popart(self):
        import xtrain as popart
        self.assertTrue(popart.__doc__)
        self.assertTrue(hasattr(popart, "__version__"))


if __name__ == "__main__":
    unittest.main()
