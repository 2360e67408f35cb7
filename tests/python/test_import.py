"""The package imports from the build tree, as PopART programs import popart."""
import unittest


class ImportTest(unittest.TestCase):
    def test_import_as_popart(self):
        import xtrain as popart
        self.assertTrue(popart.__doc__)
        self.assertTrue(hasattr(popart, "__version__"))

    def test_version_functions(self):
        import xtrain as popart
        # The PopART API level (a 3-tuple of ints), xtrain's version in the string, a commit hash.
        self.assertEqual(popart.versionNumber(), (3, 4, 0))
        self.assertTrue(all(isinstance(v, int) for v in popart.versionNumber()))
        self.assertEqual(popart.versionString(), "3.4.0 (xtrain {})".format(popart.__version__))
        self.assertRegex(popart.versionString(), r"xtrain \d+\.\d+\.\d+\)$")
        self.assertRegex(popart.packageHash(), r"^([0-9a-f]{7,}|unknown)$")


if __name__ == "__main__":
    unittest.main()
