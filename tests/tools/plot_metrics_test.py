"""scripts/plot-metrics on hostile metrics files, a torn last line and a long run (ctest:
PlotScripts.plot_metrics_test).

Every malformed input ends with exit code 2 and one line on stderr naming the file, the line and
what was expected; never a traceback, never a hang, nothing written. A last line cut short by a
write that did not finish is skipped, with a note; a malformed line anywhere else is an error. Two
million steps are drawn within the test's time-out (the running mean was quadratic before).
"""
import os
import unittest

from plot_testing import PlotScriptTest, have_plotting

GOOD = '{"step":%d,"epoch":0.5,"loss":2.0,"lr":0.01,"samples_per_s":100,"wall_time":1.5}'


def lines(*texts):
    return "".join(t + "\n" for t in texts)


@unittest.skipUnless(have_plotting(), "no matplotlib/numpy for /usr/bin/python3")
class PlotMetrics(PlotScriptTest):
    SCRIPT = "plot-metrics"

    def arguments(self, path, out, extra):
        return [path, "-o", out] + list(extra)

    def drawn(self, path):
        r = self.run_script(path, "-o", self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("Traceback", r.stderr)
        self.assertPicture(self.out)
        os.unlink(self.out)
        return r

    def test_a_torn_last_line_is_skipped_with_a_note(self):
        whole = lines(GOOD % 1, GOOD % 2)
        for tail in ('{"step":3,"loss":1.', '{', '{"step":3,"lo', b'{"step":3,"x":"\xc3'):
            with self.subTest(tail=tail):
                data = whole.encode() + (tail if isinstance(tail, bytes) else tail.encode())
                r = self.drawn(self.write("torn.jsonl", data))
                self.assertIn("2 steps", r.stdout)
                self.assertIn("torn.jsonl:3: skipped the last line", r.stderr)
                self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        # A whole last line without its newline is a line like any other.
        r = self.drawn(self.write("nonl.jsonl", whole + GOOD % 3))
        self.assertIn("3 steps", r.stdout)
        self.assertEqual(r.stderr, "")

    def test_only_the_last_line_may_be_torn(self):
        self.refused(self.write("middle.jsonl", lines(GOOD % 1, '{"step":2,"loss":1.', GOOD % 3)),
                     "middle.jsonl:2: not JSON")
        # Ending with a newline, the last line was written whole: malformed, not torn.
        self.refused(self.write("end.jsonl", lines(GOOD % 1, '{"step":2,"loss":1.')),
                     "end.jsonl:2: not JSON")
        # Whole JSON without its newline but wrong: an error, not a torn line.
        self.refused(self.write("wrong.jsonl", lines(GOOD % 1) + '{"step":2,"loss":"x","samples_per_s":1}'),
                     "wrong.jsonl:2: the field 'loss' is 'x'")
        self.refused(self.write("only.jsonl", '{"step":1,"lo'), "only.jsonl", "holds no metrics",
                     "only line is cut short")

    def test_malformed_files(self):
        self.refused(os.path.join(self.tmp, "missing.jsonl"), "missing.jsonl", "cannot read")
        os.mkdir(os.path.join(self.tmp, "dir.jsonl"))
        self.refused(os.path.join(self.tmp, "dir.jsonl"), "dir.jsonl' is a directory")
        os.mkfifo(os.path.join(self.tmp, "fifo.jsonl"))
        self.refused(os.path.join(self.tmp, "fifo.jsonl"), "fifo.jsonl' is a FIFO")
        self.refused(self.write("empty.jsonl", ""), "holds no metrics")
        self.refused(self.write("junk.jsonl", bytes(range(256)) * 3 + b"\n"), "junk.jsonl:2: not UTF-8")
        self.refused(self.write("latin.jsonl", lines(GOOD % 1).encode() + b'{"step":2,"x":"\xe9"}\n'
                                + lines(GOOD % 3).encode()), "latin.jsonl:2: not UTF-8 text")
        self.refused(self.write("deep.jsonl", lines(GOOD % 1, "[" * 100000 + "]" * 100000)),
                     "deep.jsonl:2: nested too deeply")
        self.refused(self.write("deep2.jsonl", lines('{"a":' + "[" * 100000 + "]" * 100000 + "}")),
                     "deep2.jsonl:1: nested too deeply")

    def test_wrong_fields_name_the_line(self):
        base = {"step": "2", "loss": "1.0", "samples_per_s": "10"}
        cases = [
            (dict(step="1" * 400), "the field 'step' is an integer of 1326 bits"),
            (dict(step="-1"), "the field 'step' is -1, expected an integer"),
            (dict(step="1e3"), "the field 'step' is 1000.0"),
            (dict(step="null"), "the field 'step' is null"),
            (dict(step=None), "the field 'step' is missing"),
            (dict(step="true"), "the field 'step' is true"),
            (dict(loss="1" * 400), "the field 'loss' is an integer of 1326 bits, expected a number within"),
            (dict(loss="1e400"), "the field 'loss' is inf"),
            (dict(loss="-1e400"), "the field 'loss' is -inf"),
            (dict(loss="NaN"), "NaN is not JSON"),
            (dict(loss="Infinity"), "Infinity is not JSON"),
            (dict(loss="1" * 5000), "not a metrics line"),
            (dict(loss='{"a":1}'), "the field 'loss' is an object, expected a number"),
            (dict(loss="[1]"), "the field 'loss' is a list"),
            (dict(loss=None), "the field 'loss' is missing"),
            (dict(samples_per_s="-5"), "the field 'samples_per_s' is -5, expected a number of at least 0"),
            (dict(samples_per_s='"fast"'), "the field 'samples_per_s' is 'fast'"),
            (dict(val_loss='"low"'), "the field 'val_loss' is 'low'"),
            (dict(lr="[]"), "the field 'lr' is a list"),
            (dict(wall_time="1e999"), "the field 'wall_time' is inf"),
        ]
        for i, (change, message) in enumerate(cases):
            fields = dict(base, **change)
            text = "{" + ",".join('"%s":%s' % (k, v) for k, v in fields.items() if v is not None) + "}"
            with self.subTest(line=text[:80]):
                name = "case%d.jsonl" % i
                self.refused(self.write(name, lines(GOOD % 1, text, GOOD % 3)), name + ":2: ", message)
        for text, message in (("5", "5"), ('"x"', "'x'"), ("null", "null"), ("[]", "a list")):
            self.refused(self.write("top.jsonl", lines(GOOD % 1, text)),
                         "top.jsonl:2: expected a JSON object, got " + message)

    def test_odd_values_that_are_drawn(self):
        # null (a value that was not finite), unknown fields of any type, huge but finite values
        # (drawn as gaps), a step written twice (the last wins), a title matplotlib would parse.
        path = self.write("$odd$.jsonl", lines(
            '{"step":1,"loss":null,"samples_per_s":null,"future":{"a":[1]}}',
            '{"step":2,"loss":1e308,"samples_per_s":1e300,"val_loss":null}',
            '{"step":2,"loss":-3,"samples_per_s":0,"val_loss":-1e307}',
            '{"step":9007199254740992,"loss":1,"samples_per_s":1}'))
        self.assertIn("3 steps", self.drawn(path).stdout)

    def test_output(self):
        good = self.write("good.jsonl", lines(GOOD % 1, GOOD % 2))
        os.mkdir(os.path.join(self.tmp, "outdir"))
        self.refused(good, "outdir", "a directory", out=os.path.join(self.tmp, "outdir"))
        os.mkfifo(os.path.join(self.tmp, "out.fifo"))
        self.refused(good, "out.fifo", "not a regular file", out=os.path.join(self.tmp, "out.fifo"))
        self.refused(good, "no/such", out=os.path.join(self.tmp, "no", "such", "out.png"))
        r = self.run_script(good, "-o", "")
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("-o is empty", r.stderr)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["good.jsonl", "out.fifo", "outdir"])

    def test_two_million_steps_are_drawn(self):
        # No time is asserted: the test's own time-out (and ctest's) is the bound.
        path = os.path.join(self.tmp, "long.jsonl")
        with open(path, "w") as f:
            for start in range(1, 2000001, 100000):
                f.write("".join('{"step":%d,"epoch":0.1,"loss":%.5f,"lr":0.01,"step_time_s":0.0003,'
                                '"samples_per_s":%d,"reduction_share":0.01,"loss_scale":1,'
                                '"wall_time":1795559496.5}\n' % (s, 2.0 / s, 100000 + s % 977)
                                for s in range(start, start + 100000)))
        r = self.run_script(path, "-o", self.out, timeout=280)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2000000 steps", r.stdout)


if __name__ == "__main__":
    unittest.main()
